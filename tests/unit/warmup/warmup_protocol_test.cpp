#include <catch2/catch.hpp>

#include "warmup/protocol.h"

using sl::Outcome;
using sl::warmup::BandwidthPerNode;
using sl::warmup::MakeSweepPoint;
using sl::warmup::MissingRankFindings;
using sl::warmup::RankResult;
using sl::warmup::WarmupPlan;

TEST_CASE("bus bandwidth follows nccl-tests: algbw * 2(n-1)/n") {
  auto p = MakeSweepPoint(8000000, 0.004, 4);  // 8 MB in 4 ms = 2 GB/s
  CHECK(p.algbw_gbps == Approx(2.0));
  CHECK(p.busbw_gbps == Approx(3.0));
  auto one = MakeSweepPoint(1000, 0.001, 1);
  CHECK(one.busbw_gbps == 0);
}

TEST_CASE("ranks that never arrived are named per node, with the Slurm host when known") {
  WarmupPlan plan;
  plan.nnodes = 3;
  plan.nproc_per_node = 2;
  plan.store_host = "gpu01";
  plan.store_port = 29501;
  plan.hosts = {"gpu01", "gpu02", "gpu03"};
  // node 1 entirely absent, node 2 missing rank 5 only; node 2 published its name.
  auto fs = MissingRankFindings(plan, {0, 1, 4}, {{0, "gpu01"}, {2, "gpu03-real"}},
                                "arrive at the rendezvous", "warmup.arrival", 30.0);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].entity == "node 1 (gpu02)");
  CHECK(fs[0].outcome == Outcome::kFail);
  CHECK(fs[0].message.find("all its ranks") != std::string::npos);
  CHECK(fs[0].message.find("ranks 2,3") != std::string::npos);
  CHECK(fs[0].message.find("30.0 s") != std::string::npos);
  CHECK(fs[0].next_step.find("gpu02") != std::string::npos);
  CHECK(fs[1].entity == "node 2 (gpu03-real)");
  CHECK(fs[1].message.find("rank 5") != std::string::npos);
}

TEST_CASE("bandwidth per node averages its ranks at the largest size") {
  RankResult a, b, c;
  a.ok = b.ok = c.ok = true;
  a.node_rank = b.node_rank = 0;
  c.node_rank = 1;
  a.sweep = {MakeSweepPoint(1000, 1, 4), MakeSweepPoint(8000000, 0.004, 4)};  // busbw 3
  b.sweep = {MakeSweepPoint(8000000, 0.008, 4)};                              // busbw 1.5
  c.sweep = {MakeSweepPoint(8000000, 0.004, 4)};
  auto bw = BandwidthPerNode({a, b, c}, {{1, "h1"}});
  REQUIRE(bw.size() == 2);
  CHECK(bw[0].busbw_gbps == Approx(2.25));
  CHECK(bw[0].label == "node 0");
  CHECK(bw[1].label == "node 1 (h1)");
}

TEST_CASE("the verdict line names the first failure and counts the rest") {
  sl::Finding f1{"warmup.consistency.mtu", "node 1 (b)", Outcome::kFail, "MTU differs", "", {}};
  sl::Finding f2{"warmup.consistency.hca_count", "node 1 (b)", Outcome::kFail, "HCAs", "", {}};
  nlohmann::json report = {
      {"verdict", "fail"}, {"nnodes", 2}, {"nproc_per_node", 2}, {"findings", {f1, f2}}};
  auto line = sl::warmup::VerdictLine(report);
  CHECK(line.find("FAILED") != std::string::npos);
  CHECK(line.find("MTU differs") != std::string::npos);
  CHECK(line.find("+1 more") != std::string::npos);
}

TEST_CASE("a plan survives a JSON round trip") {
  WarmupPlan p;
  p.nnodes = 2;
  p.node_rank = 1;
  p.store_host = "h";
  p.store_port = 7;
  p.sweep_bytes = {4096};
  p.node.node_name = "n1";
  nlohmann::json j = p;
  auto back = j.get<WarmupPlan>();
  CHECK(back.nnodes == 2);
  CHECK(back.node_rank == 1);
  CHECK(back.store_port == 7);
  CHECK(back.sweep_bytes == std::vector<std::uint64_t>{4096});
  CHECK(back.node.node_name == "n1");
  CHECK(back.World() == 2);
}

#include "warmup/warmup_phase.h"

TEST_CASE("the source address towards loopback is loopback; an unresolvable host gives none") {
  CHECK(sl::warmup::SourceAddressFor("127.0.0.1", 29500) == "127.0.0.1");
  CHECK(sl::warmup::SourceAddressFor("no-such-host.invalid", 29500).empty());
}

TEST_CASE("the plan carries the comparison waivers to the warm-up ranks") {
  WarmupPlan plan;
  plan.waive = {"warmup.consistency.mtu", "warmup.consistency.env"};
  auto back = nlohmann::json(plan).get<WarmupPlan>();
  CHECK(back.waive == plan.waive);
  CHECK(nlohmann::json::object().get<WarmupPlan>().waive.empty());
}

TEST_CASE("node 0's details show a waived finding as waived, without its fix") {
  sl::Finding f = sl::MakeFinding("warmup.consistency.mtu", "node 1", Outcome::kFail,
                                  "the MTU of mlx5_0:1 is 1500 on node 1", "set the same MTU");
  f.waived = true;
  nlohmann::json report = {{"verdict", "pass"}, {"findings", {f}}};
  std::string text = sl::warmup::RenderWarmupReport(report);
  CHECK(text.find("waived warmup.consistency.mtu") != std::string::npos);
  CHECK(text.find("fix:") == std::string::npos);
}
