#include "launcher/remediation.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace sl;
using namespace sl::launcher;

namespace {

FaultCause PortDown(double p = 0.9, std::string node = "gpu07 only (1 of 16 nodes)") {
  FaultCause c;
  c.category = "ib_port_down_or_link_flap";
  c.probability = p;
  c.entity_node = std::move(node);
  c.port = "mlx5_3:1";
  c.evidence = {
      "gpu07/preflight.json:12: /findings/3 ib.port.state/no_link_partner fail: "
      "mlx5_3:1 is DOWN/Polling"};
  return c;
}

SlurmNode InService(std::string state = "ALLOCATED") {
  SlurmNode n;
  n.state = std::move(state);
  return n;
}

// A 16-node job on gpu01..gpu16 of a 20-node partition, all in service.
SlurmView Cluster(int partition_nodes = 20, int job_nodes = 16) {
  SlurmView v;
  v.job_id = "812";
  v.job_num_nodes = job_nodes;
  v.partition = "batch";
  for (int i = 1; i <= partition_nodes; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "gpu%02d", i);
    if (i <= job_nodes) v.job_nodes.push_back(name);
    v.partition_nodes[name] = InService(i <= job_nodes ? "ALLOCATED" : "IDLE");
  }
  return v;
}

RemediationPolicy Mode(OnNodeFault m) {
  RemediationPolicy p;
  p.mode = m;
  return p;
}

std::vector<std::string> Kinds(const Decision& d) {
  std::vector<std::string> k;
  for (const auto& a : d.actions) k.push_back(a.kind);
  return k;
}

}  // namespace

TEST_CASE("a port down on one node above the threshold drains it and requeues without it") {
  Decision d = Decide(PortDown(), Mode(OnNodeFault::kRequeue), Cluster(), {});
  CHECK(d.decision == "requeue");
  CHECK(d.node == "gpu07");
  REQUIRE(Kinds(d) == std::vector<std::string>{"drain", "requeue", "exclude"});
  CHECK(d.actions[0].argv == std::vector<std::string>{"update", "nodename=gpu07", "state=drain",
                                                      "reason=" + d.drain_reason});
  CHECK(d.actions[1].argv == std::vector<std::string>{"requeue", "812"});
  CHECK(d.actions[2].argv == std::vector<std::string>{"update", "jobid=812", "ExcNodeList=gpu07"});
  CHECK(d.drain_reason ==
        "safe-launch: ib_port_down_or_link_flap: gpu07: mlx5_3:1: ib.port.state/no_link_partner "
        "fail: mlx5_3:1 is DOWN/Polling");
  CHECK(d.drain_reason.size() <= kDrainReasonMaxBytes);
}

TEST_CASE("drain mode drains and does not requeue, report mode does nothing") {
  CHECK(Kinds(Decide(PortDown(), Mode(OnNodeFault::kDrain), Cluster(), {})) ==
        std::vector<std::string>{"drain"});
  Decision r = Decide(PortDown(), Mode(OnNodeFault::kReport), Cluster(), {});
  CHECK(r.decision == "report");
  CHECK(r.actions.empty());
}

TEST_CASE("an application or fabric-wide cause never drains, whatever its probability") {
  for (const char* cat : {"desync_collective_mismatch", "oom_or_crash_other_rank",
                          "straggler_or_slow_rank", "retry_exceeded_network", "unknown"}) {
    FaultCause c = PortDown(0.97);
    c.category = cat;
    Decision d = Decide(c, Mode(OnNodeFault::kRequeue), Cluster(), {});
    CHECK(d.actions.empty());
    CHECK(!d.node_local);
    REQUIRE(!d.notes.empty());
    CHECK(d.notes[0].find("not local to one node") != std::string::npos);
  }
}

TEST_CASE("a cause on every node or on several is not one node's: nothing drained") {
  for (const char* e : {"all 16 nodes", "gpu01, gpu03 (2 of 16 nodes)", ""}) {
    Decision d = Decide(PortDown(0.9, e), Mode(OnNodeFault::kRequeue), Cluster(), {});
    CHECK(d.actions.empty());
  }
}

TEST_CASE("below the threshold nothing is done, a preflight refusal counts as certain") {
  Decision d = Decide(PortDown(0.7), Mode(OnNodeFault::kRequeue), Cluster(), {});
  CHECK(d.actions.empty());
  CHECK(d.notes[0].find("below the threshold 0.80") != std::string::npos);
  CHECK(Decide(PortDown(0.7), Mode(OnNodeFault::kRequeue), Cluster(), {}, 1.0).decision ==
        "requeue");
}

TEST_CASE("a node already drained, down or failed keeps its reason, the job may still move") {
  SlurmView v = Cluster();
  v.partition_nodes["gpu07"].state = "MIXED+DRAIN";
  v.partition_nodes["gpu07"].reason = "fan 3 loud (bob)";
  v.partition_nodes["gpu07"].out_of_service = true;
  Decision d = Decide(PortDown(), Mode(OnNodeFault::kRequeue), v, {});
  CHECK(Kinds(d) == std::vector<std::string>{"requeue", "exclude"});
  CHECK(d.notes[0].find("fan 3 loud (bob)") != std::string::npos);
  CHECK(Decide(PortDown(), Mode(OnNodeFault::kDrain), v, {}).actions.empty());
}

TEST_CASE("at most max(1, 10%) of the job's nodes are drained over its attempts") {
  RemediationHistory h;
  h.drained = {"gpu02"};  // 16 nodes: 1 may be drained
  Decision d = Decide(PortDown(), Mode(OnNodeFault::kRequeue), Cluster(), h);
  CHECK(d.actions.empty());
  CHECK(d.notes.back().find("at most 1 may be") != std::string::npos);
  SlurmView big = Cluster(40, 30);  // 30 nodes: 3 may be
  h.drained = {"gpu02", "gpu03"};
  CHECK(Kinds(Decide(PortDown(), Mode(OnNodeFault::kRequeue), big, h)).size() == 3);
}

TEST_CASE("the requeues stop at --max-requeues and say so") {
  RemediationHistory h;
  h.requeues = 2;
  Decision d = Decide(PortDown(), Mode(OnNodeFault::kRequeue), Cluster(), h);
  CHECK(Kinds(d) == std::vector<std::string>{"drain"});
  CHECK(d.notes.back().find("requeued 2 time(s) already, at most 2") != std::string::npos);
  h.drained = {"gpu02"};  // and no drain left either: both are said
  d = Decide(PortDown(), Mode(OnNodeFault::kRequeue), Cluster(), h);
  CHECK(d.actions.empty());
  CHECK(d.notes.front().find("--max-requeues") != std::string::npos);
}

TEST_CASE("no requeue when the partition cannot hold the job without the node") {
  SlurmView v = Cluster(16, 16);  // no spare node
  Decision d = Decide(PortDown(), Mode(OnNodeFault::kRequeue), v, {});
  CHECK(Kinds(d) == std::vector<std::string>{"drain"});
  CHECK(d.notes.back().find("no spare node") != std::string::npos);
  v = Cluster(17, 16);
  v.partition_nodes["gpu17"].out_of_service = true;  // the spare one is down
  CHECK(Kinds(Decide(PortDown(), Mode(OnNodeFault::kRequeue), v, {})).size() == 1);
}

TEST_CASE("the exclusion keeps the job's own ExcNodeList, a job without Requeue is not requeued") {
  SlurmView v = Cluster();
  v.excluded = {"gpu19"};
  Decision d = Decide(PortDown(), Mode(OnNodeFault::kRequeue), v, {});
  REQUIRE(d.actions.size() == 3);
  CHECK(d.actions[2].argv.back() == "ExcNodeList=gpu07,gpu19");
  v.requeue_allowed = false;
  CHECK(Kinds(Decide(PortDown(), Mode(OnNodeFault::kRequeue), v, {})).size() == 1);
}

TEST_CASE("a node that is not the job's is never touched") {
  Decision d = Decide(PortDown(0.9, "gpu18 only (1 of 16 nodes)"), Mode(OnNodeFault::kRequeue),
                      Cluster(), {});
  CHECK(d.actions.empty());
}

TEST_CASE("run directory leaves map to Slurm node names") {
  CHECK(SlurmNodeOfRunDir("gpu07") == "gpu07");
  CHECK(SlurmNodeOfRunDir("vm_vm-n1") == "vm-n1");
  CHECK(SlurmNodeOfRunDir("gpu07.1") == "gpu07");
  CHECK(SlurmNodeOfRunDir("gpu07-rank3") == "gpu07");
  CHECK(SingleNode("vm_vm-n1 only (1 of 2 nodes)") == "vm_vm-n1");
  CHECK(SingleNode("gpu07") == "gpu07");
  CHECK(SingleNode("all 2 nodes").empty());
}

TEST_CASE("the first cause's probability is read as probability, else confidence") {
  auto before = nlohmann::json::parse(R"J({"causes": [{"category": "memlock", "confidence": 0.7,
      "entity": {"node": "n2 only (1 of 4 nodes)"},
      "evidence": [{"file": "n2/preflight.json", "line": 3, "text": "memlock 64 KiB"}]}]})J");
  auto f = FirstCause(before);
  REQUIRE(f.ok());
  CHECK(f->probability == Approx(0.7));
  CHECK(f->evidence[0] == "n2/preflight.json:3: memlock 64 KiB");
  auto after = nlohmann::json::parse(
      R"J({"causes": [{"category": "memlock", "probability": 0.91, "confidence": 0.7}]})J");
  CHECK(FirstCause(after)->probability == Approx(0.91));
  CHECK(!FirstCause(nlohmann::json::parse(R"J({"causes": []})J")).ok());
}

TEST_CASE("scontrol's job and node records give the view Decide needs") {
  SlurmView v = ParseSlurmJob(
      "JobId=5 JobName=x JobState=RUNNING Requeue=1 Restarts=0 Partition=debug "
      "NodeList=vm,vm-n[1-2] NumNodes=2 NumCPUs=2 ExcNodeList=(null)");
  CHECK(v.job_id == "5");
  CHECK(v.job_nodes == std::vector<std::string>{"vm", "vm-n1", "vm-n2"});
  CHECK(v.job_num_nodes == 2);
  CHECK(v.excluded.empty());
  CHECK(v.requeue_allowed);
  auto nodes = ParsePartitionNodes(
      "NodeName=vm State=ALLOCATED Partitions=debug Reason=(null)\n"
      "NodeName=vm-n1 State=IDLE+DRAIN Partitions=debug Reason=fan [bob@2026-12-01T10:00:00]\n"
      "NodeName=other State=IDLE Partitions=gpu\n",
      "debug");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes["vm-n1"].out_of_service);
  CHECK(nodes["vm-n1"].reason == "fan");
}

TEST_CASE("the policy comes from the flag, else the variable, else the recipe") {
  recipes::SlurmSettings recipe;
  recipe.on_node_fault = "drain";
  recipe.origin = "site.toml:3";
  recipe.max_requeues = 1;
  auto p = ResolveRemediationPolicy({}, {}, recipe);
  REQUIRE(p.ok());
  CHECK(p->mode == OnNodeFault::kDrain);
  CHECK(p->max_requeues == 1);
  CHECK(p->source == "recipe site.toml:3");
  p = ResolveRemediationPolicy({}, {{"SAFE_LAUNCH_ON_NODE_FAULT", "requeue"}}, recipe);
  CHECK(p->mode == OnNodeFault::kRequeue);
  RemediationFlags f;
  f.on_node_fault = "report";
  f.fault_threshold = 0.9;
  p = ResolveRemediationPolicy(f, {{"SAFE_LAUNCH_ON_NODE_FAULT", "requeue"}}, recipe);
  CHECK(p->mode == OnNodeFault::kReport);
  CHECK(p->threshold == Approx(0.9));
  CHECK(!ResolveRemediationPolicy({}, {{"SAFE_LAUNCH_ON_NODE_FAULT", "reboot"}}, {}).ok());
  CHECK(!ResolveRemediationPolicy({}, {{"SAFE_LAUNCH_FAULT_THRESHOLD", "2"}}, {}).ok());
}

TEST_CASE("the report's remediation section replaces an earlier one") {
  nlohmann::json r = {
      {"decision", "requeue"},
      {"mode", "requeue"},
      {"why", {{"cause", "memlock"}, {"node", "n2"}, {"probability", 1.0}}},
      {"actions", {{{"command", "scontrol requeue 5"}, {"ran", true}, {"ok", true}}}},
      {"notes", nlohmann::json::array()}};
  std::string md = WithRemediationMarkdown("# Diagnosis\n", r);
  md = WithRemediationMarkdown(md, r);
  CHECK(md.find("## Remediation") == md.rfind("## Remediation"));
  CHECK(md.find("`scontrol requeue 5`: ok") != std::string::npos);
  std::string html = WithRemediationHtml("<html><body><p>x</p></body></html>", r);
  html = WithRemediationHtml(html, r);
  CHECK(html.find("<h2>Remediation</h2>") == html.rfind("<h2>Remediation</h2>"));
  CHECK(html.find("</section>") < html.find("</body>"));
}

TEST_CASE("a remediation record with members missing or of the wrong type still renders") {
  // Read back from a run root: a hand-edited or foreign remediation.json. A const json's
  // operator[] on a missing key is undefined behaviour, and get<std::string> on a number throws.
  const nlohmann::json bare = {{"decision", "report"}};
  std::string md = RemediationMarkdown(bare);
  CHECK(md.find("**Decision: report**") != std::string::npos);
  CHECK(md.find("Actions:") == std::string::npos);
  CHECK(RemediationHtml(bare).find("<b>Decision: report</b>") != std::string::npos);

  const nlohmann::json odd = {
      {"decision", "drain"},
      {"actions", {42, {{"command", "scontrol update NodeName=n2"}, {"ran", true}, {"ok", true}}}},
      {"notes", {7, "n2 drained"}}};
  md = RemediationMarkdown(odd);
  CHECK(md.find("`scontrol update NodeName=n2`: ok") != std::string::npos);
  CHECK(md.find("- n2 drained") != std::string::npos);
  const std::string html = RemediationHtml(odd);
  CHECK(html.find("<li>n2 drained</li>") != std::string::npos);
  CHECK(html.find("<code>scontrol update NodeName=n2</code>: ok") != std::string::npos);

  // A cause with a non-array evidence and rules is read, not refused or crashed on.
  auto f = FirstCause(nlohmann::json::parse(
      R"J({"causes": [{"category": "memlock", "probability": 0.9, "evidence": "x", "rules": 3}]})J"));
  REQUIRE(f.ok());
  CHECK(f->evidence.empty());
  CHECK(f->rules.empty());
}

TEST_CASE("a requeue asked but never answered counts towards --max-requeues") {
  // The requeue ends the acting step: slurmstepd's SIGKILL may come before scontrol's answer, so
  // the record says "pending" and the next attempt must count it, or the job requeues forever.
  char tmpl[] = "/tmp/sl-history-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::filesystem::path parent(tmpl);
  auto attempt = [&](const std::string& leaf, const std::string& actions) {
    std::filesystem::create_directories(parent / leaf);
    std::ofstream(parent / leaf / "remediation.json") << "{\"actions\": " << actions << "}";
  };
  const std::string self = (parent / "812.0.requeue2").string();
  std::filesystem::create_directories(self);
  attempt("812.0", R"([{"kind": "drain", "node": "gpu07", "ran": true, "ok": true},
                      {"kind": "requeue", "ran": true, "ok": false, "pending": true}])");
  CHECK(ReadHistory(self).requeues == 1);
  CHECK(ReadHistory(self).drained == std::vector<std::string>{"gpu07"});
  // Answered: one requeue, whether or not the pending entry was replaced.
  attempt("812.0.requeue1", R"([{"kind": "requeue", "ran": true, "ok": true}])");
  CHECK(ReadHistory(self).requeues == 2);
  // A requeue that scontrol refused, a dry run and another job's attempts do not count.
  attempt("812.0.requeue1", R"([{"kind": "requeue", "ran": true, "ok": false},
                               {"kind": "requeue", "ran": false, "ok": false, "pending": true}])");
  attempt("813.0", R"([{"kind": "requeue", "ran": true, "ok": true}])");
  CHECK(ReadHistory(self).requeues == 1);
  std::filesystem::remove_all(parent);
}
