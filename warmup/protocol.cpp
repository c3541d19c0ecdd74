#include "warmup/protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "common/strings.h"

namespace sl::warmup {

void to_json(nlohmann::json& j, const WarmupPlan& p) {
  j = nlohmann::json{
      {"nnodes", p.nnodes},
      {"node_rank", p.node_rank},
      {"nproc_per_node", p.nproc_per_node},
      {"store_host", p.store_host},
      {"store_port", p.store_port},
      {"local_address", p.local_address},
      {"hosts", p.hosts},
      {"deadline_unix_ms", p.deadline_unix_ms},
      {"spawn_unix_ms", p.spawn_unix_ms},
      {"backend", p.backend},
      {"sweep_bytes", p.sweep_bytes},
      {"iterations", p.iterations},
      {"verify_count", p.verify_count},
      {"waive", p.waive},
      {"node", p.node},
      {"bandwidth", p.bandwidth},
      {"collectives", p.collectives},
      {"report_to_nodes", p.report_to_nodes},
      {"auth",
       {{"job_id", p.auth.job_id}, {"key_hex", p.auth.key_hex}, {"source", p.auth.source}}}};
}

void from_json(const nlohmann::json& j, WarmupPlan& p) {
  WarmupPlan d;
  p.nnodes = j.value("nnodes", d.nnodes);
  p.node_rank = j.value("node_rank", d.node_rank);
  p.nproc_per_node = j.value("nproc_per_node", d.nproc_per_node);
  p.store_host = j.value("store_host", d.store_host);
  p.store_port = j.value("store_port", d.store_port);
  p.local_address = j.value("local_address", d.local_address);
  p.hosts = j.value("hosts", d.hosts);
  p.deadline_unix_ms = j.value("deadline_unix_ms", d.deadline_unix_ms);
  p.spawn_unix_ms = j.value("spawn_unix_ms", d.spawn_unix_ms);
  p.backend = j.value("backend", d.backend);
  p.sweep_bytes = j.value("sweep_bytes", d.sweep_bytes);
  p.iterations = j.value("iterations", d.iterations);
  p.verify_count = j.value("verify_count", d.verify_count);
  p.waive = j.value("waive", d.waive);
  if (j.contains("node")) p.node = j.at("node").get<NodeReport>();
  p.bandwidth = j.value("bandwidth", d.bandwidth);
  p.collectives = j.value("collectives", d.collectives);
  p.report_to_nodes = j.value("report_to_nodes", d.report_to_nodes);
  if (p.report_to_nodes != "nodes" && p.report_to_nodes != "full")
    throw std::invalid_argument("report_to_nodes is '" + p.report_to_nodes +
                                "': expected \"nodes\" or \"full\"");
  if (j.contains("auth")) {
    const auto& a = j.at("auth");
    p.auth.job_id = a.value("job_id", "");
    p.auth.key_hex = a.value("key_hex", "");
    p.auth.source = a.value("source", "");
  }
}

SweepPoint MakeSweepPoint(std::uint64_t bytes, double seconds, int world) {
  SweepPoint p;
  p.bytes = bytes;
  p.seconds = seconds;
  if (seconds > 0) {
    p.algbw_gbps = static_cast<double>(bytes) / seconds / 1e9;
    // nccl-tests: all_reduce moves 2(n-1)/n of the buffer over the slowest link.
    p.busbw_gbps = world > 0 ? p.algbw_gbps * 2.0 * (world - 1) / world : 0;
  }
  return p;
}

std::vector<Finding> MissingRankFindings(const WarmupPlan& plan, const std::set<int>& present,
                                         const std::map<int, std::string>& node_names,
                                         const std::string& stage, const std::string& check_id,
                                         double waited_s) {
  std::map<int, std::vector<int>> missing;  // node -> ranks
  for (int r = 0; r < plan.World(); ++r)
    if (!present.count(r)) missing[plan.NodeOfRank(r)].push_back(r);
  std::vector<Finding> out;
  for (const auto& [node, ranks] : missing) {
    std::string host;
    if (auto it = node_names.find(node); it != node_names.end() && !it->second.empty())
      host = it->second;
    else if (static_cast<std::size_t>(node) < plan.hosts.size())
      host = plan.hosts[static_cast<std::size_t>(node)];
    std::string label = "node " + std::to_string(node) + (host.empty() ? "" : " (" + host + ")");
    bool whole_node = static_cast<int>(ranks.size()) == plan.nproc_per_node;
    std::string rank_list;
    for (int r : ranks) rank_list += (rank_list.empty() ? "" : ",") + std::to_string(r);
    Finding f;
    f.check_id = check_id;
    f.entity = label;
    f.outcome = Outcome::kFail;
    f.message = fmt::format("{} {} did not {} within {:.1f} s ({} {})", label,
                            whole_node ? "(all its ranks)" : "", stage, waited_s,
                            ranks.size() == 1 ? "rank" : "ranks", rank_list);
    // Collapse the double space left when the parenthesis is empty.
    if (auto pos = f.message.find("  "); pos != std::string::npos) f.message.erase(pos, 1);
    f.next_step = whole_node
                      ? "check that safe-launch started on " + (host.empty() ? label : host) +
                            " (srun output, node state), that it can reach " + plan.store_host +
                            ":" + std::to_string(plan.store_port) +
                            " (firewall, routing), and rerun; drain the node if it keeps failing"
                      : "look at that rank's warm-up log in the run directory on " +
                            (host.empty() ? label : host) + " (GPU stuck? driver error in dmesg?)";
    f.With("ranks", rank_list);
    f.With("rendezvous", plan.store_host + ":" + std::to_string(plan.store_port));
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

Finding FailFinding(std::string check_id, std::string entity, std::string message,
                    std::string next_step) {
  Finding f;
  f.check_id = std::move(check_id);
  f.entity = std::move(entity);
  f.outcome = Outcome::kFail;
  f.message = std::move(message);
  f.next_step = std::move(next_step);
  return f;
}

std::string NodeLabel(const WarmupPlan& plan, int node, const std::string& published) {
  std::string host = published;
  if (host.empty() && node >= 0 && static_cast<std::size_t>(node) < plan.hosts.size())
    host = plan.hosts[static_cast<std::size_t>(node)];
  return "node " + std::to_string(node) + (host.empty() ? "" : " (" + host + ")");
}

std::string ClaimantText(const ArrivalRecord& a) {
  return fmt::format("{} ({}, pid {})", a.host.empty() ? "?" : a.host,
                     a.address.empty() ? "address unknown" : a.address, a.pid);
}

}  // namespace

std::vector<Finding> LayoutFindings(const WarmupPlan& plan,
                                    const std::map<int, NodeLayout>& layouts) {
  std::vector<Finding> out;
  for (const auto& [node, l] : layouts) {
    if (l.nnodes == plan.nnodes && l.nproc_per_node == plan.nproc_per_node) continue;
    std::string label = NodeLabel(plan, node, l.host);
    std::vector<std::string> diffs;
    if (l.nproc_per_node != plan.nproc_per_node)
      diffs.push_back(fmt::format("runs {} rank(s) per node (--nproc-per-node) but node 0 runs {}",
                                  l.nproc_per_node, plan.nproc_per_node));
    if (l.nnodes != plan.nnodes)
      diffs.push_back(fmt::format("expects {} node(s) (--nnodes) but node 0 expects {}", l.nnodes,
                                  plan.nnodes));
    Finding f = FailFinding(
        "warmup.layout", label, label + " " + Join(diffs, "; ") + ": the job's layout differs",
        "start every node with the same --nnodes and --nproc-per-node (torchrun arguments or "
        "Slurm's task layout); the job would hang in its first collective");
    f.With("nproc_per_node", std::to_string(l.nproc_per_node));
    f.With("nnodes", std::to_string(l.nnodes));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> ClaimFindings(const WarmupPlan& plan,
                                   const std::map<int, RankClaims>& claims) {
  std::vector<Finding> out;
  // node -> the claims on its most-claimed rank: one entry per process claiming the node.
  std::map<int, const std::vector<ArrivalRecord>*> duplicated;
  std::map<int, std::string> node_host;
  // node -> the first claim of each of its ranks, one per host: two launchers claiming one node
  // can each win some of its ranks (rank 2 from one, rank 3 from the other), so that no rank is
  // claimed twice before the verdict.
  std::map<int, std::vector<ArrivalRecord>> first_by_host;
  for (const auto& [rank, c] : claims) {
    int node = plan.NodeOfRank(rank);
    if (!c.valid.empty() && node_host[node].empty()) node_host[node] = c.valid.front().host;
    if (!c.valid.empty()) {
      auto& firsts = first_by_host[node];
      const ArrivalRecord& a = c.valid.front();
      if (std::none_of(firsts.begin(), firsts.end(),
                       [&a](const ArrivalRecord& b) { return b.host == a.host; }))
        firsts.push_back(a);
    }
    auto& most = duplicated[node];
    if (c.valid.size() > 1 && (most == nullptr || c.valid.size() > most->size())) most = &c.valid;
    for (const auto& why : c.refused) {
      std::string label = NodeLabel(plan, node, node_host[node]);
      Finding f = FailFinding(
          "warmup.auth", "rank " + std::to_string(rank) + " on " + label,
          fmt::format("refused a claim on rank {} ({}): {}", rank, label, why),
          fmt::format("set the same {} on every node of the job; if they agree, another process "
                      "can reach the warm-up store at {}:{} -- find it before trusting the node",
                      kWarmupSecretVar, plan.store_host, plan.store_port));
      if (!c.valid.empty()) f.outcome = Outcome::kWarn;
      out.push_back(std::move(f));
    }
  }
  for (auto& [node, claimants] : duplicated) {
    if (claimants == nullptr && first_by_host[node].size() > 1) claimants = &first_by_host[node];
    if (claimants == nullptr) continue;
    std::vector<std::string> names;
    for (const auto& a : *claimants) names.push_back(ClaimantText(a));
    std::string label = NodeLabel(plan, node, node_host[node]);
    std::string count = names.size() == 2 ? "two" : std::to_string(names.size());
    std::string who = names.size() == 2 ? names[0] + " and " + names[1] : Join(names, ", ");
    out.push_back(FailFinding(
        "warmup.duplicate", label,
        fmt::format("{} processes claim node {}: hosts {}", count, node, who),
        "give every node its own --node-rank (or SLURM_NODEID); stop the stray safe-launch"));
  }
  return out;
}

std::vector<Finding> ResultShapeFindings(const WarmupPlan& plan, int rank, const RankResult& r) {
  std::vector<Finding> out;
  std::string entity = "rank " + std::to_string(rank);
  if (r.rank != rank || r.node_rank != plan.NodeOfRank(rank)) {
    out.push_back(FailFinding(
        "warmup.collective", entity,
        fmt::format("the result published for rank {} (node {}) says rank {} on node {}", rank,
                    plan.NodeOfRank(rank), r.rank, r.node_rank),
        "check that every node runs the same --nnodes/--nproc-per-node and its own --node-rank"));
    return out;
  }
  if (!r.ok) return out;
  std::vector<std::string> missing;
  for (auto bytes : plan.sweep_bytes) {
    bool have = std::any_of(r.sweep.begin(), r.sweep.end(),
                            [&](const SweepPoint& p) { return p.bytes == bytes && p.seconds > 0; });
    if (!have) missing.push_back(std::to_string(bytes));
  }
  if (!missing.empty())
    out.push_back(FailFinding(
        "warmup.collective", entity,
        fmt::format("rank {} reported success without the sweep size(s) {} B", rank,
                    Join(missing, ", ")),
        "look at that rank's warm-up log; a result without its measurements is not believed"));
  return out;
}

std::vector<NodeBandwidth> BandwidthPerNode(const std::vector<RankResult>& results,
                                            const std::map<int, std::string>& node_names) {
  std::map<int, std::pair<double, int>> sum;  // node -> (busbw sum, ranks)
  for (const auto& r : results) {
    if (!r.ok || r.sweep.empty()) continue;
    const SweepPoint* largest = &r.sweep.front();
    for (const auto& p : r.sweep)
      if (p.bytes > largest->bytes) largest = &p;
    sum[r.node_rank].first += largest->busbw_gbps;
    sum[r.node_rank].second += 1;
  }
  std::vector<NodeBandwidth> out;
  for (const auto& [node, s] : sum) {
    NodeBandwidth b;
    b.node_rank = node;
    auto it = node_names.find(node);
    b.label = "node " + std::to_string(node) +
              (it != node_names.end() && !it->second.empty() ? " (" + it->second + ")" : "");
    b.busbw_gbps = s.first / s.second;
    out.push_back(b);
  }
  return out;
}

namespace {

std::string FirstProblem(const nlohmann::json& report, Outcome at_least) {
  if (!report.contains("findings")) return "";
  for (const auto& fj : report.at("findings")) {
    Finding f = fj.get<Finding>();
    if (Severity(f.outcome) >= Severity(at_least) && !f.waived) return f.message;
  }
  return "";
}

std::string SizeText(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace

nlohmann::json NodesFindings(const nlohmann::json& findings, std::size_t* omitted) {
  nlohmann::json out = nlohmann::json::array();
  if (!findings.is_array()) return out;
  for (const auto& f : findings) {
    if (out.size() >= kNodesReportList) break;
    nlohmann::json g = f;
    if (g.is_object() && g.contains("evidence") && g["evidence"].is_array() &&
        g["evidence"].size() > kNodesReportEvidence) {
      const std::size_t more = g["evidence"].size() - kNodesReportEvidence;
      auto& ev = g["evidence"];
      ev.erase(ev.begin() + static_cast<long>(kNodesReportEvidence), ev.end());
      ev.push_back(
          {{"source", "..."}, {"value", fmt::format("{} more in node 0's warmup.json", more)}});
    }
    out.push_back(std::move(g));
  }
  if (omitted != nullptr) *omitted = findings.size() - out.size();
  return out;
}

namespace {

// The entries of `list` that `keep` selects, at most kNodesReportList; `omitted` counts the
// rest under `name`.
template <typename Keep>
nlohmann::json KeepSome(const nlohmann::json& list, Keep keep, const char* name,
                        nlohmann::json* omitted) {
  nlohmann::json out = nlohmann::json::array();
  if (!list.is_array()) return out;
  for (const auto& e : list)
    if (out.size() < kNodesReportList && keep(e)) out.push_back(e);
  if (list.size() > out.size()) (*omitted)[name] = list.size() - out.size();
  return out;
}

}  // namespace

nlohmann::json NodesReport(const nlohmann::json& full) {
  if (!full.is_object()) return full;
  nlohmann::json out = full, omitted = nlohmann::json::object();
  if (full.contains("arrivals") && full["arrivals"].is_array() && !full["arrivals"].empty()) {
    out["arrivals"] = nlohmann::json::array({full["arrivals"].back()});  // the last one
    if (full["arrivals"].size() > 1) omitted["arrivals"] = full["arrivals"].size() - 1;
  }
  if (full.contains("nodes"))
    out["nodes"] = KeepSome(
        full["nodes"], [](const auto& n) { return !n.value("arrived", false); }, "nodes", &omitted);
  if (full.contains("ranks"))
    out["ranks"] = KeepSome(
        full["ranks"], [](const auto& r) { return !r.value("ok", false); }, "ranks", &omitted);
  if (full.contains("bandwidth_per_node"))
    out["bandwidth_per_node"] = KeepSome(
        full["bandwidth_per_node"], [](const auto&) { return false; }, "bandwidth_per_node",
        &omitted);
  if (out.contains("bandwidth") && out["bandwidth"].is_object() &&
      out["bandwidth"].contains("nodes")) {
    omitted["bandwidth.nodes"] = out["bandwidth"]["nodes"].size();
    out["bandwidth"].erase("nodes");
  }
  if (out.contains("pairs") && out["pairs"].is_object())
    for (const char* k : {"per_node", "pairs"})
      if (out["pairs"].contains(k)) {
        omitted[std::string("pairs.") + k] = out["pairs"][k].size();
        out["pairs"].erase(k);
      }
  if (full.contains("findings")) {
    std::size_t dropped = 0;
    out["findings"] = NodesFindings(full["findings"], &dropped);
    if (dropped > 0) omitted["findings"] = dropped;
  }
  out["scope"] = {{"report", "nodes"},
                  {"full_report", "node 0's warmup.json"},
                  {"omitted", std::move(omitted)}};
  return out;
}

std::string VerdictLine(const nlohmann::json& report) {
  std::string verdict = report.value("verdict", "fail");
  int nnodes = report.value("nnodes", 0), nproc = report.value("nproc_per_node", 0);
  double total = report.contains("timings_ms") ? report["timings_ms"].value("total", 0.0) : 0.0;
  if (verdict == "fail") {
    std::string why = FirstProblem(report, Outcome::kFail);
    if (why.empty()) why = report.value("error", "see node 0's log for details");
    int failures = 0;
    for (const auto& f : report.value("findings", nlohmann::json::array()))
      if (f.value("outcome", "") == "fail" || f.value("outcome", "") == "error") ++failures;
    return fmt::format("warm-up FAILED ({} node(s) x {} rank(s), {:.2f} s): {}{}", nnodes, nproc,
                       total / 1000.0, why,
                       failures > 1 ? fmt::format(" (+{} more)", failures - 1) : "");
  }
  std::string bw;
  if (report.contains("sweep") && !report["sweep"].empty()) {
    const auto& last = report["sweep"].back();
    bw = fmt::format(", busbw {:.3f} GB/s at {}", last.value("busbw_gbps", 0.0),
                     SizeText(last.value("bytes", std::uint64_t{0})));
  }
  std::string warn =
      verdict == "warn" ? " with warnings: " + FirstProblem(report, Outcome::kWarn) : "";
  return fmt::format(
      "warm-up passed{} ({} node(s) x {} rank(s), {} all_reduce verified{}, {:.2f} s)", warn,
      nnodes, nproc, report.value("backend", "?"), bw, total / 1000.0);
}

std::string RenderWarmupReport(const nlohmann::json& report) {
  std::string out;
  out += fmt::format("warm-up: {} node(s) x {} rank(s), backend {}, store {}\n",
                     report.value("nnodes", 0), report.value("nproc_per_node", 0),
                     report.value("backend", "?"), report.value("store", "?"));
  for (const auto& fj : report.value("findings", nlohmann::json::array())) {
    Finding f = fj.get<Finding>();
    std::string_view tag = f.waived ? "waived" : OutcomeName(f.outcome);
    out += fmt::format("  {:<5} {:<34} {}\n", tag, f.check_id, f.message);
    if (!f.next_step.empty() && f.outcome != Outcome::kPass && !f.waived)
      out += fmt::format("        fix: {}\n", f.next_step);
  }
  if (report.contains("sweep") && !report["sweep"].empty()) {
    out += "  all_reduce sweep (rank 0):    size     time(us)  algbw(GB/s)  busbw(GB/s)\n";
    for (const auto& p : report["sweep"])
      out += fmt::format(
          "  {:>38} {:>12.1f} {:>12.3f} {:>12.3f}\n", SizeText(p.value("bytes", std::uint64_t{0})),
          p.value("seconds", 0.0) * 1e6, p.value("algbw_gbps", 0.0), p.value("busbw_gbps", 0.0));
  }
  // Per node: the measured figure and, where the model applies, that node's expected line.
  std::map<int, double> node_expected;
  if (report.contains("bandwidth"))
    for (const auto& n : report["bandwidth"].value("nodes", nlohmann::json::array()))
      node_expected[n.value("node_rank", -1)] = n.value("expected_busbw_gbps", 0.0);
  if (report.contains("bandwidth_per_node"))
    for (const auto& b : report["bandwidth_per_node"]) {
      double expected = node_expected[b.value("node_rank", -1)];
      out += fmt::format("  busbw {:<28} {:.3f} GB/s{}\n", b.value("label", ""),
                         b.value("busbw_gbps", 0.0),
                         expected > 0 ? fmt::format(" (its line {:.1f} GB/s)", expected) : "");
    }
  if (report.contains("bandwidth") && report["bandwidth"].value("expected_busbw_gbps", 0.0) > 0) {
    std::vector<std::string> ratios;
    for (const auto& v : report["bandwidth"].value("sizes", nlohmann::json::array()))
      ratios.push_back(fmt::format("{} {:.2f}{}", SizeText(v.value("bytes", std::uint64_t{0})),
                                   v.value("ratio", 0.0), v.value("judged", false) ? "" : "*"));
    out += fmt::format("  measured/expected ({:.1f} GB/s): {} (* = too small to judge)\n",
                       report["bandwidth"].value("expected_busbw_gbps", 0.0), Join(ratios, ", "));
  }
  if (report.contains("arrivals") && !report["arrivals"].empty()) {
    const auto& last = report["arrivals"].back();
    out +=
        fmt::format("  arrival: last rank {} on {} arrived {:.0f} ms after the first\n",
                    last.value("rank", -1), last.value("host", "?"), last.value("offset_ms", 0.0));
  }
  if (report.contains("timings_ms")) {
    const auto& t = report["timings_ms"];
    out += fmt::format(
        "  time: process start {:.0f} ms, rendezvous {:.0f} ms, comparison {:.0f} ms, "
        "collectives {:.0f} ms, total {:.0f} ms\n",
        t.value("process_start", 0.0), t.value("rendezvous", 0.0), t.value("comparison", 0.0),
        t.value("collectives", 0.0), t.value("total", 0.0));
  }
  return out;
}

}  // namespace sl::warmup
