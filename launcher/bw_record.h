#pragma once
// Node 0's bookkeeping after a bandwidth sweep (`bench`, and `run`'s warm-up when
// SAFE_LAUNCH_BW_HISTORY / SAFE_LAUNCH_BW_BASELINE name files): compare with the baseline and the
// history, append the run to the history, draw the picture. The decisions are in
// warmup/bw_history.h; this is the file I/O around them.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/input_file.h"
#include "common/node_facts.h"
#include "warmup/bw_history.h"

namespace sl::launcher {

struct BandwidthRecord {
  std::string history;   ///< JSON-lines file to compare with and append to; "" = none
  std::string baseline;  ///< baseline file; "" = none
  std::string svg;       ///< where the picture goes; "" = none
  int last_n = 5;        ///< runs the history median is taken over
  double max_drop = 0.1;
};

/// A file the user named (history, baseline, --import): InputRule::Named(kind), so a regular
/// file only, never through a link at its name, capped per kind.
Result<std::string> ReadUserFile(const std::string& path, InputKind kind);

/// Stamps `e` (time, SLURM_JOB_ID, safe-launch and driver versions), compares it with the
/// baseline and the history, appends it, writes the picture; returns the findings. Problems with
/// the files are logged as warnings, never fatal.
std::vector<Finding> RecordBandwidth(const BandwidthRecord& r, warmup::HistoryEntry e,
                                     const nlohmann::json& report, const NodeFacts& facts,
                                     const Environment& env);

}  // namespace sl::launcher
