#pragma once
// `safe-launch run`'s configuration: its flags (parsed and validated by CLI11), the job command
// and the job's layout, built once before any phase starts. Pure: BuildConfig reads only argv
// and the environment it is given, so every flag and launcher combination is a unit test.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/result.h"
#include "launcher/layout.h"
#include "warmup/topology.h"

namespace sl::launcher {

struct HangArgs;  // launcher/run_hang.cpp

/// The warm-up's settings (run_warmup.cpp).
struct WarmupConfig {
  bool skip = false;   ///< --no-warmup
  bool force = false;  ///< --warmup: also for a single-node job
  double timeout_s = 120;
  std::string on_fail = "abort";   ///< abort | warn
  std::string node_name;           ///< "" = the host name
  std::string backend = "auto";    ///< auto | nccl | gloo
  std::vector<std::string> waive;  ///< comparison ids (warmup.*) whose mismatches do not fail
  std::string skip_reason;         ///< why it is skipped when not --no-warmup ("" = not skipped)
};

/// --on-node-fault, --fault-threshold, --max-requeues, --dry-run as given (unset: "", -1); the
/// environment and the recipe's [slurm] fill the rest (ResolveRemediationPolicy).
struct RemediationFlags {
  std::string on_node_fault;
  double fault_threshold = -1;
  int max_requeues = -1;
  bool dry_run = false;
};

/// What `run` needs, decided before anything starts.
struct RunConfig {
  std::vector<std::string> command;  ///< the job, everything after --
  bool list = false;                 ///< --list: print the check and comparison ids, run nothing
  bool no_preflight = false;
  std::string on_preflight_fail = "abort";  ///< abort | warn
  std::string run_dir;
  double kill_grace_s = 25;  ///< below Slurm's default KillWait (30 s)
  std::string recipe;
  std::string sysroot;
  bool verbose = false;
  std::vector<std::string> waive;  ///< preflight check ids (the warm-up's are in warmup.waive)
  WarmupConfig warmup;
  /// The job's layout; absent with --no-warmup (nothing else needs it) and with --list.
  std::optional<warmup::Topology> topology;
  std::shared_ptr<HangArgs> hang;  ///< --stall-timeout, --on-hang (run_hang.cpp)
  RemediationFlags remediation;    ///< what to do about a node the diagnosis names
  /// --per-task: one safe-launch per launcher task is allowed; each gets its own run directory
  /// ("-rank<R>") and log prefix. Where several share a node, local rank 0 does the node's
  /// duties (preflight, the warm-up among the nodes) and the others wait for its verdict.
  bool per_task = false;
  std::vector<std::string> signal_ranks;  ///< --signal-ranks USR1,USR2
  LocalTasks tasks;  ///< what the launcher says about safe-launch processes on this node
  /// The launch's id that every task of the node sees (JobKey); set when --per-task tasks share
  /// the node, "" otherwise or when the launcher gives none (then every task is on its own).
  std::string job_key;

  /// Several --per-task tasks on this node coordinate through local rank 0's verdict.
  bool SharesNode() const { return per_task && tasks.count > 1 && !job_key.empty(); }
  /// This task does the node's duties: always, except a shared node's local ranks above 0.
  bool NodeLeader() const { return !SharesNode() || tasks.local_rank == 0; }
};

/// Where CLI11 stores `run`'s flags before ConfigFromFlags decides the rest.
struct RunFlags {
  RunConfig config;
  LayoutFlags layout;
  std::vector<std::string> waive;  ///< --waive as given: check and comparison ids mixed
};

/// Registers --on-node-fault, --fault-threshold, --max-requeues, --dry-run (run, remediate).
void AddRemediationOptions(CLI::App& app, RemediationFlags* flags);

/// Registers every `run` flag on `app`, with CLI11 validators for ranges and choices.
void AddRunOptions(CLI::App& app, RunFlags* flags);

/// The job command's presence, the --waive split (preflight checks / warm-up comparisons) and
/// the layout (unless --no-warmup). Errors name the flag, argument or variable and the fix.
Result<RunConfig> ConfigFromFlags(const RunFlags& flags, const Environment& env);

/// Parses `argv` (the arguments after `run`) with AddRunOptions, then ConfigFromFlags.
Result<RunConfig> BuildConfig(const std::vector<std::string>& argv, const Environment& env);

/// Seconds in [lo, hi] (or (lo, hi] when `lo_open`), for --kill-grace, --warmup-timeout,
/// --stall-timeout. A check lambda rather than CLI::Range, which lets "nan" through (every
/// comparison with NaN is false).
/// Values above 0 and below kMinSeconds are refused ("1e-300" is no timeout).
CLI::Validator SecondsValidator(double lo, double hi, bool lo_open);
inline constexpr double kMinSeconds = 0.001;

/// A value that must not be empty.
CLI::Validator NonEmptyValidator();

/// Every option of `app` and its subcommands that takes a value goes through a validator: those
/// with none of their own get NonEmptyValidator. Called once the commands are set up.
void ValidateEveryValue(CLI::App& app);

/// True when `id` selects a warm-up comparison (or a group of them).
bool IsComparisonId(const std::string& id);
/// True when `id` selects a preflight check or a warm-up comparison (as --waive does).
bool IsKnownId(const std::string& id);
/// "unknown check id 'x'" with "did you mean" over both tables; for --waive / --only errors.
Error UnknownIdError(const std::string& id, const std::string& flag, const std::string& list_cmd);

/// The --list text: every preflight check, then every warm-up comparison, "ID  SUMMARY" a line.
std::string ListText();

}  // namespace sl::launcher
