#include "warmup/protocol.h"

#include <catch2/catch.hpp>

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
  sl::Finding f1{.check_id = "warmup.consistency.mtu",
                 .entity = "node 1 (b)",
                 .outcome = Outcome::kFail,
                 .message = "MTU differs"};
  sl::Finding f2{.check_id = "warmup.consistency.hca_count",
                 .entity = "node 1 (b)",
                 .outcome = Outcome::kFail,
                 .message = "HCAs"};
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

TEST_CASE("the source address towards loopback is loopback, an unresolvable host gives none") {
  CHECK(sl::warmup::SourceAddressFor("127.0.0.1", 29500) == "127.0.0.1");
  CHECK(sl::warmup::SourceAddressFor("no-such-host.invalid", 29500).empty());
}

TEST_CASE("the plan carries the bandwidth thresholds, baseline and pair mode") {
  WarmupPlan plan;
  plan.bandwidth.min_fraction = 0.8;
  plan.bandwidth.pair_rounds = "always";
  plan.bandwidth.baseline = {{8u << 20, 0, 0, 31.5}};
  auto back = nlohmann::json(plan).get<WarmupPlan>();
  CHECK(back.bandwidth.min_fraction == 0.8);
  CHECK(back.bandwidth.pair_rounds == "always");
  REQUIRE(back.bandwidth.baseline.size() == 1);
  CHECK(back.bandwidth.baseline[0].busbw_gbps == 31.5);
  CHECK(nlohmann::json::object().get<WarmupPlan>().bandwidth.pair_rounds == "auto");
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

TEST_CASE("node 0's details give measured/expected per size and each node's line") {
  nlohmann::json report = {{"verdict", "warn"},
                           {"bandwidth_per_node",
                            {{{"node_rank", 0}, {"label", "node 0 (a)"}, {"busbw_gbps", 20.0}},
                             {{"node_rank", 1}, {"label", "node 1 (b)"}, {"busbw_gbps", 20.0}}}},
                           {"bandwidth",
                            {{"expected_busbw_gbps", 49.7},
                             {"sizes",
                              {{{"bytes", 8u << 20}, {"ratio", 0.2}, {"judged", false}},
                               {{"bytes", 256u << 20}, {"ratio", 0.4}, {"judged", true}}}},
                             {"nodes",
                              {{{"node_rank", 0}, {"expected_busbw_gbps", 49.7}},
                               {{"node_rank", 1}, {"expected_busbw_gbps", 24.8}}}}}}};
  std::string text = sl::warmup::RenderWarmupReport(report);
  CHECK(text.find("measured/expected (49.7 GB/s): 8 MiB 0.20*, 256 MiB 0.40") != std::string::npos);
  CHECK(text.find("node 1 (b)") != std::string::npos);
  CHECK(text.find("20.000 GB/s (its line 24.8 GB/s)") != std::string::npos);
}

namespace {

WarmupPlan TwoByTwo() {
  WarmupPlan plan;
  plan.nnodes = 2;
  plan.nproc_per_node = 2;
  plan.store_host = "gpu01";
  plan.store_port = 29501;
  plan.hosts = {"gpu01", "gpu02"};
  return plan;
}

sl::warmup::ArrivalRecord Claim(int rank, const std::string& host, int pid) {
  sl::warmup::ArrivalRecord a;
  a.rank = rank;
  a.node_rank = rank / 2;
  a.host = host;
  a.address = "10.0.0." + std::to_string(rank);
  a.pid = pid;
  return a;
}

}  // namespace

TEST_CASE("a node whose ranks per node or node count differ is named as a layout failure") {
  auto plan = TwoByTwo();
  std::map<int, sl::warmup::NodeLayout> layouts = {{0, {0, 2, 2, "gpu01"}},
                                                   {1, {1, 2, 3, "gpu02"}}};
  auto fs = sl::warmup::LayoutFindings(plan, layouts);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].check_id == "warmup.layout");
  CHECK(fs[0].outcome == Outcome::kFail);
  CHECK(fs[0].entity == "node 1 (gpu02)");
  CHECK(fs[0].message.find("runs 3 rank(s) per node (--nproc-per-node) but node 0 runs 2") !=
        std::string::npos);
  layouts[1] = {1, 3, 2, "gpu02"};
  fs = sl::warmup::LayoutFindings(plan, layouts);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].message.find("expects 3 node(s) (--nnodes) but node 0 expects 2") !=
        std::string::npos);
  layouts[1] = {1, 2, 2, "gpu02"};
  CHECK(sl::warmup::LayoutFindings(plan, layouts).empty());
}

TEST_CASE("two processes claiming one node are named with both hosts, once per node") {
  auto plan = TwoByTwo();
  std::map<int, sl::warmup::RankClaims> claims;
  claims[0].valid = {Claim(0, "gpu01", 10)};
  claims[1].valid = {Claim(1, "gpu01", 11)};
  claims[2].valid = {Claim(2, "gpu02", 20), Claim(2, "gpu07", 70)};
  claims[3].valid = {Claim(3, "gpu02", 21), Claim(3, "gpu07", 71)};
  auto fs = sl::warmup::ClaimFindings(plan, claims);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].check_id == "warmup.duplicate");
  CHECK(fs[0].outcome == Outcome::kFail);
  CHECK(fs[0].message ==
        "two processes claim node 1: hosts gpu02 (10.0.0.2, pid 20) and gpu07 (10.0.0.2, pid 70)");
  claims[2].valid.pop_back();
  claims[3].valid.pop_back();
  CHECK(sl::warmup::ClaimFindings(plan, claims).empty());
  // Each launcher won one of the node's ranks: no rank is claimed twice, the node is.
  claims[3].valid = {Claim(3, "gpu07", 71)};
  fs = sl::warmup::ClaimFindings(plan, claims);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].check_id == "warmup.duplicate");
  CHECK(fs[0].message ==
        "two processes claim node 1: hosts gpu02 (10.0.0.2, pid 20) and gpu07 (10.0.0.3, pid 71)");
}

TEST_CASE("a refused claim fails when the rank has no valid one, warns when it has") {
  auto plan = TwoByTwo();
  std::map<int, sl::warmup::RankClaims> claims;
  claims[2].refused = {"'sl-warmup/j/arrive/2/1' has a tag made with another key"};
  claims[3].valid = {Claim(3, "gpu02", 21)};
  claims[3].refused = {"'sl-warmup/j/arrive/3/1' carries no tag"};
  auto fs = sl::warmup::ClaimFindings(plan, claims);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].check_id == "warmup.auth");
  CHECK(fs[0].outcome == Outcome::kFail);
  CHECK(fs[0].message.find("refused a claim on rank 2 (node 1 (gpu02))") != std::string::npos);
  CHECK(fs[0].next_step.find("SAFE_LAUNCH_WARMUP_SECRET") != std::string::npos);
  CHECK(fs[1].outcome == Outcome::kWarn);
}

TEST_CASE("a result under another rank, or without every sweep size, is not believed") {
  auto plan = TwoByTwo();
  plan.sweep_bytes = {1024, 2048};
  RankResult r;
  r.rank = 3;
  r.node_rank = 1;
  r.ok = true;
  r.sweep = {MakeSweepPoint(1024, 0.001, 4), MakeSweepPoint(2048, 0.001, 4)};
  CHECK(sl::warmup::ResultShapeFindings(plan, 3, r).empty());
  auto moved = sl::warmup::ResultShapeFindings(plan, 2, r);
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].message.find("says rank 3") != std::string::npos);
  r.sweep.pop_back();
  auto partial = sl::warmup::ResultShapeFindings(plan, 3, r);
  REQUIRE(partial.size() == 1);
  CHECK(partial[0].check_id == "warmup.collective");
  CHECK(partial[0].outcome == Outcome::kFail);
  CHECK(partial[0].message.find("without the sweep size(s) 2048 B") != std::string::npos);
  r.ok = false;  // a failed rank is named by its error, not for its missing sweep
  CHECK(sl::warmup::ResultShapeFindings(plan, 3, r).empty());
}

TEST_CASE("the plan carries the store's namespace and key to the ranks") {
  WarmupPlan plan = TwoByTwo();
  plan.auth = sl::warmup::ResolveWarmupAuth({{"SAFE_LAUNCH_WARMUP_SECRET", "x"}}, 29502);
  WarmupPlan back = nlohmann::json(plan).get<WarmupPlan>();
  CHECK(back.auth.job_id == "port-29502");
  CHECK(back.auth.key_hex == plan.auth.key_hex);
  CHECK(back.auth.Authenticated());
}

namespace {

// Node 0's report for `n` nodes, every node arrived but node 7, node n-1 with an odd MTU: one
// comparison finding whose evidence has one entry per node, as CompareNodes writes it.
nlohmann::json FullReport(int n) {
  nlohmann::json arrivals = nlohmann::json::array(), nodes = nlohmann::json::array(),
                 ranks = nlohmann::json::array(), per_node = nlohmann::json::array();
  sl::Finding mtu;
  mtu.check_id = "warmup.consistency.mtu";
  mtu.code = "warmup.consistency.mtu/differs";
  mtu.entity = "node " + std::to_string(n - 1) + " (sim" + std::to_string(n - 1) + ")";
  mtu.outcome = Outcome::kFail;
  mtu.message = "the MTU of mlx5_0:1 is 1500 on " + mtu.entity + " but 4200 on other nodes";
  mtu.next_step = "set the same MTU";
  for (int i = 0; i < n; ++i) {
    arrivals.push_back({{"rank", i}, {"host", "sim" + std::to_string(i)}, {"t_ms", 1000.0 + i}});
    nodes.push_back({{"node_rank", i}, {"name", "sim" + std::to_string(i)}, {"arrived", i != 7}});
    RankResult r;
    r.rank = r.node_rank = i;
    r.ok = i != 3;
    r.error = r.ok ? "" : "all_reduce timed out";
    ranks.push_back(r);
    per_node.push_back({{"node_rank", i}, {"label", "node " + std::to_string(i)}});
    mtu.With("node " + std::to_string(i), i == n - 1 ? "1500" : "4200");
  }
  return {{"verdict", "fail"},
          {"nnodes", n},
          {"nproc_per_node", 1},
          {"findings", nlohmann::json::array({mtu})},
          {"arrivals", arrivals},
          {"nodes", nodes},
          {"ranks", ranks},
          {"bandwidth_per_node", per_node},
          {"timings_ms", {{"total", 1500.0}}}};
}

}  // namespace

TEST_CASE("the report for the other nodes keeps the verdict and the odd nodes, not N entries") {
  const std::string small = sl::warmup::NodesReport(FullReport(16)).dump();
  const nlohmann::json big_full = FullReport(1024);
  const nlohmann::json big = sl::warmup::NodesReport(big_full);
  // Bounded: 64 times the nodes, the same size within a few bytes (the digits of the counts).
  CHECK(big.dump().size() < small.size() + 64);
  CHECK(big_full.dump().size() > 20 * big.dump().size());
  CHECK(sl::warmup::VerdictLine(big) == sl::warmup::VerdictLine(big_full));
  REQUIRE(big["findings"].size() == 1);
  const auto& f = big["findings"][0];
  CHECK(f["entity"] == "node 1023 (sim1023)");
  CHECK(f["code"] == "warmup.consistency.mtu/differs");
  REQUIRE(f["evidence"].size() == sl::warmup::kNodesReportEvidence + 1);
  CHECK(f["evidence"].back()["value"] == "1016 more in node 0's warmup.json");
  // What a node needs of the lists: the node that never arrived, the rank that failed, the last
  // arrival (node 0's details name it); the rest is counted.
  REQUIRE(big["nodes"].size() == 1);
  CHECK(big["nodes"][0]["node_rank"] == 7);
  REQUIRE(big["ranks"].size() == 1);
  CHECK(big["ranks"][0]["error"] == "all_reduce timed out");
  REQUIRE(big["arrivals"].size() == 1);
  CHECK(big["arrivals"][0]["rank"] == 1023);
  CHECK(big["bandwidth_per_node"].empty());
  CHECK(big["scope"]["omitted"]["arrivals"] == 1023);
  CHECK(big["scope"]["omitted"]["nodes"] == 1023);
  CHECK(big["scope"]["full_report"] == "node 0's warmup.json");
}

TEST_CASE("the findings for the other nodes are cut to a bounded count") {
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 100; ++i) many.push_back({{"check", "warmup.arrival"}, {"entity", i}});
  std::size_t omitted = 0;
  auto kept = sl::warmup::NodesFindings(many, &omitted);
  CHECK(kept.size() == sl::warmup::kNodesReportList);
  CHECK(omitted == 100 - sl::warmup::kNodesReportList);
  CHECK(kept[0]["entity"] == 0);
}

TEST_CASE("the plan says which report the other nodes get, and refuses another value") {
  WarmupPlan plan;
  CHECK(nlohmann::json(plan).get<WarmupPlan>().report_to_nodes == "nodes");
  plan.report_to_nodes = "full";
  CHECK(nlohmann::json(plan).get<WarmupPlan>().report_to_nodes == "full");
  nlohmann::json j = plan;
  j["report_to_nodes"] = "everything";
  CHECK_THROWS_WITH(j.get<WarmupPlan>(), Catch::Contains("report_to_nodes is 'everything'"));
}
