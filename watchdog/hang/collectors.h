#pragma once
// Collectors: one row per piece of evidence captured while the job is still alive (as ninja's
// tool table: id, what, deadline, function). RunCollectors runs them in parallel, each bounded by
// its deadline; a collector that runs over is recorded as "timeout" and abandoned -- its late
// writes are refused by the closed Bundle -- so none can block or kill the capture.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/file_reader.h"
#include "common/result.h"
#include "diagnose/verdict.h"
#include "watchdog/hang/bundle.h"
#include "watchdog/hang/ras_client.h"
#include "watchdog/hang/redact.h"

namespace sl::hang {

/// One local rank process (a descendant whose environment has RANK, not a forked worker of
/// another rank).
struct RankProc {
  pid_t pid = 0;
  int rank = -1;
  int local_rank = -1;
  Environment env;
};

/// Output of a helper program (py-spy, nvidia-smi) run with a deadline.
struct HelperOutput {
  int exit_status = -1;
  bool timed_out = false;
  std::string output;
};
using HelperRunner = std::function<Result<HelperOutput>(const std::vector<std::string>& argv,
                                                        std::chrono::milliseconds deadline)>;

/// IB counter values by sysfs path, taken at job start and at capture.
using CounterSnapshot = std::map<std::string, std::uint64_t>;
/// Reads every /sys/class/infiniband/*/ports/*/{counters,hw_counters}/* through `fs`.
CounterSnapshot ReadIbCounters(const FileReader& fs);
/// Per-port deltas as JSON; counters whose name says error/discard/downed and that grew are
/// listed under "error_deltas".
nlohmann::json IbCounterDeltas(const CounterSnapshot& start, const CounterSnapshot& now);

/// Kernel log records ("pri,seq,usec,flags;text" from /dev/kmsg) at or after `since_usec`
/// (CLOCK_MONOTONIC microseconds) whose text mentions mlx5/IB/RDMA/Xid/NVRM/link/PCIe AER.
std::string FilterKernelLog(std::string_view kmsg, std::uint64_t since_usec);

/// Everything the collectors may look at; built once per capture and shared read-only.
struct CaptureContext {
  std::string host;
  std::string run_dir;
  Environment job_env;
  std::vector<std::string> job_argv;
  pid_t job_pid = 0;
  bool job_alive = true;
  std::vector<RankProc> ranks;
  std::vector<pid_t> descendants;
  RasAddress ras;
  CounterSnapshot ib_start;
  std::uint64_t start_monotonic_usec = 0;
  std::chrono::system_clock::time_point start_wall;
  std::vector<std::string> stdout_tail, stderr_tail;
  HelperRunner run_helper;
  std::shared_ptr<const FileReader> fs;  ///< the live node ("/")
  std::shared_ptr<Redactor> redactor;
  /// Lines found in NCCL debug files are added here (under evidence_mu).
  std::shared_ptr<diagnose::Evidence> evidence;
  std::shared_ptr<const diagnose::LineMatcher> matcher;
  std::shared_ptr<std::mutex> evidence_mu;
  std::chrono::milliseconds fr_wait{6000};  ///< how long to wait for Flight Recorder dumps
  /// The kernel_log collector reads at most this much of /dev/kmsg (oldest record first) and
  /// says in node/kernel.log and its details when the log held more.
  std::size_t kmsg_max_bytes = std::size_t{16} << 20;
  /// The job's user (owner of /proc/<job_pid>; safe-launch's euid when unknown): only files it
  /// owns are taken from shared places (NCCL debug files).
  uid_t job_uid = 0;
  /// How long the python_stacks collector waits for the signalled ranks' faulthandler output.
  std::chrono::milliseconds pystacks_wait{3000};
};

struct CollectorOutcome {
  std::string status = "ok";  ///< ok | skipped | error | timeout
  std::string error;          ///< why, when not ok (skipped: why not applicable)
  std::uint64_t bytes = 0;
  std::vector<std::string> files;
  nlohmann::json details = nlohmann::json::object();
};

using CollectorFn = CollectorOutcome (*)(const CaptureContext& ctx, Bundle& bundle);

struct Collector {
  const char* id;
  const char* what;
  std::chrono::milliseconds deadline;
  CollectorFn fn;
};

/// The collector table.
std::span<const Collector> Collectors();

/// Runs `collectors` in parallel and returns the manifest's "collectors" array (id, what,
/// status, duration_s, bytes, files, error, details), in table order.
nlohmann::json RunCollectors(std::span<const Collector> collectors,
                             std::shared_ptr<const CaptureContext> ctx,
                             std::shared_ptr<Bundle> bundle);

/// Finds the rank processes among `pids` by reading /proc/<pid>/environ through `fs`.
std::vector<RankProc> FindRanks(const FileReader& fs, const std::vector<pid_t>& pids);

/// The NCCL debug files this job wrote: NCCL_DEBUG_FILE of each rank expanded as NCCL does (%h =
/// host name up to the first '.', %p = that rank's pid, %% = '%'), the job's own value expanded
/// for the job and every descendant, plus nccl* in the run directory. A candidate is kept only
/// when it is a regular file (lstat: a link is never followed), owned by `uids`, and modified
/// since the job started (ctx.start_wall, 1 s slack for coarse timestamps): so
/// NCCL_DEBUG_FILE=/etc/shadow or /tmp/nccl.%h.%p.log cannot pull in files of the system, of
/// other users or of old jobs.
std::vector<std::string> NcclDebugFiles(const CaptureContext& ctx, const std::set<uid_t>& uids);

/// NCCL_DEBUG_FILE's pattern with %h, %p and %% expanded as NCCL's debug.cc does (%h is the host
/// name up to its first '.'; any other %-sequence is kept as it is).
std::string ExpandNcclDebugFile(std::string_view pattern, std::string_view host, pid_t pid);

/// NUL-separated /proc/<pid>/environ or cmdline text into a map / argv.
Environment ParseEnviron(std::string_view text);
std::vector<std::string> ParseCmdline(std::string_view text);

/// Whether /proc/<pid>/status text says the process catches signal `sig` (SigCgt's bit sig-1):
/// the python_stacks collector sends its real-time signal only then, since an uncaught one kills.
bool CatchesSignal(std::string_view proc_status, int sig);

}  // namespace sl::hang
