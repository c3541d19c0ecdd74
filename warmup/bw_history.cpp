#include "warmup/bw_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/strings.h"

namespace sl::warmup {

std::string HistoryEntry::Key() const {
  std::vector<std::string> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  std::string v;
  for (const auto& [k, val] : versions)
    if (k != "safe_launch") v += k + "=" + val + ";";  // our own version does not move the fabric
  return fmt::format("{}|{}|{}|{}|{}", Join(sorted, ","), ranks_per_node, source, backend, v);
}

void to_json(nlohmann::json& j, const HistoryEntry& e) {
  j = {{"schema", "safe-launch.bw/1"},
       {"time_unix", e.time_unix},
       {"job", e.job},
       {"source", e.source},
       {"backend", e.backend},
       {"nodes", e.nodes},
       {"ranks_per_node", e.ranks_per_node},
       {"versions", e.versions},
       {"sweep", e.sweep},
       {"per_node", e.per_node},
       {"expected_busbw_gbps", e.expected_gbps}};
}

void from_json(const nlohmann::json& j, HistoryEntry& e) {
  e.time_unix = j.value("time_unix", 0.0);
  e.job = j.value("job", "");
  e.source = j.value("source", "warmup");
  e.backend = j.value("backend", "");
  e.nodes = j.value("nodes", std::vector<std::string>{});
  e.ranks_per_node = j.value("ranks_per_node", 0);
  e.versions = j.value("versions", std::map<std::string, std::string>{});
  e.sweep = j.value("sweep", std::vector<BusbwPoint>{});
  e.per_node = j.value("per_node", nlohmann::json::array());
  e.expected_gbps = j.value("expected_busbw_gbps", 0.0);
}

std::vector<HistoryEntry> ParseHistory(std::string_view text, std::vector<std::string>* problems) {
  std::vector<HistoryEntry> out;
  int line_no = 0;
  ForEachLine(text, [&](std::string_view line) {
    ++line_no;
    if (Trim(line).empty()) return;
    try {
      auto j = nlohmann::json::parse(line);
      if (!j.is_object() || !j.contains("sweep")) throw std::runtime_error("not a history entry");
      out.push_back(j.get<HistoryEntry>());
    } catch (const std::exception& e) {
      if (problems) problems->push_back(fmt::format("line {}: {}", line_no, e.what()));
    }
  });
  return out;
}

Result<HistoryEntry> ParseBaseline(std::string_view text) {
  try {
    std::string_view body = Trim(text);
    // The last line of a history file is a baseline too.
    if (auto nl = body.rfind('\n'); nl != std::string_view::npos && body.front() == '{' &&
                                    nlohmann::json::accept(body.substr(nl + 1)) &&
                                    !nlohmann::json::accept(body))
      body = body.substr(nl + 1);
    auto j = nlohmann::json::parse(body);
    if (!j.is_object() || !j.contains("sweep") || !j["sweep"].is_array() || j["sweep"].empty())
      return MakeError(
          "a baseline needs a non-empty \"sweep\": [{\"bytes\": ..., \"busbw_gbps\": ...}]");
    HistoryEntry e = j.get<HistoryEntry>();
    for (const auto& p : e.sweep)
      if (p.bytes == 0 || !(p.busbw_gbps > 0))
        return MakeError("a baseline point needs bytes > 0 and busbw_gbps > 0");
    return e;
  } catch (const std::exception& e) {
    return MakeError(std::string("not a baseline: ") + e.what(), "",
                     "use one line of a history file (a good run's), or {\"sweep\": [...]}");
  }
}

namespace {

double HistoryMedian(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string HistorySize(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return HumanBytes(bytes);
}

// One finding per comparison: the sizes that dropped, or a pass naming the closest one.
std::vector<Finding> Compare(const HistoryEntry& now,
                             const std::map<std::uint64_t, double>& reference,
                             const std::string& check, const std::string& against,
                             double max_drop) {
  std::vector<std::string> drops;
  double worst = 0;
  int shared = 0;
  for (const auto& p : now.sweep) {
    auto it = reference.find(p.bytes);
    if (it == reference.end() || it->second <= 0) continue;
    ++shared;
    double drop = 1 - p.busbw_gbps / it->second;
    worst = std::max(worst, drop);
    if (drop > max_drop)
      drops.push_back(fmt::format("{} {:.2f} -> {:.2f} GB/s (-{:.0f}%)", HistorySize(p.bytes),
                                  it->second, p.busbw_gbps, drop * 100));
  }
  Finding f;
  f.check_id = check;
  f.entity = "job";
  if (shared == 0) {
    f.outcome = Outcome::kSkip;
    f.message = "no size in common with " + against;
  } else if (drops.empty()) {
    f.outcome = Outcome::kPass;
    f.message =
        fmt::format("busbw within {:.0f}% of {} at {} size(s)", max_drop * 100, against, shared);
  } else {
    f.outcome = Outcome::kWarn;
    f.message = fmt::format("busbw dropped against {}: {}", against, Join(drops, ", "));
    f.next_step =
        "what changed since (driver, NCCL, firmware, a node swapped, cabling)? the pair rounds "
        "of `safe-launch bench --pairs always` name a slow node";
  }
  return {f};
}

}  // namespace

std::vector<Finding> CompareWithHistory(const HistoryEntry& now,
                                        const std::vector<HistoryEntry>& past, int last_n,
                                        double max_drop) {
  const std::string key = now.Key();
  std::vector<const HistoryEntry*> same;
  for (const auto& e : past)
    if (e.Key() == key) same.push_back(&e);
  if (same.size() > static_cast<std::size_t>(last_n)) same.erase(same.begin(), same.end() - last_n);
  if (same.empty()) {
    return {MakeFinding("warmup.bandwidth.history", "job", Outcome::kSkip,
                        "no earlier run on these nodes with these versions in the history")};
  }
  std::map<std::uint64_t, std::vector<double>> by_size;
  for (const auto* e : same)
    for (const auto& p : e->sweep) by_size[p.bytes].push_back(p.busbw_gbps);
  std::map<std::uint64_t, double> median;
  for (auto& [bytes, v] : by_size) median[bytes] = HistoryMedian(v);
  return Compare(now, median, "warmup.bandwidth.history",
                 fmt::format("the median of the last {} run(s)", same.size()), max_drop);
}

std::vector<Finding> CompareWithBaseline(const HistoryEntry& now, const HistoryEntry& baseline,
                                         double max_drop) {
  std::map<std::uint64_t, double> ref;
  for (const auto& p : baseline.sweep) ref[p.bytes] = p.busbw_gbps;
  return Compare(now, ref, "warmup.bandwidth.baseline", "the baseline", max_drop);
}

HistoryEntry EntryFromNcclTests(const NcclTestsOutput& out) {
  HistoryEntry e;
  e.source = "nccl-tests";
  std::vector<std::string> hosts;
  std::map<std::string, int> per_host;
  for (const auto& r : out.ranks) {
    if (!per_host.count(r.host)) hosts.push_back(r.host);
    per_host[r.host] += 1;
  }
  e.nodes = hosts;
  if (!hosts.empty()) e.ranks_per_node = per_host[hosts.front()];
  if (!out.version.empty()) e.versions["nccl_tests"] = out.version;
  std::map<std::uint64_t, double> best;
  for (const auto& row : out.rows)
    if (auto b = row.BestBusbw()) best[row.bytes] = std::max(best[row.bytes], *b);
  for (const auto& [bytes, bw] : best) e.sweep.push_back({bytes, bw});
  return e;
}

std::vector<Finding> NcclTestsFindings(const NcclTestsOutput& out, const std::string& file) {
  std::vector<Finding> fs;
  auto add = [&](Outcome o, std::string msg, std::string fix) {
    fs.push_back(MakeFinding("bench.nccl_tests", file, o, std::move(msg), std::move(fix)));
  };
  std::vector<std::string> wrong;
  for (const auto& r : out.rows)
    if (r.Wrong() > 0)
      wrong.push_back(fmt::format("{} wrong at {}", r.Wrong(), HistorySize(r.bytes)));
  if (out.out_of_bounds.value_or(0) > 0)
    wrong.push_back(fmt::format("{} out-of-bounds value(s)", *out.out_of_bounds));
  if (!wrong.empty())
    add(Outcome::kFail, "data corruption: " + Join(wrong, ", ") + " (#wrong must be 0)",
        "a NIC, GPU or link corrupts data: check the ib port error counters and dmesg (Xid) on "
        "every node of the run, and drain the node until it is found");
  for (const auto& e : out.errors) add(Outcome::kFail, "nccl-tests reported: " + e, "");
  for (const auto& p : out.problems) add(Outcome::kWarn, "unreadable output, " + p, "");
  if (!out.Complete())
    add(Outcome::kWarn, "the output ends before 'Avg bus bandwidth': the run did not finish",
        "look at the end of the output and the job's stderr");
  if (fs.empty())
    add(Outcome::kPass,
        fmt::format("{} {} size(s), #wrong 0, avg busbw {:.2f} GB/s",
                    out.program.empty() ? "nccl-tests" : out.program, out.rows.size(),
                    out.avg_busbw_gbps.value_or(0)),
        "");
  return fs;
}

HistoryEntry EntryFromReport(const nlohmann::json& report) {
  HistoryEntry e;
  e.backend = report.value("backend", "");
  e.ranks_per_node = report.value("nproc_per_node", 0);
  for (const auto& n : report.value("nodes", nlohmann::json::array()))
    e.nodes.push_back(n.value("name", ""));
  for (const auto& p : report.value("sweep", nlohmann::json::array()))
    e.sweep.push_back({p.value("bytes", std::uint64_t{0}), p.value("busbw_gbps", 0.0)});
  if (report.contains("bandwidth"))
    e.expected_gbps = report["bandwidth"].value("expected_busbw_gbps", 0.0);
  std::map<int, nlohmann::json> pairs;  // node rank -> its pair-round points
  if (report.contains("pairs"))
    for (const auto& n : report["pairs"].value("per_node", nlohmann::json::array()))
      pairs[n.value("node_rank", -1)] = n.value("points", nlohmann::json::array());
  for (const auto& b : report.value("bandwidth_per_node", nlohmann::json::array())) {
    nlohmann::json pn = {{"node_rank", b.value("node_rank", -1)},
                         {"label", b.value("label", "")},
                         {"busbw_gbps", b.value("busbw_gbps", 0.0)},
                         {"expected_gbps", e.expected_gbps}};
    if (auto it = pairs.find(b.value("node_rank", -1)); it != pairs.end()) pn["pairs"] = it->second;
    e.per_node.push_back(std::move(pn));
  }
  // A named copy: items() over value()'s temporary would dangle (C++20 range-for).
  const nlohmann::json versions = report.value("versions", nlohmann::json::object());
  for (const auto& [k, v] : versions.items())
    if (v.is_string()) e.versions[k] = v.get<std::string>();
  return e;
}

}  // namespace sl::warmup
