#pragma once
// The one way safe-launch starts a child (the job, collector helpers, warm-up ranks, the python
// version probe), and the one wait that every phase uses so that a SIGTERM/SIGINT is seen within
// a tick whatever safe-launch is doing.
//
// Spawn() is tini's fork: everything is built before fork, the child makes only
// async-signal-safe calls (PDEATHSIG, process group, fds, the mask safe-launch started with,
// execve over the PATH candidates) and reports an exec failure's errno through a CLOEXEC pipe,
// so 126 is told from 127. Spawn() never waits for the child: the caller's loop reaps it.
//
// Stop signals: SIGTERM and SIGINT stay blocked in every thread (BlockLoopSignals), so they
// queue instead of killing us. A wait (WaitChildren, RunChild) takes them from the queue within
// one tick and latches the first one (StopSignalSeen), so the launcher can end the phase, write
// status.json and exit 128+S. The supervisor's own loop reads them through its signalfd.
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/result.h"

namespace sl {

/// Fd values for SpawnSpec's stdio fields besides a real fd.
inline constexpr int kInheritFd = -1;  ///< keep ours
inline constexpr int kDevNullFd = -2;  ///< /dev/null

/// Everything a child needs.
struct SpawnSpec {
  std::vector<std::string> argv;  ///< argv[0] without '/' is searched in env's PATH, as execvp
  Environment env;                ///< the child's whole environment
  int stdin_fd = kDevNullFd;
  int stdout_fd = kInheritFd;
  int stderr_fd = kInheritFd;
  bool own_process_group = false;  ///< setpgid(0, 0): the child leads a new process group
  int death_signal = 0;            ///< PR_SET_PDEATHSIG; 0 = none
};

/// A started (or failed-to-exec) child. It must be reaped by the caller even when exec failed.
struct SpawnedChild {
  pid_t pid = 0;
  int exec_errno = 0;         ///< 0 = exec succeeded; else why every candidate failed
  std::string path_searched;  ///< the PATH used when argv[0] had no '/' ("" otherwise)
  /// 127 for "not found" errnos (ENOENT, ENOTDIR, ENAMETOOLONG), 126 for others, 0 on success.
  int ExecExitCode() const;
};

/// Forks and execs `spec`. Error only when the fork (or its pipe) failed: the message names the
/// command and the fix (ulimit -u, memory). Safe from any thread.
Result<SpawnedChild> Spawn(const SpawnSpec& spec);

/// The candidates execve is tried on, in order, and the PATH searched ("" when `file` has '/').
/// Pure. Empty PATH elements mean the current directory, as in execvp.
std::vector<std::string> ExecCandidates(const std::string& file, const Environment& env,
                                        std::string* path_searched = nullptr);

/// Blocks `signals` in the calling thread (threads created afterwards inherit it) and remembers,
/// the first time, the mask safe-launch started with: that mask is what Spawn() gives children.
/// Idempotent; signals may be added by later calls.
void BlockLoopSignals(const std::vector<int>& signals);

/// The mask children get: the one before the first BlockLoopSignals, else the current mask.
sigset_t ChildSignalMask();

/// A SIGTERM or SIGINT and who sent it.
struct StopSignal {
  int signal = 0;
  pid_t from_pid = 0;  ///< 0 = the terminal or the kernel
};

/// Takes a queued (blocked, pending) SIGTERM/SIGINT without waiting, latches the first one ever
/// taken and returns it. std::nullopt when none is queued. Thread-safe.
std::optional<StopSignal> TakeStopSignal();

/// The first stop signal taken so far (by TakeStopSignal or a wait), if any. Thread-safe.
std::optional<StopSignal> StopSignalSeen();

/// Forgets the latched stop signal (unit tests; a caller that has fully handled it).
void ClearStopSignal();

/// How one waited-for child ended.
struct ChildEnd {
  pid_t pid = 0;
  int wait_status = 0;  ///< raw waitpid status
  bool killed = false;  ///< we killed it (deadline or stop signal)
};

/// What a wait ended with.
struct WaitOutcome {
  std::vector<ChildEnd> ends;         ///< same order as the pids given
  bool deadline_passed = false;       ///< children left at `deadline` were killed
  std::optional<StopSignal> stopped;  ///< a SIGTERM/SIGINT ended the wait
};

/// A child that ended, as the kernel reported it.
struct Reaped {
  pid_t pid = 0;
  int wait_status = 0;  ///< raw waitpid status
};

/// The one waitpid of safe-launch: reaps `pid` (-1: any child) when it has ended, without
/// blocking. std::nullopt while it runs, or when there is no such child (then `no_child` is set:
/// ECHILD, e.g. another reaper got it first).
std::optional<Reaped> TryReap(pid_t pid = -1, bool* no_child = nullptr);

/// How WaitChildren waits.
struct WaitPolicy {
  std::chrono::milliseconds tick{100};
  /// After a stop signal: TERM to the children still running, KILL this much later.
  std::chrono::milliseconds stop_grace{1000};
  /// Take SIGTERM/SIGINT from the queue (and wake on SIGCHLD) when they are blocked. False on a
  /// thread beside the supervisor's loop, whose signalfd owns them: only the deadline ends the
  /// wait there, and the tick paces it.
  bool take_signals = true;
  /// Set: a stop signal does not end the wait at once but leaves the children this much time
  /// (the deadline comes forward), then they are killed and the wait reports the stop. For work
  /// that is worth finishing after the job was stopped (the post-mortem's diagnosis: Slurm's
  /// KILL follows its TERM by KillWait, 30 s by default).
  std::optional<std::chrono::milliseconds> stop_leaves{};
  /// The children lead their own process groups: the deadline's KILL goes to each group.
  bool kill_groups = false;
  /// How a child's end is learnt: its raw wait status, or std::nullopt while it runs. Empty:
  /// TryReap. (The supervisor's helpers: its loop's waitpid(-1) may have reaped one first.)
  std::function<std::optional<int>(pid_t)> reap{};
};

/// Waits for every pid in `pids` (children of this process) to end, reaping only those. Wakes
/// on SIGCHLD when it is blocked, else every tick. A stop signal (TakeStopSignal) sends TERM to
/// the children still running, then KILL after the stop grace; `deadline` KILLs them. Always
/// returns with every child reaped.
WaitOutcome WaitChildren(const std::vector<pid_t>& pids,
                         std::chrono::steady_clock::time_point deadline, const WaitPolicy& policy);
inline WaitOutcome WaitChildren(
    const std::vector<pid_t>& pids, std::chrono::steady_clock::time_point deadline,
    std::chrono::milliseconds tick = std::chrono::milliseconds(100),
    std::chrono::milliseconds stop_grace = std::chrono::milliseconds(1000)) {
  return WaitChildren(pids, deadline, WaitPolicy{.tick = tick, .stop_grace = stop_grace});
}

/// Result of RunChild.
struct RunChildResult {
  int exit_status = -1;  ///< code, or 128+signal; -1 when killed by us
  bool timed_out = false;
  std::optional<StopSignal> stopped;  ///< a SIGTERM/SIGINT ended it early
  std::string output;                 ///< its stdout (stderr too when asked), up to max_output
  int exec_errno = 0;
};

/// Runs a short program with stdin /dev/null and stdout captured (stderr too, or /dev/null) to
/// its end, its `deadline` or a stop signal, whichever is first; the child is always reaped.
/// The child leads its own process group and gets PR_SET_PDEATHSIG (SIGKILL unless the spec
/// says another): at the deadline or a stop signal its whole group is killed, and it dies with
/// safe-launch.
/// Not for use under the supervisor's loop (which reaps every child): use RunHelper there.
Result<RunChildResult> RunChild(SpawnSpec spec, std::chrono::milliseconds deadline,
                                bool capture_stderr = false, std::size_t max_output = 1u << 20,
                                std::chrono::milliseconds tick = std::chrono::milliseconds(100));

/// Runs `fn` in a forked child to its end, its `deadline` or (when `policy` takes signals) a
/// stop signal, whichever is first, and reaps it: for a library call that may hang (a dead file
/// system) and must not hold the caller -- unlike a thread, a child can be killed. The child has
/// stdin, stdout and stderr on /dev/null, leads its own process group (killed whole), dies with
/// safe-launch (PR_SET_PDEATHSIG) and exits with fn's return (70 when it threw). Only the
/// calling thread exists in the child: `fn` must not wait for a lock another thread may hold
/// (a deadlock there ends at the deadline). Error only when fork failed.
Result<RunChildResult> RunCallInChild(const std::function<int()>& fn,
                                      std::chrono::milliseconds deadline, WaitPolicy policy = {});

}  // namespace sl
