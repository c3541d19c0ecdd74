#pragma once
// Runs the registered checks against one node and renders the report (text / JSON).
// Used by `safe-launch preflight`, by `run` before starting the job, and by the warm-up.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/node_facts.h"
#include "common/result.h"
#include "common/thresholds.h"

namespace sl::preflight {

struct PreflightOptions {
  std::string sysroot;             ///< "" = live node
  std::vector<std::string> only;   ///< check ids (or prefixes ending in '.', e.g. "ib.") to run
  std::vector<std::string> waive;  ///< check ids whose fail/warn do not count
  Thresholds thresholds;           ///< defaults, or from a recipe
  bool verbose = false;
  std::int64_t kernel_log_since_us = -1;
  /// After a job (`preflight --epilog`): the checks that run after a job (CheckInfo::when),
  /// instead of those that run before one.
  bool epilog = false;
};

struct PreflightReport {
  std::string hostname;
  std::string sysroot;
  NodeFacts facts;
  std::vector<Finding> findings;
  Outcome verdict = Outcome::kPass;  ///< worst non-waived outcome
  double elapsed_ms = 0;
};

/// Validates ids in only/waive (unknown id -> error with "did you mean"), checks the sysroot is
/// readable, gathers facts once and runs each selected check. Check crashes cannot happen by
/// contract; a check that throws anyway is turned into an `error` finding.
Result<PreflightReport> RunPreflight(const PreflightOptions& options, const Environment& env);
/// The same on facts gathered already (`run` gathers once for the plan and the preflight);
/// reads nothing. `env` is the environment the job will get.
Result<PreflightReport> RunPreflightOnFacts(const PreflightOptions& options, const Environment& env,
                                            NodeFacts facts);

/// Human table: one line per finding (outcome, check, entity, message); with `verbose` also
/// evidence and next steps. `color` adds ANSI colours for outcomes.
std::string RenderText(const PreflightReport& report, bool verbose, bool color);
/// JSON report (schema in doc/manual.md).
nlohmann::json ReportToJson(const PreflightReport& report);

}  // namespace sl::preflight
