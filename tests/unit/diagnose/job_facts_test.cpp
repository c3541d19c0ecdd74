// The job's facts joined across nodes: preflight findings, the warm-up report's differences and
// IB counter deltas, each from JSON as the real writers produce it (the preflight Finding's
// to_json, warmup::CompareNodes, watchdog's IbCounterDeltas), mapped to a category with the
// node(s) that agree, and ranked by the engine.
#include "diagnose/job_facts.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/finding.h"
#include "diagnose/ingest.h"
#include "preflight/finding_codes.h"
#include "warmup/compare.h"
#include "watchdog/hang/collectors.h"

using namespace sl;
using namespace sl::diagnose;

namespace {

std::string PreflightJson(const std::vector<Finding>& findings) {
  nlohmann::json j = {{"schema", "safe-launch.preflight/1"}, {"host", "h"}, {"findings", findings}};
  return j.dump(2);
}

Finding Code(const char* check, const char* code, const char* entity, Outcome o) {
  return Coded(MakeFinding(check, entity, o, std::string("message of ") + code), code);
}

}  // namespace

TEST_CASE("every finding code the preflight table maps is a code a check defines") {
  for (const FactCategory& row : PreflightCategories()) {
    INFO(row.key);
    CHECK(preflight::FindFindingCode(row.key) != nullptr);
    CHECK(FindCategory(row.category) != nullptr);
  }
}

TEST_CASE("every warm-up code the table maps is a code of a check the warm-up runs") {
  std::set<std::string> ids = {"warmup.bandwidth", "warmup.bandwidth.pairs"};
  for (const auto& c : warmup::Comparisons()) ids.insert(c.id);
  for (const FactCategory& row : WarmupCategories()) {
    INFO(row.key);
    const std::string key(row.key);
    const std::size_t slash = key.find('/');
    REQUIRE(slash != std::string::npos);
    CHECK(ids.count(key.substr(0, slash)));
    CHECK(FindCategory(row.category) != nullptr);
  }
  for (const FactCategory& row : CounterCategories()) CHECK(FindCategory(row.category));
}

TEST_CASE("preflight fail and warn findings become facts with their port and file line") {
  const std::string text = PreflightJson({
      Code("ib.mtu", "ib.mtu/ib_mtu_mismatch", "mlx5_0:1", Outcome::kFail),
      Code("os.memlock", "os.memlock/finite", "node", Outcome::kWarn),
      Code("os.memlock", "os.memlock/unlimited", "node", Outcome::kPass),         // passes: no fact
      Code("env.nccl", "env.nccl/unknown_variable", "NCCL_FOO", Outcome::kWarn),  // no category
  });
  auto facts = PreflightFacts(text, "n2/preflight.json", "n2");
  REQUIRE(facts.size() == 2);
  CHECK(facts[0].category == "mtu_mismatch");
  CHECK(facts[0].port == "mlx5_0:1");
  CHECK(facts[0].node == "n2");
  CHECK(facts[0].evidence.file == "n2/preflight.json");
  CHECK(facts[0].evidence.text.rfind("/findings/0 ib.mtu/ib_mtu_mismatch fail", 0) == 0);
  // The line of the finding's message in the pretty-printed report.
  std::istringstream in(text);
  std::string line;
  for (std::uint64_t n = 1; std::getline(in, line); ++n) {
    if (line.find("message of ib.mtu/ib_mtu_mismatch") != std::string::npos) {
      CHECK(facts[0].evidence.line == n);
    }
  }
  CHECK(facts[1].category == "memlock");
  CHECK(facts[1].port.empty());
  CHECK(facts[1].confidence < facts[0].confidence);  // a warn counts less than a fail
  CHECK(PreflightFacts("{not json", "f", "n").empty());
}

TEST_CASE("a waived finding is no fact") {
  Finding f = Code("ib.mtu", "ib.mtu/ib_mtu_mismatch", "mlx5_0:1", Outcome::kFail);
  f.waived = true;
  CHECK(PreflightFacts(PreflightJson({f}), "p", "n").empty());
}

TEST_CASE("the warm-up's NCCL version difference names the odd node by name") {
  std::vector<warmup::NodeReport> nodes(4);
  for (int i = 0; i < 4; ++i) {
    nodes[i].node_rank = i;
    nodes[i].node_name = "n" + std::to_string(i + 1);
    nodes[i].nccl_version = i == 1 ? "2.18.3" : "2.21.5";
  }
  nlohmann::json report = {{"schema", "safe-launch.warmup/1"},
                           {"nnodes", 4},
                           {"findings", warmup::CompareNodes(nodes, {})}};
  int nnodes = 0;
  auto facts = WarmupFacts(report.dump(2), "n1/warmup.json", &nnodes);
  CHECK(nnodes == 4);
  REQUIRE(facts.size() == 1);
  CHECK(facts[0].category == "version_mismatch");
  CHECK(facts[0].node == "n2");
  auto claims = JoinFacts(facts, 4);
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].entity.node == "n2 only (1 of 4 nodes)");
  CHECK(claims[0].source == "warmup");
}

TEST_CASE("a warm-up environment difference maps by its code, whatever the message says") {
  std::vector<warmup::NodeReport> nodes(3);
  for (int i = 0; i < 3; ++i) {
    nodes[i].node_rank = i;
    nodes[i].node_name = "n" + std::to_string(i + 1);
    nodes[i].env["NCCL_IB_GID_INDEX"] = i == 2 ? "0" : "3";
  }
  auto findings = warmup::CompareNodes(nodes, {});
  bool coded = false;
  for (auto& f : findings) {
    coded = coded || f.code == "warmup.consistency.env/NCCL_IB_GID_INDEX";
    f.message = "reworded: " + f.message;  // the message's first word no longer names it
  }
  CHECK(coded);
  nlohmann::json report = {{"nnodes", 3}, {"findings", findings}};
  auto facts = WarmupFacts(report.dump(2), "n1/warmup.json");
  REQUIRE(facts.size() == 1);
  CHECK(facts[0].category == "gid_index");
  CHECK(facts[0].rule == "warmup.consistency.env/NCCL_IB_GID_INDEX");
  CHECK(facts[0].node == "n3");
}

TEST_CASE("IB counters that grew name the port and the category of the counter") {
  hang::CounterSnapshot start = {{"mlx5_0:1/counters/link_downed", 0},
                                 {"mlx5_0:1/counters/symbol_error", 5},
                                 {"mlx5_0:1/counters/port_rcv_data", 10}};
  hang::CounterSnapshot now = {{"mlx5_0:1/counters/link_downed", 2},
                               {"mlx5_0:1/counters/symbol_error", 5},
                               {"mlx5_0:1/counters/port_rcv_data", 99}};
  const std::string text = hang::IbCounterDeltas(start, now).dump(2);
  auto facts = CounterFacts(text, "b/node/ib_counters.json", "n3");
  REQUIRE(facts.size() == 1);  // symbol_error did not grow, port_rcv_data is no error
  CHECK(facts[0].category == "ib_port_down_or_link_flap");
  CHECK(facts[0].port == "mlx5_0:1");
  CHECK(facts[0].evidence.text.find("link_downed +2") != std::string::npos);
}

TEST_CASE("how many of the job's nodes agree shows in the entity") {
  CHECK(NodesText({"n2"}, 1) == "n2");
  CHECK(NodesText({"n2"}, 4) == "n2 only (1 of 4 nodes)");
  CHECK(NodesText({"n3", "n1", "n1"}, 4) == "n1, n3 (2 of 4 nodes)");
  CHECK(NodesText({"a", "b", "c"}, 3) == "all 3 nodes");
}

TEST_CASE("the same fact on every node is one claim naming all nodes, a copy counts once") {
  std::vector<NodeFact> facts;
  for (const char* n : {"n1", "n2", "n3"}) {
    NodeFact f{"preflight",
               "os.memlock/soft_below_min",
               "memlock",
               0.7,
               n,
               "",
               {std::string(n) + "/preflight.json", 3, "m", ""},
               "low"};
    facts.push_back(f);
    facts.push_back(f);  // the bundle's run/preflight.json copy
  }
  auto claims = JoinFacts(facts, 3);
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].entity.node == "all 3 nodes");
  CHECK(claims[0].evidence.size() == 3);
  CHECK(claims[0].confidence == Approx(0.7));  // one claim: no noisy-or over copies
}

TEST_CASE("a run root's facts are found through node run directories and their bundles") {
  MemFileReader fs;
  fs.AddDir("/r").AddDir("/r/n1").AddDir("/r/n2").AddDir("/r/n2/hang-n2-1");
  fs.AddFile("/r/n1/status.json", "{}").AddFile("/r/n2/status.json", "{}");
  fs.AddFile("/r/n2/preflight.json",
             PreflightJson({Code("os.shm", "os.shm/too_small", "/dev/shm", Outcome::kFail)}));
  fs.AddFile("/r/n2/hang-n2-1/manifest.json", R"({"host": "gpu02"})");
  fs.AddFile("/r/n2/hang-n2-1/node/ib_counters.json",
             R"({"error_deltas": [{"port": "mlx5_1:1", "counter": "link_downed", "delta": 1}]})");
  CHECK(IsRunRoot("/r", fs));
  CHECK_FALSE(IsRunRoot("/r/n2", fs));
  JobFacts job = ReadJobFacts({"/r"}, fs);
  CHECK(job.nodes == std::vector<std::string>{"n1", "n2"});
  CHECK(job.job_nodes == 2);
  REQUIRE(job.facts.size() == 2);
  CHECK(NodeOfFile(job.node_of_dir, "/r/n2/hang-n2-1/node/kernel.log") == "n2");
  CHECK(NodeOfFile(job.node_of_dir, "/r/n2/hang-n2-1.tar.gz:node/kernel.log") == "n2");
  CHECK(NodeOfFile(job.node_of_dir, "/r/n10/x") == "");
  auto claims = job.Claims();
  REQUIRE(claims.size() == 2);
  CHECK(claims[1].category == "ib_port_down_or_link_flap");
  CHECK(claims[1].entity.node == "n2 only (1 of 2 nodes)");
  CHECK(claims[1].entity.port == "mlx5_1:1");
}

TEST_CASE("a kernel event in one node's bundle ranks with that node and how many agree") {
  // Two nodes; n2's bundle holds an Xid. The line gets its node from the directory.
  static const LineMatcher matcher;
  JobFacts job;
  job.nodes = {"n1", "n2"};
  job.job_nodes = 2;
  job.node_of_dir = {{"/r/n1", "n1"}, {"/r/n2", "n2"}};
  sl::diagnose::Evidence ev;
  LogIngest ingest(matcher, &ev);
  ingest.SetNodeDirs(&job.node_of_dir);
  ingest.AddText("/r/n2/hang-1/node/kernel.log",
                 "[  812.100000] NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, name=python, GPU has "
                 "fallen off the bus.\n");
  Diagnosis d = Diagnose(ev);
  AnnotateNodes(job, &d);
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "gpu_xid_or_driver");
  CHECK(d.causes[0].entity.node == "n2 only (1 of 2 nodes)");
}

TEST_CASE("reports with fields of the wrong type give no facts and no exception") {
  CHECK(PreflightFacts(R"({"findings": [{"code": 5, "outcome": "fail", "waived": "x"},
                                        {"code": "os.shm/too_small", "outcome": ["fail"]}, 7]})",
                       "p", "n")
            .empty());
  int nnodes = -1;
  CHECK(WarmupFacts(R"({"nnodes": "4", "findings": [{"check": {}, "entity": 1}]})", "w", &nnodes)
            .empty());
  CHECK(nnodes == 0);
  CHECK(CounterFacts(R"({"error_deltas": [{"counter": "link_downed", "delta": "3"}, null]})", "c",
                     "n")
            .empty());
  CHECK(CounterFacts(R"({"error_deltas": {"counter": "link_downed"}})", "c", "n").empty());
}
