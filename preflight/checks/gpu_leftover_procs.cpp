// gpu.leftover_procs (epilog): processes that still hold /dev/nvidia* after the job. The next
// job on the node then meets busy or out-of-memory GPUs (or a context that never ends in D
// state), so the epilog drains the node. Only --epilog runs it: before a job, another job's
// processes on a shared node are not leftovers.
#include "common/gpu_holders.h"
#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

constexpr const char* kId = "gpu.leftover_procs";

// How many leftovers the message names (a drain reason is bounded anyway).
constexpr std::size_t kHoldersNamed = 3;

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"gpu.leftover_procs/clean", Outcome::kPass, Outcome::kPass,
     "no process holds an NVIDIA device after the job", ""},
    {"gpu.leftover_procs/held", Outcome::kFail, Outcome::kFail,
     "processes still hold /dev/nvidia* after the job", kFixInFinding},
    {"gpu.leftover_procs/proc_unreadable", Outcome::kError, Outcome::kError,
     "/proc could not be listed: leftovers not checked", kFixReadSource},
};

Finding LeftoverFinding(const std::vector<GpuHolder>& holders) {
  if (holders.empty()) {
    return Coded(
        MakeFinding(kId, "node", Outcome::kPass, "no process holds an NVIDIA device after the job"),
        "gpu.leftover_procs/clean");
  }
  std::vector<std::string> named;
  for (std::size_t i = 0; i < holders.size() && i < kHoldersNamed; ++i) {
    const auto& h = holders[i];
    named.push_back("pid " + std::to_string(h.pid) + " (" + h.user + ": " + h.command + ")");
  }
  std::string message = std::to_string(holders.size()) +
                        " process(es) still hold /dev/nvidia* after the job: " + Join(named, ", ");
  if (holders.size() > kHoldersNamed) message += ", ...";
  Finding f = Coded(MakeFinding(kId, "node", Outcome::kFail, message,
                                "kill them (`kill -9 PID`; a process in D state needs a reboot), "
                                "then `scontrol update nodename=<node> state=resume`"),
                    "gpu.leftover_procs/held");
  for (const auto& h : holders) {
    f.With("/proc/" + std::to_string(h.pid) + "/fd",
           Join(h.devices, " ") + " (" + h.user + ": " + h.command + ")");
  }
  return f;
}

std::vector<Finding> CheckGpuLeftoverProcs(const CheckContext& ctx) {
  const auto& holders = ctx.facts.host.gpu_holders;
  if (holders.ok()) return {LeftoverFinding(*holders)};
  // Not a pass: an epilog that cannot see /proc must not return the node to service as clean.
  return {Coded(MakeFinding(kId, "node", Outcome::kError,
                            "leftover processes not checked: " + holders.error.Describe(),
                            "check that /proc is mounted and readable by the epilog's user"),
                "gpu.leftover_procs/proc_unreadable")
              .With(holders.path, holders.error.Describe())};
}

}  // namespace

extern const CheckInfo kGpuLeftoverProcsCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kGpuLeftoverProcsCheck = {kId, "no process left on /dev/nvidia* after the job",
                                              CheckGpuLeftoverProcs, kCodes, CheckWhen::kAfterJob};

}  // namespace sl::preflight
