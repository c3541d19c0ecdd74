#include "warmup/compare.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/unit/common/test_facts.h"

using sl::Finding;
using sl::Outcome;
using sl::warmup::CompareBandwidth;
using sl::warmup::CompareNodes;
using sl::warmup::NodeReport;

namespace {

sl::IbPort RocePort(const std::string& dev, int mtu, double rate = 400, bool v2_ipv4 = true) {
  sl::IbPort p;
  p.device = dev;
  p.port = 1;
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  p.link_layer = "Ethernet";
  p.rate_gbps = rate;
  p.netdev = "ens" + dev.substr(5);
  p.netdev_mtu = mtu;
  p.gids.push_back({0, "fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1", p.netdev, ""});
  p.gids.push_back({1, "fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2", p.netdev, ""});
  if (v2_ipv4) {
    p.gids.push_back(
        {2, "0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1", p.netdev, "10.0.0.1"});
    p.gids.push_back(
        {3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", p.netdev, "10.0.0.1"});
  }
  return p;
}

NodeReport Node(int rank, const std::string& name) {
  NodeReport r;
  r.node_rank = rank;
  r.node_name = name;
  r.facts.hostname = name;
  r.facts.ib_ports = {RocePort("mlx5_0", 9000), RocePort("mlx5_1", 9000)};
  r.facts.gpus = {{"0000:18:00.0", "0x2335", "NVIDIA H200"},
                  {"0000:2a:00.0", "0x2335", "NVIDIA H200"}};
  r.facts.nvidia_driver = "580.159.04";
  r.facts.host.memlock = sl::testing::Limit(sl::kUnlimited);
  r.facts.host.nofile = sl::testing::Limit(1048576);
  r.torch_version = "2.11.0";
  r.nccl_version = "2.28.9";
  r.env = {{"NCCL_IB_HCA", "=mlx5_0,mlx5_1"}, {"NCCL_DEBUG", "WARN"}};
  return r;
}

std::vector<Finding> Fails(const std::vector<Finding>& fs, const std::string& id) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.check_id == id) out.push_back(f);
  return out;
}

}  // namespace

TEST_CASE("identical nodes give one pass finding") {
  auto fs = CompareNodes({Node(0, "a"), Node(1, "b"), Node(2, "c")});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kPass);
  CHECK(fs[0].check_id == "warmup.consistency");
}

TEST_CASE("a single node is a skip, not a pass") {
  auto fs = CompareNodes({Node(0, "a")});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kSkip);
}

TEST_CASE("an MTU tie between two nodes names the lower-MTU node") {
  auto b = Node(1, "roce-b");
  b.facts.ib_ports[0].netdev_mtu = 1500;
  auto fs = Fails(CompareNodes({Node(0, "roce-a"), b}), "warmup.consistency.mtu");
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kFail);
  CHECK(fs[0].entity == "node 1 (roce-b)");
  CHECK(fs[0].message.find("1500") != std::string::npos);
  CHECK(fs[0].message.find("9000") != std::string::npos);
  CHECK(fs[0].message.find("mlx5_0:1") != std::string::npos);
  // Same when the odd node is node 0: the lower value is the degraded one.
  auto a = Node(0, "roce-a");
  a.facts.ib_ports[0].netdev_mtu = 1500;
  auto fs2 = Fails(CompareNodes({a, Node(1, "roce-b")}), "warmup.consistency.mtu");
  REQUIRE(fs2.size() == 1);
  CHECK(fs2[0].entity == "node 0 (roce-a)");
}

TEST_CASE("the majority wins over the better value") {
  auto a = Node(0, "a"), b = Node(1, "b"), c = Node(2, "c");
  a.facts.ib_ports[1].netdev_mtu = 4200;
  b.facts.ib_ports[1].netdev_mtu = 4200;
  auto fs = Fails(CompareNodes({a, b, c}), "warmup.consistency.mtu");
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].entity == "node 2 (c)");
  CHECK(fs[0].message.find("2 other nodes") != std::string::npos);
}

TEST_CASE("a node with fewer HCAs is named") {
  auto b = Node(1, "b");
  b.facts.ib_ports.pop_back();
  auto fs = Fails(CompareNodes({Node(0, "a"), b}), "warmup.consistency.hca_count");
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kFail);
  CHECK(fs[0].entity == "node 1 (b)");
  CHECK(fs[0].message.find("is 1 on node 1 (b) but 2") != std::string::npos);
}

TEST_CASE("different NCCL versions fail and name the odd node, torch differences warn") {
  auto c = Node(2, "c");
  c.nccl_version = "2.21.5";
  c.torch_version = "2.5.1";
  auto all = CompareNodes({Node(0, "a"), Node(1, "b"), c});
  auto nccl = Fails(all, "warmup.consistency.nccl_version");
  REQUIRE(nccl.size() == 1);
  CHECK(nccl[0].outcome == Outcome::kFail);
  CHECK(nccl[0].entity == "node 2 (c)");
  auto torch = Fails(all, "warmup.consistency.torch_version");
  REQUIRE(torch.size() == 1);
  CHECK(torch[0].outcome == Outcome::kWarn);
}

TEST_CASE("GPU model, count and driver differences are reported") {
  auto b = Node(1, "b"), c = Node(2, "c");
  b.facts.gpus.pop_back();
  c.facts.nvidia_driver = "570.1";
  c.facts.gpus[0].model = "NVIDIA H100";
  c.facts.gpus[1].model = "NVIDIA H100";
  auto all = CompareNodes({Node(0, "a"), b, c});
  CHECK(Fails(all, "warmup.consistency.gpu_count").at(0).entity == "node 1 (b)");
  CHECK(Fails(all, "warmup.consistency.gpu_model").at(0).entity == "node 2 (c)");
  CHECK(Fails(all, "warmup.consistency.cuda_driver").at(0).entity == "node 2 (c)");
}

TEST_CASE("link layer and rate differences per port are reported") {
  auto b = Node(1, "b");
  b.facts.ib_ports[0].link_layer = "InfiniBand";
  b.facts.ib_ports[1].rate_gbps = 200;
  auto all = CompareNodes({Node(0, "a"), b, Node(2, "c")});
  auto ll = Fails(all, "warmup.consistency.link_layer");
  REQUIRE(ll.size() == 1);
  CHECK(ll[0].message.find("mlx5_0:1") != std::string::npos);
  auto rate = Fails(all, "warmup.consistency.rate");
  REQUIRE(rate.size() == 1);
  CHECK(rate[0].outcome == Outcome::kWarn);
  CHECK(rate[0].message.find("200") != std::string::npos);
}

TEST_CASE("a node whose GID table makes NCCL pick another index is named") {
  auto b = Node(1, "b");
  b.facts.ib_ports[0] = RocePort("mlx5_0", 9000, 400, /*v2_ipv4=*/false);
  auto fs = Fails(CompareNodes({Node(0, "a"), b, Node(2, "c")}), "warmup.consistency.gid");
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].entity == "node 1 (b)");
  CHECK(fs[0].outcome == Outcome::kFail);
}

TEST_CASE("an explicit NCCL_IB_GID_INDEX is the index compared") {
  auto a = Node(0, "a"), b = Node(1, "b");
  a.env["NCCL_IB_GID_INDEX"] = "3";
  b.env["NCCL_IB_GID_INDEX"] = "1";
  auto all = CompareNodes({a, b});
  auto gid = Fails(all, "warmup.consistency.gid");
  REQUIRE_FALSE(gid.empty());
  CHECK(gid[0].message.find("RoCE v2") != std::string::npos);
}

TEST_CASE("limits: lower memlock and nofile are named, unlimited counts as highest") {
  auto b = Node(1, "b");
  b.facts.host.memlock = sl::testing::Limit(65536);
  b.facts.host.nofile = sl::testing::Limit(1024);
  auto all = CompareNodes({Node(0, "a"), b});
  auto m = Fails(all, "warmup.consistency.memlock");
  REQUIRE(m.size() == 1);
  CHECK(m[0].entity == "node 1 (b)");
  CHECK(m[0].message.find("unlimited") != std::string::npos);
  CHECK(Fails(all, "warmup.consistency.nofile").at(0).entity == "node 1 (b)");
}

TEST_CASE(
    "environment differences: unset counts, must-match variables fail, per-rank ones ignored") {
  auto a = Node(0, "a"), b = Node(1, "b"), c = Node(2, "c");
  c.env["NCCL_IB_DISABLE"] = "1";
  c.env["NCCL_DEBUG"] = "INFO";
  a.env["NCCL_DEBUG_FILE"] = "/tmp/a.%h";
  b.env["NCCL_DEBUG_FILE"] = "/tmp/b.%h";
  a.env["TORCH_LOCAL_RANK_X"] = "0";
  b.env["TORCH_LOCAL_RANK_X"] = "1";
  a.env["OTHER"] = "1";
  auto env = Fails(CompareNodes({a, b, c}), "warmup.consistency.env");
  REQUIRE(env.size() == 2);
  for (const auto& f : env) {
    CHECK(f.entity == "node 2 (c)");
    if (f.message.find("NCCL_IB_DISABLE") != std::string::npos) {
      CHECK(f.outcome == Outcome::kFail);
      CHECK(f.message.find("(unset)") != std::string::npos);
    } else {
      CHECK(f.message.find("NCCL_DEBUG") != std::string::npos);
      CHECK(f.outcome == Outcome::kWarn);
    }
  }
}

TEST_CASE("a tie on an unordered value names the side without node 0") {
  auto b = Node(1, "b");
  b.env["NCCL_ALGO"] = "Ring";
  auto env = Fails(CompareNodes({Node(0, "a"), b}), "warmup.consistency.env");
  REQUIRE(env.size() == 1);
  CHECK(env[0].entity == "node 1 (b)");
}

TEST_CASE("node reports survive a JSON round trip") {
  auto a = Node(3, "x");
  nlohmann::json j = a;
  auto back = j.get<NodeReport>();
  CHECK(back.node_rank == 3);
  CHECK(back.node_name == "x");
  CHECK(back.facts.ib_ports.size() == 2);
  CHECK(back.facts.MemlockSoft() == sl::kUnlimited);
  CHECK(back.facts.NofileSoft() == 1048576);
  CHECK(back.env.at("NCCL_IB_HCA") == "=mlx5_0,mlx5_1");
  CHECK(back.nccl_version == "2.28.9");
}

TEST_CASE("a markedly slower node is a bandwidth warn with the figures") {
  auto fs =
      CompareBandwidth({{0, "node 0 (a)", 20.0}, {1, "node 1 (b)", 21.0}, {2, "node 2 (c)", 4.0}});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kWarn);
  CHECK(fs[0].entity == "node 2 (c)");
  CHECK(fs[0].message.find("4.00 GB/s") != std::string::npos);
  CHECK(fs[0].message.find("20.50") != std::string::npos);
}

TEST_CASE("similar bandwidth on all nodes passes") {
  auto fs = CompareBandwidth({{0, "node 0", 20.0}, {1, "node 1", 15.0}});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kPass);
}

TEST_CASE("the comparisons table has 14 rows with unique warmup ids and summaries") {
  std::set<std::string> ids;
  for (const auto& c : sl::warmup::Comparisons()) {
    CHECK(std::string(c.id).rfind("warmup.", 0) == 0);
    CHECK(std::string(c.summary).size() > 10);
    CHECK(c.run != nullptr);
    ids.insert(c.id);
  }
  CHECK(sl::warmup::Comparisons().size() == 14);
  CHECK(ids.size() == 14);
}

TEST_CASE("every finding of a mismatch carries the id of a table row") {
  auto b = Node(1, "b");
  b.facts.ib_ports = {RocePort("mlx5_0", 1500, 200)};
  b.facts.gpus.pop_back();
  b.facts.nvidia_driver = "570.0";
  b.facts.host.nofile = sl::testing::Limit(1024);
  b.nccl_version = "2.21.5";
  b.env["NCCL_ALGO"] = "Ring";
  auto fs = CompareNodes({Node(0, "a"), b});
  std::set<std::string> ids;
  for (const auto& c : sl::warmup::Comparisons()) ids.insert(c.id);
  REQUIRE(fs.size() >= 7);
  for (const auto& f : fs) CHECK(ids.count(f.check_id) == 1);
}

TEST_CASE("a waived comparison's mismatch is marked waived and no longer fails") {
  auto b = Node(1, "b");
  b.facts.ib_ports = {RocePort("mlx5_0", 1500), RocePort("mlx5_1", 1500)};
  auto plain = CompareNodes({Node(0, "a"), b});
  CHECK(sl::Worst(plain) == Outcome::kFail);
  auto fs = CompareNodes({Node(0, "a"), b}, {"warmup.consistency.mtu"});
  auto mtu = Fails(fs, "warmup.consistency.mtu");
  REQUIRE(mtu.size() == 2);
  for (const auto& f : mtu) {
    CHECK(f.waived);
    CHECK(f.outcome == Outcome::kFail);  // the decision stays visible, it just does not count
  }
  CHECK(sl::Worst(fs) == Outcome::kPass);
}

TEST_CASE("a waiver names only its comparison, a group prefix waives them all") {
  auto b = Node(1, "b");
  b.facts.ib_ports = {RocePort("mlx5_0", 1500), RocePort("mlx5_1", 1500)};
  b.nccl_version = "2.21.5";
  auto fs = CompareNodes({Node(0, "a"), b}, {"warmup.consistency.mtu"});
  auto nccl = Fails(fs, "warmup.consistency.nccl_version");
  REQUIRE(nccl.size() == 1);
  CHECK_FALSE(nccl[0].waived);
  CHECK(sl::Worst(fs) == Outcome::kFail);
  CHECK(sl::Worst(CompareNodes({Node(0, "a"), b}, {"warmup.consistency"})) == Outcome::kPass);
  CHECK(sl::Worst(CompareNodes({Node(0, "a"), b}, {"warmup"})) == Outcome::kPass);
}

namespace {

NodeReport WithEndpoint(NodeReport r, const std::string& host, int port,
                        std::vector<std::string> addrs) {
  r.rendezvous = {host, port, "MASTER_ADDR + MASTER_PORT", std::move(addrs)};
  return r;
}

}  // namespace

TEST_CASE("a node giving torchrun another rendezvous endpoint than node 0 is named with both") {
  auto fs = CompareNodes({WithEndpoint(Node(0, "a"), "gpu01", 29500, {"10.0.0.1"}),
                          WithEndpoint(Node(1, "b"), "gpu02", 29500, {"10.0.0.2"}),
                          WithEndpoint(Node(2, "c"), "10.0.0.1", 29500, {"10.0.0.1"})});
  auto bad = Fails(fs, "warmup.consistency.rendezvous");
  REQUIRE(bad.size() == 1);  // node 2 wrote node 0's address: the same endpoint
  CHECK(bad[0].outcome == Outcome::kFail);
  CHECK(bad[0].entity == "node 1 (b)");
  CHECK_THAT(bad[0].message, Catch::Contains("node 1 (b) gives torchrun the rendezvous endpoint "
                                             "'gpu02:29500'") &&
                                 Catch::Contains("node 0 (a) gives 'gpu01:29500'"));
  CHECK_THAT(bad[0].next_step, Catch::Contains("compute it once"));
}

TEST_CASE("the same name resolving elsewhere on one node, or another port, is named") {
  auto fs = CompareNodes({WithEndpoint(Node(0, "a"), "head", 29500, {"10.0.0.1"}),
                          WithEndpoint(Node(1, "b"), "head", 29500, {"10.9.9.9"}),
                          WithEndpoint(Node(2, "c"), "head", 29501, {"10.0.0.1"})});
  auto bad = Fails(fs, "warmup.consistency.rendezvous");
  REQUIRE(bad.size() == 2);
  CHECK_THAT(bad[0].message, Catch::Contains("resolves elsewhere on node 1 (b)"));
  CHECK_THAT(bad[0].next_step, Catch::Contains("make 'head' resolve to node 0's address"));
  CHECK(bad[1].entity == "node 2 (c)");
  CHECK_THAT(bad[1].message, Catch::Contains("'head:29501'"));
}

TEST_CASE("a node that gives torchrun no endpoint where node 0 gives one is named") {
  NodeReport none = Node(1, "b");
  none.rendezvous.source = "none";
  auto bad = Fails(CompareNodes({WithEndpoint(Node(0, "a"), "gpu01", 29500, {"10.0.0.1"}), none}),
                   "warmup.consistency.rendezvous");
  REQUIRE(bad.size() == 1);
  CHECK_THAT(bad[0].message, Catch::Contains("no endpoint"));
}

TEST_CASE("loopback fails across hosts and passes when every node runs on one host") {
  auto a = WithEndpoint(Node(0, "a"), "localhost", 29500, {"127.0.0.1", "::1"});
  auto b = WithEndpoint(Node(1, "b"), "127.0.0.1", 29500, {"127.0.0.1"});
  auto bad = Fails(CompareNodes({a, b}), "warmup.consistency.rendezvous");
  REQUIRE(bad.size() == 1);
  CHECK_THAT(bad[0].message, Catch::Contains("loopback on node 0 (a), node 1 (b) in a job on 2 "
                                             "hosts"));
  b.facts.hostname = a.facts.hostname;  // two "nodes" on one host: loopback is right
  CHECK(Fails(CompareNodes({a, b}), "warmup.consistency.rendezvous").empty());
}

TEST_CASE("nodes that published no endpoint (older safe-launch) are not compared") {
  auto fs = CompareNodes({WithEndpoint(Node(0, "a"), "gpu01", 29500, {"10.0.0.1"}), Node(1, "b")});
  CHECK(Fails(fs, "warmup.consistency.rendezvous").empty());
}

TEST_CASE("the rendezvous endpoint survives the store's JSON round trip") {
  NodeReport r = WithEndpoint(Node(1, "b"), "gpu01", 29400, {"10.0.0.1", "fe80::1"});
  NodeReport back = nlohmann::json(r).get<NodeReport>();
  CHECK(back.rendezvous.host == "gpu01");
  CHECK(back.rendezvous.port == 29400);
  CHECK(back.rendezvous.source == "MASTER_ADDR + MASTER_PORT");
  CHECK(back.rendezvous.addresses == std::vector<std::string>{"10.0.0.1", "fe80::1"});
}
