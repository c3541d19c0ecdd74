// Parser of sysctl values (common/parse/sysctl.h): literal kernel text in, values out; garbage
// never crashes.
#include "common/parse/sysctl.h"

#include <catch2/catch.hpp>
#include <string>

using namespace sl;

TEST_CASE("sysctl values: tab separated vectors, garbage is an error") {
  CHECK(ParseSysctlValues("4096\t131072\t6291456\n", 3).value() ==
        std::vector<std::uint64_t>{4096, 131072, 6291456});
  CHECK(ParseSysctlValues("212992\n", 1).value() == std::vector<std::uint64_t>{212992});
  CHECK_FALSE(ParseSysctlValues("not-a-number\n", 1).ok());
  CHECK_FALSE(ParseSysctlValues("4096\n", 3).ok());
  CHECK_FALSE(ParseSysctlValues("", 0).ok());
}
