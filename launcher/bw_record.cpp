#include "launcher/bw_record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <set>

#include "common/file_writer.h"
#include "common/input_file.h"
#include "common/json_text.h"
#include "common/log.h"
#include "warmup/bw_svg.h"

namespace sl::launcher {

Result<std::string> ReadUserFile(const std::string& path, InputKind kind) {
  return ReadInputFile(path, InputRule::Named(kind));
}

std::vector<Finding> RecordBandwidth(const BandwidthRecord& a, warmup::HistoryEntry e,
                                     const nlohmann::json& report, const NodeFacts& facts,
                                     const Environment& env) {
  std::vector<Finding> out;
  std::vector<Finding>* findings = &out;
  e.time_unix = static_cast<double>(std::time(nullptr));
  e.job = Lookup(env, "SLURM_JOB_ID").value_or("");
  e.versions["safe_launch"] = SAFE_LAUNCH_VERSION;
  if (!facts.nvidia_driver.empty()) e.versions["driver"] = facts.nvidia_driver;
  const double drop = a.max_drop;
  warmup::HistoryEntry base;
  if (!a.baseline.empty()) {
    auto text = ReadUserFile(a.baseline, InputKind::kHistory);
    auto parsed =
        text.ok() ? warmup::ParseBaseline(*text) : Result<warmup::HistoryEntry>(text.error());
    if (parsed.ok()) {
      base = *parsed;
      for (auto& f : warmup::CompareWithBaseline(e, base, drop)) findings->push_back(f);
    } else {
      log::Warn("baseline {}: {}", a.baseline, parsed.error().Describe());
    }
  }
  if (!a.history.empty()) {
    // A history that does not exist yet is a first run; one that is a link, a FIFO or a
    // device is not read (nor appended to: AppendRecord refuses it too).
    auto text = ReadUserFile(a.history, InputKind::kHistory);
    if (!text.ok() && ::access(a.history.c_str(), F_OK) != 0 && errno == ENOENT)
      text = std::string();
    std::vector<std::string> problems;
    std::vector<warmup::HistoryEntry> past;
    if (text.ok()) {
      past = warmup::ParseHistory(*text, &problems);
    } else {
      log::Warn("history {}: {}", a.history, text.error().message);
    }
    for (const auto& p : problems) log::Warn("{}: {} (skipped)", a.history, p);
    for (auto& f : warmup::CompareWithHistory(e, past, a.last_n, drop)) findings->push_back(f);
    if (auto s = AppendRecord(a.history, JsonText(nlohmann::json(e), -1) + "\n", 0644); !s.ok())
      log::Warn("history not written: {}", s.error().Describe());
    else
      log::Info("history: appended to {}", a.history);
  }
  warmup::SvgInput in;
  in.title = fmt::format("all_reduce busbw, {} node(s), {}", e.nodes.size(), e.source);
  in.measured = e.sweep;
  in.expected_gbps = e.expected_gbps;
  in.baseline = base.sweep;
  std::set<int> slow;
  if (report.contains("pairs"))
    for (int n : report["pairs"].value("slow_nodes", std::vector<int>{})) slow.insert(n);
  for (const auto& pn : e.per_node) {
    if (!pn.contains("pairs")) continue;
    warmup::SvgSeries s{pn.value("label", ""), pn["pairs"].get<std::vector<warmup::BusbwPoint>>(),
                        slow.count(pn.value("node_rank", -1)) > 0};
    in.nodes.push_back(std::move(s));
  }
  if (a.svg.empty()) return out;
  if (auto s = WriteFileAtomic(a.svg, warmup::BandwidthSvg(in), 0644); s.ok())
    log::Info("picture: {}", a.svg);
  else
    log::Warn("picture not written: {}", s.error().Describe());
  return out;
}

}  // namespace sl::launcher
