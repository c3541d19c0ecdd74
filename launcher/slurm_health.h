#pragma once
// `safe-launch preflight --slurm [--epilog]`: node health for the scheduler. As a Prolog or
// HealthCheckProgram the preflight's failing checks drain the node through `scontrol update
// state=drain reason=...` with the check id as the reason; as an Epilog the node is checked for
// what a job leaves behind (the epilog checks: gpu.leftover_procs, kernel.log since the job
// began). Parsers and decisions are pure; the scontrol calls are bounded child processes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/result.h"

namespace sl::launcher {

/// slurmctld keeps a node's reason whole, but slurmdbd records node events in a TINYTEXT
/// column (255 bytes, accounting_storage/mysql's event table) and sinfo's %E shows far less:
/// our reasons stay well below.
inline constexpr std::size_t kDrainReasonMaxBytes = 200;

/// "safe-launch: <check id>: <message>" with quotes, backslashes, newlines and control bytes
/// replaced by spaces, runs of spaces folded, cut (on a UTF-8 boundary, "..." appended) to at
/// most kDrainReasonMaxBytes. `more` > 0 appends " (+N more)" for the other failing checks.
std::string DrainReason(std::string_view check_id, std::string_view message, int more = 0);

/// What the reason says about `finding` (after "<check id>: "): its entity when the message does
/// not name it, then its message -- unless the finding's evidence includes an environment
/// variable (its message may quote the value): then the catalogued meaning of its code.
std::string ReasonText(const Finding& finding);

/// A node as `scontrol -o show node NAME` prints it.
struct SlurmNode {
  std::string state;   ///< "IDLE+DRAIN", "MIXED", "DOWN*+DRAIN", ... ("" when not found)
  std::string reason;  ///< without the "[user@time]" Slurm appends; "" when none
  /// Someone (a human, Slurm, an earlier safe-launch) took the node out already: DRAIN, DOWN or
  /// FAIL in its state. Its reason is theirs; we never overwrite it.
  bool out_of_service = false;
};

/// Parses one `scontrol -o show node` record (Reason= is last and may hold spaces).
SlurmNode ParseSlurmNode(std::string_view scontrol_output);

/// The job's StartTime (local time, as scontrol prints it) from `scontrol -o show job ID`, as
/// seconds since the epoch; nullopt when absent ("Unknown", "None") or malformed.
std::optional<std::int64_t> ParseJobStartTime(std::string_view scontrol_output);

/// Whether a (non-waived) finding takes the node out: every fail; in the epilog also the kernel
/// events that happened during the job and make the next job fail (any Xid, a link that went
/// down, mlx5 firmware command failures, uncorrected AER) although they are warnings before a
/// job (the event may be long past).
bool DrainsNode(const Finding& finding, bool epilog);

/// What `--slurm` did about the node, for stderr and the exit status.
struct DrainOutcome {
  bool drained = false;         ///< our reason was set
  bool already_out = false;     ///< the node was out of service already: left as it was
  std::string reason;           ///< ours
  std::string existing_reason;  ///< theirs, when already_out
  std::string error;            ///< scontrol failed or hung (the node may not be drained)
};

/// Drains `node` with `reason` unless it is out of service already (`scontrol -o show node`
/// first). Each scontrol call is killed after `timeout_ms`. `env` is passed to scontrol (its
/// SLURM_CONF); a missing PATH gets the system's default, as slurmd runs prologs without one.
DrainOutcome DrainNode(const std::string& node, const std::string& reason, const Environment& env,
                       int timeout_ms);

/// Runs `scontrol ARGS` (killed after `timeout_ms`; a missing PATH gets the system's default):
/// its stdout+stderr, or an error naming the command and what went wrong.
Result<std::string> RunScontrol(const std::vector<std::string>& args, const Environment& env,
                                int timeout_ms);

/// `scontrol -o show job ID` (bounded), for the job's start time in the epilog.
Result<std::string> ShowJob(const std::string& job_id, const Environment& env, int timeout_ms);

}  // namespace sl::launcher
