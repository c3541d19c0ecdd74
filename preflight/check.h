#pragma once
// One preflight check = one file preflight/checks/<name>.cpp that defines its CheckInfo row
// (id, summary, function, finding codes), named in the registry list (preflight/registry.cpp).
// Checks are decisions: Evaluate(facts, env,
// thresholds) -> findings. They read nothing themselves: every file they judge was read once by
// GatherNodeFacts, and their evidence (node path, raw text) comes from the facts.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/node_facts.h"
#include "common/thresholds.h"
#include "preflight/finding_codes.h"

namespace sl::preflight {

struct CheckContext {
  const NodeFacts& facts;  ///< gathered once per run, shared by all checks
  const Environment& env;  ///< the job's environment (after the env plan in `run`)
  const Thresholds& thresholds;
  bool verbose = false;
  std::int64_t kernel_log_since_us = -1;  ///< kernel.log: records at/after this monotonic time
                                          ///< (microseconds, as in /dev/kmsg); -1 = since boot
};

using CheckFn = std::vector<Finding> (*)(const CheckContext& ctx);

/// When a check runs: before a job (preflight, Prolog, `run`), after it (`preflight --slurm
/// --epilog`), or both. --list tags the after-job ones "[epilog]".
enum class CheckWhen { kBeforeJob, kAfterJob, kBoth };

struct CheckInfo {
  const char* id;       ///< stable: used by --only, --waive, JSON and docs
  const char* summary;  ///< one line for --list
  CheckFn run;
  std::span<const FindingCode> codes;  ///< every condition it reports, from its own file
  CheckWhen when = CheckWhen::kBeforeJob;
  /// Runs in `preflight --epilog` (after the job).
  bool InEpilog() const { return when != CheckWhen::kBeforeJob; }
  /// Runs before a job (plain preflight, --slurm as a Prolog, `run`).
  bool BeforeJob() const { return when != CheckWhen::kAfterJob; }
};

/// All checks, in the order they run and print.
std::span<const CheckInfo> Registry();

/// The check with this exact id, nullptr when there is none.
const CheckInfo* FindCheck(std::string_view id);

}  // namespace sl::preflight
