// net.ifname: its pass, warn, fail and error cases (preflight/checks/net_ifname.cpp).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/unit/common/temp_dir.h"
#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("net.ifname: NCCL's default picks eno1 over docker0 and lo, addresses from procfs") {
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

TEST_CASE("net.ifname: unreadable network files come from the facts, once each, in listing order") {
  // A real tree: an entry that leads nowhere is a dangling link, which only a disk can hold.
  const std::string root = sl::testing::TempDir("ifname");
  REQUIRE_FALSE(root.empty());
  sl::testing::DirCleanup cleanup{root};
  auto put = [&](const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root + path).parent_path());
    std::ofstream(root + path) << text;
  };
  put("/sys/class/net/eno1/operstate", "up\n");
  put("/sys/class/net/eno1/mtu", "jumbo\n");
  put("/sys/class/net/eno1/ifindex", "2\n");
  put("/sys/class/net/eno1/flags", "0x1003\n");
  put("/sys/class/net/lo/operstate", "unknown\n");
  put("/sys/class/net/lo/mtu", "65536\n");
  put("/sys/class/net/lo/ifindex", "1\n");
  std::filesystem::create_symlink("../../devices/virtual/net/bad0", root + "/sys/class/net/bad0");
  // A RoCE port on eno1 reads the same MTU file: that is ib.mtu's finding, not a second one here.
  const std::string p = "/sys/class/infiniband/mlx5_0/ports/1";
  put(p + "/state", "4: ACTIVE\n");
  put(p + "/phys_state", "5: LinkUp\n");
  put(p + "/rate", "200 Gb/sec (4X HDR)\n");
  put(p + "/link_layer", "Ethernet\n");
  put(p + "/gids/0", "0000:0000:0000:0000:0000:ffff:0a00:0105\n");
  put(p + "/gid_attrs/types/0", "RoCE v2\n");
  put(p + "/gid_attrs/ndevs/0", "eno1\n");
  RootedFileReader fs(root);
  auto r = RunCheck(fs, CheckNetIfname);
  std::vector<Finding> unread;
  for (const auto& f : r.findings) {
    if (f.code == "net.ifname/file_unreadable") unread.push_back(f);
  }
  REQUIRE(unread.size() == 2);
  CHECK(Has(unread[0].message, "/sys/class/net/bad0: cannot read the interface"));
  CHECK(Has(unread[1].message, "/sys/class/net/eno1/mtu: MTU is not a number: \"jumbo\""));
  // The facts behind them: each file's node path, raw text and error.
  const NetInterface* eno1 = nullptr;
  for (const auto& i : r.facts.interfaces) {
    if (i.name == "eno1") eno1 = &i;
  }
  REQUIRE(eno1);
  CHECK(eno1->sysfs.operstate.path == "/sys/class/net/eno1/operstate");
  CHECK(eno1->sysfs.operstate.raw == "up");
  CHECK_FALSE(eno1->sysfs.mtu.ok());
  CHECK(eno1->sysfs.mtu.raw == "jumbo");
  CHECK(*eno1->sysfs.flags == 0x1003u);
  CHECK(r.facts.net.unreadable_entries.count("bad0") == 1);
  CHECK(*r.facts.net.class_net == std::vector<std::string>{"bad0", "eno1", "lo"});
}

TEST_CASE("net.ifname quotes the interface's fact paths as evidence") {
  auto r = RunOnFixture("memlock-64k", CheckNetIfname);
  REQUIRE(r.findings.size() == 1);
  const Finding& f = r.findings[0];
  bool operstate = false;
  for (const auto& e : f.evidence) {
    operstate = operstate || (e.source == "/sys/class/net/eno1/operstate" && e.value == "up");
  }
  CHECK(operstate);
}
