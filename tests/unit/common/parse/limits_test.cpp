// Parser of /proc/self/limits (common/parse/limits.h): literal kernel text in, values out; garbage
// never crashes.
#include "common/parse/limits.h"

#include <catch2/catch.hpp>
#include <string>

using namespace sl;

namespace {

// /proc/self/limits exactly as fs/proc/base.c prints it (captured from a Linux 6.x node).
const char* kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max stack size            8388608              unlimited            bytes     \n"
    "Max open files            1024                 524288               files     \n"
    "Max locked memory         65536                65536                bytes     \n"
    "Max nice priority         0                    0                    \n"
    "Max realtime timeout      unlimited            unlimited            us        \n";

}  // namespace

TEST_CASE("limits rows are parsed from the right, units optional") {
  auto rows = ParseProcLimits(kLimits);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 6);
  CHECK((*rows)[0].name == "Max cpu time");
  CHECK((*rows)[0].soft == kUnlimited);
  CHECK((*rows)[2].soft == 1024);
  CHECK((*rows)[2].hard == 524288);
  CHECK((*rows)[2].units == "files");
  CHECK((*rows)[4].name == "Max nice priority");
  CHECK((*rows)[4].units.empty());
  auto memlock = FindLimit(kLimits, "Max locked memory");
  REQUIRE(memlock.ok());
  CHECK(memlock->soft == 65536);
  CHECK(memlock->raw.find("65536") != std::string::npos);
}

TEST_CASE("garbage limits give errors naming the line, never values") {
  CHECK_FALSE(ParseProcLimits("").ok());
  CHECK_FALSE(ParseProcLimits("hello world\n").ok());
  auto bad = FindLimit("Limit Soft Limit Hard Limit Units\nMax locked memory   lots  \x01\n",
                       "Max locked memory");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().where == "line 2");
  CHECK_FALSE(FindLimit(kLimits, "Max bogus thing").ok());
  // A bad unrelated row does not hide a good one.
  auto ok = FindLimit(std::string(kLimits) + "Max junk   x y z\n", "Max open files");
  CHECK(ok.ok());
  CHECK_FALSE(ParseProcLimits("Limit Soft Limit\nMax x 99999999999999999999999 1 bytes\n").ok());
}
