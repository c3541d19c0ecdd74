#pragma once
// The supervisor loop (as tini does it): starts the job through sl::Spawn in its own process group,
// becomes a child subreaper, forwards signals, pumps the job's stdout/stderr through unchanged
// while splitting them into lines for hooks, escalates stops to every descendant (torchrun
// setsid's its workers, so a process group is not enough), reaps every child and reports the
// job's status.
//
// Threads (the contract hooks rely on):
//   * main thread  = the thread that calls Supervisor::Run(). It waits on a signalfd with a short
//     tick, forwards signals, reaps, runs the escalation, and calls on_start, on_tick, on_exit.
//   * pump threads = one per stream (stdout, stderr). Each calls on_output for its stream, in
//     order. on_output for stdout and stderr may run concurrently with each other and on_tick:
//     hooks share state through their own atomics/mutexes.
//   * any thread may call RequestStop, JobPid, Descendants, LastOutput, TailLines, RunHelper.
// Cost while the job runs: the main thread sleeps in poll() until a signal, a stop request or the
// tick (default 250 ms); per read (up to a pipe's worth, 1 MiB) the pump does one memrchr to cut
// at the last newline and, only when on_output is set, one call with every whole line read so far
// (no per-line work in the pump: a matcher scans the block at once). Keep on_output cheap (scan,
// set a flag); do heavy work (bundle capture) in on_tick.
// on_tick may block for seconds: signals stay queued meanwhile and are handled afterwards.
//
// Children: the supervisor reaps *every* child of this process (waitpid(-1)), because orphaned
// descendants are re-parented to us as subreaper. Hooks that need to run a program (py-spy,
// nvidia-smi) must use RunHelper(), not fork/popen/Boost.Process, or their status is stolen.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/result.h"
#include "common/strings.h"

namespace sl::watchdog {

using Clock = std::chrono::steady_clock;

/// Stream numbers as file descriptors: 1 = stdout, 2 = stderr.
inline constexpr int kStdout = 1;
inline constexpr int kStderr = 2;

/// How the job ended, as seen when the main child was reaped.
struct JobExit {
  enum class How { kExited, kSignaled, kExecFailed, kNotStarted };
  How how = How::kNotStarted;
  int code = -1;        ///< exit code when kExited / kExecFailed (126, 127)
  int signal = 0;       ///< signal number when kSignaled
  int exit_status = 0;  ///< what safe-launch exits with: code, 128+signal, or a stop override
  std::string message;  ///< exec failure text, or why it was not started
  /// Stop bookkeeping: empty when the job ended on its own.
  std::string stopped_by;      ///< "signal SIGTERM from pid 812 (slurmstepd)", "hang detector", ...
  std::string stop_reason;     ///< free text given to RequestStop, or "forwarded SIGTERM"
  nlohmann::json stop_detail;  ///< what on_stop_signal returned (null when none)
  bool escalated = false;      ///< the grace ran out and descendants got TERM/KILL
  std::vector<pid_t> swept;    ///< descendants that were still alive after the job and got killed
  Clock::time_point started;
  Clock::time_point ended;
};

/// Hooks, all optional. See the thread contract at the top of this file.
struct SupervisorHooks {
  /// Main thread, right after the job was started (before the first tick).
  std::function<void(pid_t job_pid)> on_start;
  /// Pump thread of `stream` (kStdout/kStderr): a block of one or more whole lines, each ending in
  /// '\n', exactly the bytes the job wrote (a trailing '\r' is kept). A line longer than
  /// kMaxHookLine bytes is delivered in pieces of kMaxHookLine bytes without '\n', each piece
  /// alone in its block; the final unterminated line comes alone, without '\n', at end of
  /// stream. So every block either ends in '\n' or is one piece. `t` is when the bytes were read.
  /// sl::ForEachLine() (common/strings.h) splits a block.
  std::function<void(int stream, std::string_view lines, Clock::time_point t)> on_output;
  /// Main thread, every tick while the job runs (and during the stop grace).
  std::function<void(Clock::time_point now)> on_tick;
  /// Main thread, once, after the job ended and its output drained, before its exit is made: a
  /// last RequestStop() here still sets the exit status and stop reason (a job that died
  /// because another node's hang capture stopped its peers is that hang, not a failure).
  /// `wait_status` is the job's raw waitpid() status (0 when it could not be started).
  std::function<void(int wait_status)> on_ended;
  /// Main thread, once, after the job exited, descendants were swept and output drained.
  std::function<void(const JobExit& exit)> on_exit;
  /// Main thread, once, at the first stop signal (SIGTERM/SIGINT from outside), *before* it is
  /// forwarded to the job: a hung job can still be captured, a scheduler asked why it stops.
  /// May block for a bounded time (the grace is counted from the signal's arrival). What it
  /// returns (an object, or null) goes into status.json as stop.detail.
  std::function<nlohmann::json(int signal, long sender_pid)> on_stop_signal;
};

inline constexpr std::size_t kMaxHookLine = 64 * 1024;

struct SupervisorOptions {
  std::vector<std::string> argv;  ///< the job's command; argv[0] is searched in env's PATH
  Environment env;                ///< the job's whole environment (the plan already applied)
  std::string run_dir;            ///< "" = write nothing; else status.json, stdout.tail, ...
  /// Forward the job's output with read/write even where tee/splice would do (for comparison;
  /// SAFE_LAUNCH_OUTPUT_COPY=1 in `run`).
  bool forward_by_copy = false;
  /// After the first TERM, before killing all. Below Slurm's default KillWait (30 s): Slurm
  /// SIGKILLs the step KillWait after its SIGTERM, and our sweep must come first.
  std::chrono::milliseconds kill_grace{25000};
  /// Main-loop wake-up when nothing happens (signals and stop requests wake it at once).
  std::chrono::milliseconds tick{250};
  /// After the job exits (or the grace ran out), how long descendants get between TERM and KILL.
  std::chrono::milliseconds sweep_grace{2000};
  std::size_t tail_lines = 200;  ///< last lines of each stream kept in the run directory
  /// Signal the direct child gets if safe-launch dies (PR_SET_PDEATHSIG). SIGTERM so that
  /// torchrun can still stop its workers; see doc/manual.md for what remains uncovered.
  int parent_death_signal = 15;
  /// Signals (e.g. SIGUSR1 for a checkpoint) delivered to every descendant (the rank processes
  /// torchrun started), not only to the job's own process (--signal-ranks).
  std::vector<int> signal_ranks;
  /// Merged into status.json at top level (cmd_run puts the preflight verdict and plan here).
  nlohmann::json status_extra = nlohmann::json::object();
};

/// Output of a program run through Supervisor::RunHelper.
struct HelperResult {
  int exit_status = -1;  ///< code, or 128+signal; -1 when killed at the deadline
  bool timed_out = false;
  std::string output;  ///< stdout and stderr together, truncated at max_output
};

class Supervisor {
 public:
  Supervisor(SupervisorOptions options, SupervisorHooks hooks);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  /// Replaces the hooks; only before Run(). Lets a hook object hold a Supervisor& (RequestStop).
  void SetHooks(SupervisorHooks hooks) { hooks_ = std::move(hooks); }
  /// The hooks, before Run(), to add one to those already set.
  SupervisorHooks& Hooks() { return hooks_; }
  /// The options, before Run() (e.g. to add SAFE_LAUNCH_HEARTBEAT to env).
  SupervisorOptions& Options() { return options_; }

  /// Starts the job and supervises it to the end. Returns an Error only when the job could not be
  /// started at all for reasons of our own (pipe/fork failed); exec failures of the command are a
  /// JobExit with kExecFailed and 126/127. Call BlockSupervisorSignals() first, as early as
  /// possible (before any thread exists), or Run() blocks them itself.
  Result<JobExit> Run();

  /// Asks to stop the job: TERM to the job now, then after kill_grace TERM and KILL to every
  /// descendant. `exit_status` (e.g. exit_code::kHang) replaces the job's status as safe-launch's
  /// exit status. Thread-safe, returns at once; the first request's reason wins.
  void RequestStop(std::string reason, std::optional<int> exit_status = std::nullopt,
                   std::string requested_by = "safe-launch");

  /// The job's pid (the direct child), 0 before it started. Thread-safe.
  pid_t JobPid() const { return job_pid_.load(); }
  /// Every live descendant of safe-launch (job, workers, setsid'd grandchildren, orphans
  /// re-parented to us), excluding RunHelper children. Walks /proc; thread-safe.
  std::vector<pid_t> Descendants() const;
  /// Directory for status.json etc.; "" when none.
  const std::string& RunDir() const { return options_.run_dir; }
  /// When the job was last heard from: the last bytes read from its pipes (any stream), the
  /// start time before its first byte; "now" while a pump is blocked writing to our own
  /// stdout/stderr (a slow consumer is not the job's silence); re-armed when the loop finds it
  /// did not run for a while (safe-launch stopped, VM paused). Thread-safe.
  Clock::time_point LastOutput() const;
  Clock::time_point StartTime() const;
  /// The last `n` lines of a stream (kStdout/kStderr), oldest first. Thread-safe.
  std::vector<std::string> TailLines(int stream, std::size_t n) const;
  /// Runs a short program (argv[0] searched in PATH) as our child through sl::Spawn with stdin
  /// /dev/null, stdout and stderr captured; killed at `deadline`. Safe from any thread, including
  /// hooks on the main thread. Never touched by the sweep. An Error when it could not be forked
  /// (ulimit -u, pids.max) or exec'd: the caller degrades, nothing else stops.
  Result<HelperResult> RunHelper(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds deadline,
                                 std::size_t max_output = 4u << 20);

  struct Impl;

 private:
  SupervisorOptions options_;
  SupervisorHooks hooks_;
  std::atomic<pid_t> job_pid_{0};
  std::unique_ptr<Impl> impl_;
};

/// Blocks the signals the supervisor handles (TERM, INT, HUP, QUIT, USR1, USR2, WINCH, ALRM, CHLD,
/// PIPE) in the calling thread (sl::BlockLoopSignals); threads created afterwards inherit the
/// mask. Call it first thing in `run` so that a signal arriving during preflight is queued, not
/// fatal; the phases' waits (common/spawn.h) take SIGTERM/SIGINT from the queue. Idempotent.
void BlockSupervisorSignals();

/// "SIGTERM" for 15; "signal 77" when unknown.
std::string SignalName(int signal);

}  // namespace sl::watchdog
