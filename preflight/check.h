#pragma once
// One preflight check = one function in preflight/checks/<name>.cpp plus one row in the
// registry table (preflight/registry.cpp). Checks are decisions: Evaluate(facts, env,
// thresholds) -> findings. They read nothing themselves: every file they judge was read once by
// GatherNodeFacts, and their evidence (node path, raw text) comes from the facts.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/node_facts.h"
#include "common/thresholds.h"

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

struct CheckInfo {
  const char* id;       ///< stable: used by --only, --waive, JSON and docs
  const char* summary;  ///< one line for --list
  CheckFn run;
};

/// All checks, in the order they run and print.
std::span<const CheckInfo> Registry();

// One declaration per check file under preflight/checks/.
std::vector<Finding> CheckIbPortState(const CheckContext& ctx);
std::vector<Finding> CheckIbPortErrors(const CheckContext& ctx);
std::vector<Finding> CheckIbMtu(const CheckContext& ctx);
std::vector<Finding> CheckIbGid(const CheckContext& ctx);
std::vector<Finding> CheckOsMemlock(const CheckContext& ctx);
std::vector<Finding> CheckOsNofile(const CheckContext& ctx);
std::vector<Finding> CheckOsSysctl(const CheckContext& ctx);
std::vector<Finding> CheckOsShm(const CheckContext& ctx);
std::vector<Finding> CheckGpuInventory(const CheckContext& ctx);
std::vector<Finding> CheckGpuGdr(const CheckContext& ctx);
std::vector<Finding> CheckPciAcs(const CheckContext& ctx);
std::vector<Finding> CheckKernelLog(const CheckContext& ctx);
std::vector<Finding> CheckEnvNccl(const CheckContext& ctx);
std::vector<Finding> CheckNetIfname(const CheckContext& ctx);

}  // namespace sl::preflight
