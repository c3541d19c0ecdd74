#pragma once
// The phases of `safe-launch run`, each one call from cmd_run.cpp, in this order:
//   environment plan (its thresholds and waivers feed preflight) -> preflight -> warm-up ->
//   supervise (hang monitor attached through hooks); remediation after a failed preflight or
//   warm-up, or after a diagnosed hang (launcher/run_remediation.cpp).
// Warm-up (launcher/run_warmup.cpp) and hang detection (launcher/run_hang.cpp) live in their own
// files so that their owners add flags and behaviour without editing cmd_run.cpp.
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/node_facts.h"
#include "common/result.h"
#include "common/thresholds.h"
#include "launcher/remediation.h"
#include "recipes/plan.h"
#include "watchdog/supervisor.h"

namespace sl::preflight {
struct PreflightReport;
}
namespace sl::warmup {
class ClaimGuard;
}

namespace sl::launcher {

/// What the phases share. Filled in order by cmd_run; later phases read what earlier ones wrote.
struct RunContext {
  std::vector<std::string> command;  ///< the job, everything after --
  std::string sysroot;               ///< --sysroot ("" = live node)
  std::string run_dir;               ///< created, absolute or relative to the cwd
  std::string host;                  ///< short host name
  Environment base_env;              ///< safe-launch's own environment
  Environment job_env;               ///< base_env with the plan applied (what the job gets)
  NodeFacts facts;                   ///< gathered once (from the preflight report when it ran)
  bool have_facts = false;
  const preflight::PreflightReport* preflight = nullptr;  ///< null with --no-preflight
  std::string preflight_verdict = "skipped";              ///< pass|warn|fail|error|skipped
  nlohmann::json plan_json;               ///< env-plan.json content (null when no plan)
  std::vector<std::string> warmup_waive;  ///< the recipe's waivers of warm-up comparisons
  Thresholds thresholds;                  ///< the recipe's (bandwidth ones for the warm-up)
  /// --on-node-fault and co. resolved with the recipe's [slurm] (set by the plan phase).
  std::optional<RemediationPolicy> remediation;
  std::string post_mortem_root;   ///< the job run root once a post-mortem ran there
  double hang_declared_unix = 0;  ///< when this node declared a hang (0 = none)
  nlohmann::json status_extra = nlohmann::json::object();  ///< merged into status.json
  /// Node 0 while the job runs: answers late claimants on the warm-up port (claim_guard.h).
  std::shared_ptr<warmup::ClaimGuard> claim_guard;
};

// ---- warm-up (launcher/run_warmup.cpp) --------------------------------------------------------
struct RunConfig;  // launcher/config.h: the flags (--nnodes ... --on-warmup-fail) and the layout
/// Runs the warm-up before the job; returns exit_code::kOk to go on, or the status to exit with
/// (exit_code::kWarmupFailed) without starting the job. May add to ctx.status_extra.
int RunWarmupPhase(const RunConfig& config, RunContext& ctx);

// ---- per-task mode on a shared node (launcher/run_node.cpp) -----------------------------------
/// Where local rank 0 writes the node's verdict: the job directory (the run directory's parent),
/// "node<N>_<host>.<job key>.verdict.json"; "" unless config.SharesNode().
std::string NodeVerdictPath(const RunConfig& config, const RunContext& ctx);
/// Local rank 0 only (nothing for the others, nothing when `path` is ""): writes the verdict,
/// "running" with its pid when `rc` is empty, else "done" with the exit status its preflight and
/// warm-up gave (0 = the node's tasks start) and their status.json sections.
void PublishNodeVerdict(const RunConfig& config, const RunContext& ctx, const std::string& path,
                        std::optional<int> rc);
/// The node's other tasks: waits (warm-up timeout + 120 s at most) for local rank 0's verdict and
/// returns exit_code::kOk when it passed, else the status to exit with (its status; 69 when it
/// gave none in time or died without one); nullopt when a SIGTERM/SIGINT ended the wait.
std::optional<int> WaitForNodeVerdict(const RunConfig& config, RunContext& ctx,
                                      const std::string& path);

// ---- remediation (launcher/run_remediation.cpp) --------------------------------------------
enum class RemediationTrigger { kPreflight, kWarmup, kPostMortem };
/// The job run root of the default layout (<dir>/safe-launch-runs/<job>/<node>), else "".
std::string JobRootForRemediation(const RunContext& ctx);
/// After this node's preflight refused the job, node 0's warm-up failed, or a post-mortem: the
/// job-level diagnosis (made here unless a post-mortem made it) -> Remediate(). Nothing with
/// --on-node-fault=report (the default) unless --dry-run.
void RemediationPhase(RunContext& ctx, RemediationTrigger trigger, double declared_unix,
                      const std::string& job_root);

// ---- hang detection (launcher/run_hang.cpp) ---------------------------------------------------
struct HangArgs;
/// Registers --stall-timeout, --on-hang on `sub`.
std::shared_ptr<HangArgs> AddHangOptions(CLI::App& sub);
/// Called after the Supervisor is constructed and before Run(): may edit sup.Options() (env such
/// as SAFE_LAUNCH_HEARTBEAT) and install hooks with sup.SetHooks(). Whatever it allocates must
/// live in the returned handle, which cmd_run keeps until the run is over. An Error aborts with
/// exit_code::kUsage before the job starts.
Result<std::shared_ptr<void>> AttachHangMonitor(const HangArgs& args, RunContext& ctx,
                                                watchdog::Supervisor& sup);
/// After the job: the post-mortem's run root ("" when none ran here) and when this node
/// declared the hang, from the handle AttachHangMonitor returned.
std::string PostMortemRoot(const std::shared_ptr<void>& monitor, double* declared_unix);
/// SIGRTMIN + this is the signal the job's Python processes register faulthandler on.
inline constexpr int kPythonStacksSignalOffset = 7;
/// Python stacks on demand for the environment plan (recipes::AddPythonStacks): safe-launch's
/// sitecustomize (shipped next to the binary) and `run_dir`/pystacks; nullopt with
/// --no-python-stacks, SAFE_LAUNCH_PYTHON_STACKS=0, or when the sitecustomize is not found.
std::optional<recipes::PythonStacks> PythonStacksFor(const HangArgs& args, const RunContext& ctx,
                                                     const std::string& run_dir);

}  // namespace sl::launcher
