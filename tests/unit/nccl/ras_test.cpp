// nccl/ras.h: the one parser of NCCL_RAS_ADDR and NCCL's RAS port.
#include "nccl/ras.h"

#include <catch2/catch.hpp>

using namespace sl;
using namespace sl::nccl;

TEST_CASE("NCCL_RAS_ADDR unset or empty is NCCL's default 127.0.0.1:28028") {
  auto a = ParseRasAddress("");
  REQUIRE(a.ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 28028);
  CHECK(RasAddressFrom({})->port == kRasPort);
}

TEST_CASE("NCCL_RAS_ADDR parts left out keep the defaults and are reported as not named") {
  RasNamed named;
  auto host_only = ParseRasAddress("10.0.0.7", &named);
  REQUIRE(host_only.ok());
  CHECK(host_only->host == "10.0.0.7");
  CHECK(host_only->port == 28028);
  CHECK(named.host);
  CHECK_FALSE(named.port);
  auto port_only = ParseRasAddress(":28100", &named);
  REQUIRE(port_only.ok());
  CHECK(port_only->host == "127.0.0.1");
  CHECK(port_only->port == 28100);
  CHECK_FALSE(named.host);
  CHECK(named.port);
}

TEST_CASE("NCCL_RAS_ADDR takes a bracketed IPv6 host") {
  auto a = ParseRasAddress("[fd00::5]:29000");
  REQUIRE(a.ok());
  CHECK(a->host == "fd00::5");
  CHECK(a->port == 29000);
  CHECK(FormatRasAddress(a->host, a->port) == "[fd00::5]:29000");
}

TEST_CASE("a bad NCCL_RAS_ADDR is an error naming the value and the fix") {
  auto no_close = ParseRasAddress("[::1:99");
  REQUIRE_FALSE(no_close.ok());
  CHECK(no_close.error().message.find("'[::1:99'") != std::string::npos);
  auto bad_port = ParseRasAddress("h:70000");
  REQUIRE_FALSE(bad_port.ok());
  CHECK(bad_port.error().fix.find("1..65535") != std::string::npos);
}

TEST_CASE("the RAS address is read from the job's environment") {
  Environment env{{"NCCL_RAS_ADDR", "127.0.0.1:28555"}};
  auto a = RasAddressFrom(env);
  REQUIRE(a.ok());
  CHECK(a->port == 28555);
}
