// net.ifname: its pass, warn, fail and error cases (preflight/checks/net_ifname.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("net.ifname: NCCL's default picks eno1 over docker0 and lo; addresses from procfs") {
  auto r = RunOnFixture("memlock-64k", CheckNetIfname);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].entity == "eno1");
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "10.40.2.17"));
  bool lo = false;
  for (const auto& i : r.facts.interfaces) {
    if (i.name == "lo") lo = std::count(i.addresses.begin(), i.addresses.end(), "127.0.0.1") == 1;
  }
  CHECK(lo);
}

TEST_CASE("net.ifname fails when NCCL_SOCKET_IFNAME matches nothing, naming the interfaces") {
  auto r = RunOnFixture("memlock-64k", CheckNetIfname, {{"NCCL_SOCKET_IFNAME", "eth"}});
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kFail);
  CHECK(r.findings[0].entity == "NCCL_SOCKET_IFNAME");
  CHECK(Has(r.findings[0].message, "eno1"));
  CHECK(Has(r.findings[0].message, "docker0"));
  // "^" excludes: everything but eno1 leaves docker0 (down) with an address.
  auto ex = RunOnFixture("memlock-64k", CheckNetIfname, {{"NCCL_SOCKET_IFNAME", "^eno,lo"}});
  CHECK(ex.findings.at(0).entity == "docker0");
  CHECK(ex.findings.at(0).outcome == Outcome::kFail);  // docker0 is down
}

TEST_CASE("net.ifname fails when the chosen interface is down and prefers ib*") {
  MemFileReader fs;
  auto add = [&](const std::string& n, const std::string& state, int idx, const char* flags) {
    fs.AddFile("/sys/class/net/" + n + "/operstate", state + "\n");
    fs.AddFile("/sys/class/net/" + n + "/mtu", "1500\n");
    fs.AddFile("/sys/class/net/" + n + "/ifindex", std::to_string(idx) + "\n");
    fs.AddFile("/sys/class/net/" + n + "/flags", std::string(flags) + "\n");
  };
  add("lo", "unknown", 1, "0x9");
  add("eno1", "up", 2, "0x1003");
  add("ib0", "down", 3, "0x1003");
  fs.AddFile("/proc/net/fib_trie",
             "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.0.0.5\n        /32 host LOCAL\n"
             "     |-- 192.168.7.5\n        /32 host LOCAL\n");
  fs.AddFile("/proc/net/route",
             "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n"
             "eno1\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
             "ib0\t0007A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
  auto r = RunCheck(fs, CheckNetIfname);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].entity == "ib0");
  CHECK(r.findings[0].outcome == Outcome::kFail);
  CHECK(Has(r.findings[0].message, "192.168.7.5"));
  CHECK(Has(r.findings[0].next_step, "ip link set ib0 up"));
  auto pinned = RunCheck(fs, CheckNetIfname, {{"NCCL_SOCKET_IFNAME", "=eno1"}});
  CHECK(pinned.findings.at(0).entity == "eno1");
  CHECK(pinned.findings.at(0).outcome == Outcome::kPass);
}
