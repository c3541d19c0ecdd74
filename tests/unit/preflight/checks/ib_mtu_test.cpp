// ib.mtu: its pass, warn, fail and error cases (preflight/checks/ib_mtu.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/ib_check_fixture.h"

namespace {
// One RoCE port on ens3np0 whose MTU file holds `mtu_text`.
Node OnRoceWithMtu(const std::string& mtu_text) {
  return OnTree(IbSysroot()
                    .RocePort("mlx5_0", "ens3np0", 9000,
                              {{3, "0000:0000:0000:0000:0000:ffff:0b00:0048", "RoCE v2"}})
                    .File("/sys/class/net/ens3np0/mtu", mtu_text));
}
}  // namespace

TEST_CASE("ib.mtu passes RoCE ports on jumbo netdevs") {
  Node n = Fixture("roce-jumbo");
  auto fs = n.Run(CheckIbMtu);
  REQUIRE(fs.size() == 2);
  CHECK(Count(fs, Outcome::kPass) == 2);
  const Finding* f = For(fs, "mlx5_0:1");
  CHECK(HasEvidence(*f, "/sys/class/net/ens3np0/mtu", "9000"));
  CHECK(Contains(f->message, "4096"));
}

TEST_CASE("ib.mtu warns about RoCE on MTU 1500 with the ip link fix") {
  Node n = Fixture("roce-mtu1500");
  auto fs = n.Run(CheckIbMtu);
  const Finding* f = For(fs, "mlx5_0:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kWarn);
  CHECK(Contains(f->message, "1024"));
  CHECK(Contains(f->next_step, "ip link set ens3np0 mtu 9000"));
  CHECK(Contains(f->next_step, "switch"));
  CHECK(For(fs, "node") == nullptr);  // both ports agree
}

TEST_CASE("ib.mtu honours thresholds.expected_mtu") {
  Node n = Fixture("roce-mtu1500");
  n.th.expected_mtu = 1500;
  CHECK(Count(n.Run(CheckIbMtu), Outcome::kPass) == 2);
  Node j = Fixture("roce-jumbo");
  j.th.expected_mtu = 1500;
  CHECK(Count(j.Run(CheckIbMtu), Outcome::kFail) == 2);
}

TEST_CASE("ib.mtu fails when ports NCCL uses disagree") {
  Node n = OnTree(IbSysroot()
                      .RocePort("mlx5_0", "ens3np0", 9000,
                                {{3, "0000:0000:0000:0000:0000:ffff:0b00:0048", "RoCE v2"}})
                      .RocePort("mlx5_1", "ens2np0", 1500,
                                {{3, "0000:0000:0000:0000:0000:ffff:0b00:0049", "RoCE v2"}}));
  const Finding* node = n.FindingFor(CheckIbMtu, "node");
  CHECK(node->outcome == Outcome::kFail);
  CHECK(Contains(node->message, "mlx5_0:1 4096"));
  CHECK(Contains(node->message, "mlx5_1:1 1024"));
  SECTION("unless the odd port is excluded") {
    n.env["NCCL_IB_HCA"] = "=mlx5_0";
    CHECK(For(n.Run(CheckIbMtu), "node") == nullptr);
  }
}

TEST_CASE("ib.mtu never guesses the InfiniBand active MTU") {
  Node n = Fixture("ib-healthy");
  auto fs = n.Run(CheckIbMtu);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kSkip);
  CHECK(fs[0].entity == "node");
  CHECK(Contains(fs[0].message, "not checkable for mlx5_0:1, mlx5_1:1"));
  CHECK(Contains(fs[0].message, "mlx5_7:1"));
}

TEST_CASE("ib.mtu judges the InfiniBand active MTU when verbs reported it") {
  Node n = Fixture("ib-healthy");
  n.facts = GatherNodeFacts(*n.fs);
  for (auto& p : n.facts.ib_ports) p.active_mtu = 4096;
  n.facts.ib_ports[2].active_mtu = 2048;
  auto fs = n.RunOnFacts(CheckIbMtu);
  CHECK(For(fs, "mlx5_0:1")->outcome == Outcome::kPass);
  const Finding* low = For(fs, "mlx5_2:1");
  CHECK(low->outcome == Outcome::kWarn);
  CHECK(Contains(low->next_step, "partitions.conf"));
  REQUIRE(For(fs, "node"));
  CHECK(For(fs, "node")->outcome == Outcome::kFail);
}

TEST_CASE("ib.mtu: an unreadable netdev MTU is an error") {
  Node n = OnRoceWithMtu("\x01\x02");
  auto fs = n.Run(CheckIbMtu);
  CHECK(For(fs, "mlx5_0:1")->outcome == Outcome::kError);
  CHECK(Contains(For(fs, "mlx5_0:1")->message, "/sys/class/net/ens3np0/mtu"));
}

TEST_CASE("ib.mtu: a garbage netdev MTU is an error naming the port's MTU fact") {
  Node n = OnRoceWithMtu("jumbo\n");
  auto fs = n.Run(CheckIbMtu);
  const Fact<int>& mtu = n.facts.ib_ports[0].sysfs.netdev_mtu;
  CHECK(mtu.path == "/sys/class/net/ens3np0/mtu");
  CHECK(mtu.raw == "jumbo");
  CHECK_FALSE(mtu.unreadable);
  const Finding* f = For(fs, "mlx5_0:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kError);
  CHECK(HasEvidence(*f, mtu.path, "unreadable: " + mtu.error.where + ": " + mtu.error.message));
}
