#pragma once
// Baselines and history of bus bandwidth: every warm-up or bench (or imported nccl-tests run)
// becomes one JSON line (time, job, nodes, per-size busbw, per-node figures, versions); a new
// run is compared with the median of the last runs on the same node set, tool and versions, and
// with a baseline the user keeps. A drop beyond max_busbw_drop is a finding with the figures.
// Pure: text in, entries and findings out (the launcher reads and appends the file).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/finding.h"
#include "common/parse/nccl_tests.h"
#include "common/result.h"

namespace sl::warmup {

/// One busbw figure of one size.
struct BusbwPoint {
  std::uint64_t bytes = 0;
  double busbw_gbps = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BusbwPoint, bytes, busbw_gbps)

/// One line of the history file (schema "safe-launch.bw/1").
struct HistoryEntry {
  double time_unix = 0;
  std::string job;                 ///< SLURM_JOB_ID or "" when not under Slurm
  std::string source = "warmup";   ///< "warmup" | "bench" | "nccl-tests"
  std::string backend;             ///< "nccl" | "gloo" | "" (nccl-tests)
  std::vector<std::string> nodes;  ///< host names, in node-rank order
  int ranks_per_node = 0;
  std::map<std::string, std::string> versions;  ///< "nccl", "torch", "safe_launch", "driver"
  std::vector<BusbwPoint> sweep;
  nlohmann::json per_node = nlohmann::json::array();  ///< [{label, busbw_gbps, expected_gbps}]
  double expected_gbps = 0;                           ///< the model's line, 0 when none

  /// What makes two runs comparable: sorted node names, ranks per node, tool, backend, versions.
  std::string Key() const;
};
void to_json(nlohmann::json& j, const HistoryEntry& e);
void from_json(const nlohmann::json& j, HistoryEntry& e);

/// The entries of a history file, oldest first; lines that do not read are skipped and named in
/// `problems` ("line 4: ...").
std::vector<HistoryEntry> ParseHistory(std::string_view text, std::vector<std::string>* problems);

/// A baseline file: one history line (copy a good run's line), or {"sweep": [{bytes,
/// busbw_gbps}...]}.
Result<HistoryEntry> ParseBaseline(std::string_view text);

/// Findings "warmup.bandwidth.history": at each size the new run shares with the median of the
/// last `last_n` comparable runs, a drop beyond `max_drop` warns with the figures; a pass when
/// none dropped; a skip when there is nothing comparable yet.
std::vector<Finding> CompareWithHistory(const HistoryEntry& now,
                                        const std::vector<HistoryEntry>& past, int last_n,
                                        double max_drop);

/// Findings "warmup.bandwidth.baseline": the same against the baseline's figures.
std::vector<Finding> CompareWithBaseline(const HistoryEntry& now, const HistoryEntry& baseline,
                                         double max_drop);

/// An nccl-tests run as a history entry (source "nccl-tests"; nodes from its rank lines; the
/// better of out-of-place/in-place busbw per size).
HistoryEntry EntryFromNcclTests(const NcclTestsOutput& out);

/// What an nccl-tests output says by itself: #wrong or out-of-bounds values (fail: data
/// corruption), rows that did not read, a run that did not finish, its NCCL errors (check id
/// "bench.nccl_tests").
std::vector<Finding> NcclTestsFindings(const NcclTestsOutput& out, const std::string& file);

/// A warm-up report (warmup.json) as a history entry.
HistoryEntry EntryFromReport(const nlohmann::json& report);

}  // namespace sl::warmup
