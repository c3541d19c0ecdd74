#pragma once
// HangMonitor: the detectors (hang signature in the output, stall of output or heartbeat, job
// failure) and the capture policy, plugged into the supervisor through SupervisorHooks.
//   on_output (pump threads): scan the lines against the catalog, remember the time; never blocks.
//   on_tick  (main thread):  check the stall timeout; when a detector fired, capture the bundle
//                            (collectors run in parallel, bounded by deadlines, <= ~10 s) and,
//                            with --on-hang=capture-and-stop, RequestStop(reason, kHang = 124).
//   on_exit  (main thread):  a job that failed on its own gets a post-mortem bundle too.
// With a peer channel (events_dir, watchdog/hang/peer_events.h) the monitor also posts "hang"
// when it declares one and "failure" when the job fails, captures on another node's "hang"
// notice (trigger peer_hang), and takes another node's earlier failure as the verdict.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/result.h"
#include "diagnose/signatures.h"
#include "diagnose/verdict.h"
#include "watchdog/hang/collectors.h"
#include "watchdog/hang/live_status.h"
#include "watchdog/hang/peer_events.h"
#include "watchdog/hang/ras_client.h"
#include "watchdog/supervisor.h"

namespace sl::hang {

enum class OnHang { kCaptureAndStop, kCaptureOnly };
/// "capture-and-stop" / "capture-only"; error names the value and the accepted ones.
Result<OnHang> ParseOnHang(std::string_view text);

struct HangOptions {
  /// Seconds without output (or heartbeat touch, once the job touched it); 0 disables.
  double stall_timeout_s = 600;
  OnHang on_hang = OnHang::kCaptureAndStop;
  std::string run_dir;         ///< where bundles go; "" disables bundles (detection still logs)
  std::string heartbeat_path;  ///< SAFE_LAUNCH_HEARTBEAT; "" = none
  Environment job_env;         ///< for redaction, PATH, NCCL_RAS_ADDR, NCCL_DEBUG_FILE
  std::vector<std::string> job_argv;
  std::string host;
  std::string proc_root = "/";  ///< root of /proc and /sys (tests)
  std::chrono::milliseconds fr_wait{6000};
  bool bundle_on_failure = true;
  // ---- coordination with the other nodes of the job (peer_events.h) ----
  std::string events_dir;  ///< <job run root>/.events; "" = no coordination
  std::string node;        ///< this node's name in events; "" = host
  std::string job_root;    ///< the job run root (the parent of run_dir) for the post-mortem
  std::chrono::milliseconds peer_poll{500};
  /// After a hang declared here: how long to wait for the other nodes' bundles, then run
  /// `diagnose_argv job_root`. 0 = neither.
  std::chrono::milliseconds post_mortem_wait{30000};
  std::vector<std::string> diagnose_argv;  ///< {"<own executable>", "diagnose"}; empty = none
  std::chrono::milliseconds diagnose_deadline{120000};
  int expected_nodes = 0;  ///< nodes of the job when known (SLURM_NNODES), else 0
};

/// How the verdict's exit status is chosen when a hang here follows another node's failure:
/// that node's job status when it is 1..255 (and not 124), else 1.
int PeerFailureExitStatus(const PeerEvent& failure);

/// The supervisor calls the monitor needs, as an interface so the monitor is testable alone.
class JobControl {
 public:
  virtual ~JobControl() = default;
  virtual pid_t JobPid() const = 0;
  virtual std::vector<pid_t> Descendants() const = 0;
  virtual std::vector<std::string> TailLines(int stream, std::size_t n) const = 0;
  virtual void RequestStop(std::string reason, int exit_status) = 0;
  virtual Result<HelperOutput> RunHelper(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds deadline) = 0;
  /// When the job was last heard from as the supervisor measures it (bytes read from its
  /// pipes; "now" while safe-launch's own stdout is blocked; re-armed after safe-launch was
  /// stopped). The epoch when unknown: then only the output the monitor saw counts.
  virtual watchdog::Clock::time_point LastOutput() const { return {}; }
};

/// JobControl backed by the real Supervisor.
std::unique_ptr<JobControl> MakeSupervisorControl(watchdog::Supervisor* supervisor);

/// What the last capture produced.
struct BundleInfo {
  std::string path;  ///< final directory, or the .partial one when incomplete
  std::string tar;   ///< final .tar.gz, "" when not written
  bool complete = false;
  std::string error;     ///< why incomplete
  std::string manifest;  ///< where the manifest of an incomplete bundle went ("" = nowhere)
  diagnose::Verdict verdict;
  double capture_s = 0;                    ///< detection to complete bundle
  std::optional<PeerEvent> peer_hang;      ///< the notice a peer_hang capture answered
  std::optional<PeerEvent> peer_failure;   ///< another node's earlier failure, taken as verdict
  std::optional<PeerEvent> local_failure;  ///< this node's rank failure the hang followed from
};

class HangMonitor {
 public:
  explicit HangMonitor(HangOptions options);
  ~HangMonitor();
  /// Must be set before the supervisor starts the job.
  void SetControl(std::unique_ptr<JobControl> control);
  /// Hooks for the supervisor; `inner` hooks (e.g. the launcher's own) are called first.
  watchdog::SupervisorHooks Hooks(watchdog::SupervisorHooks inner = {});

  void OnStart(pid_t job_pid);
  /// A block of whole lines of the job's output (see SupervisorHooks::on_output).
  void OnOutput(int stream, std::string_view lines, watchdog::Clock::time_point t);
  void OnTick(watchdog::Clock::time_point now);
  /// After the job ended (SupervisorHooks::on_ended): a job that failed after another node
  /// declared a hang reports that hang (trigger peer_hang, exit 124), not a failure of its own.
  void OnEnded(int wait_status);
  void OnExit(const watchdog::JobExit& exit);

  /// Captures now (used by the hooks; public for tests and `diagnose`).
  BundleInfo Capture(diagnose::Trigger trigger, std::optional<int> exit_status);

  std::optional<BundleInfo> LastBundle() const;
  bool HangDetected() const { return hang_detected_.load(); }
  /// The job-level post-mortem's run root, once `diagnose` ran there ("" = not run).
  const std::string& PostMortem() const { return post_mortem_; }
  /// When this node declared the hang (seconds since the epoch; 0 = none declared here).
  double DeclaredUnix() const { return declared_unix_; }

 private:
  void OnCandidateLine(int stream, std::string_view line, std::uint64_t line_no,
                       watchdog::Clock::time_point t);
  void Record(int stream, diagnose::Match m, std::uint64_t line_no, watchdog::Clock::time_point t);
  /// A line longer than kMaxHookLine comes in pieces: matches the bytes around the cut between
  /// the last piece (`tail`) and the block that continues it (`head`), for a signature that
  /// straddles it and so lies wholly in neither.
  void ScanSeam(int stream, std::string_view tail, std::string_view head, std::uint64_t line_no,
                watchdog::Clock::time_point t);
  /// Seconds the job has been silent at `now`, never negative (a pump may stamp a read after
  /// the tick took `now`).
  double SilentFor(watchdog::Clock::time_point now) const;
  /// What the collectors see of this job at a capture (`alive`: the job has not exited).
  std::shared_ptr<CaptureContext> MakeCaptureContext(bool alive);
  /// The verdict's timing, measured at the tick that detected the hang (`t0` when none did).
  diagnose::JobTiming CaptureTiming(diagnose::Trigger trigger, std::optional<int> exit_status,
                                    watchdog::Clock::time_point t0) const;
  /// Posts this node's event (a hang declared here, or the job's own failure) with a quick
  /// verdict; returns at once.
  void PostEvent(const char* kind, diagnose::Trigger trigger, std::optional<int> exit_status,
                 const PeerEvent* rank_failure = nullptr);
  /// Another node's root failure that this node's capture follows from (seen before `by_unix`
  /// plus a few seconds: a node posts when its torchrun exits, a little after the rank died).
  std::optional<PeerEvent> CausingFailure(double by_unix) const;
  /// After a hang declared here: waits for the other nodes' bundles, runs `diagnose job_root`.
  void RunPostMortem();
  /// While the job runs (events on): which pid is which rank, so that a rank torchrun reports
  /// failed ("failed (exitcode: 1) local_rank: 0 (pid: 4242)": the process is gone by then) is
  /// named by its global rank. Every 2 s at most.
  void RefreshRankPids(watchdog::Clock::time_point now);
  /// The rank failure torchrun reported while the job still runs, as an event ("" kind = none).
  std::optional<PeerEvent> LocalFailure() const;
  /// Publishes live.json (live_status.h): at once when `force` or the phase changed, else when
  /// the job printed since the last one (every kLiveBusyPeriod) or kLiveIdlePeriod passed.
  void PublishLive(watchdog::Clock::time_point now, const char* phase, bool force = false);

  HangOptions options_;
  std::unique_ptr<JobControl> control_;
  diagnose::LineMatcher matcher_;
  std::shared_ptr<diagnose::Evidence> evidence_;
  std::shared_ptr<std::mutex> evidence_mu_;
  std::atomic<std::int64_t> last_output_ns_{0};      // steady clock
  std::atomic<std::uint64_t> lines_[3] = {0, 0, 0};  // per stream; on_output is ordered per stream
  // Per stream, touched only by its pump: the last bytes of a block that ended inside a line
  // (a piece of a long line), kept to scan across the cut; empty when the block ended in '\n'.
  std::string seam_tail_[3];
  std::atomic<int> pending_{0};  // diagnose::Trigger value, 0 = none
  std::atomic<bool> hang_detected_{false};
  std::atomic<bool> captured_{false};
  watchdog::Clock::time_point start_;
  watchdog::Clock::time_point detected_at_{};  // the tick that fired; timing is measured there
  std::chrono::system_clock::time_point start_wall_;
  std::uint64_t start_monotonic_usec_ = 0;
  CounterSnapshot ib_start_;
  watchdog::Clock::time_point last_heartbeat_check_{};
  std::int64_t heartbeat_mtime_ns_ = 0;  // wall clock of the last touch, 0 = never touched
  std::string stall_source_;
  mutable std::mutex bundle_mu_;
  std::optional<BundleInfo> last_bundle_;
  std::unique_ptr<PeerChannel> peers_;
  std::optional<PeerEvent> peer_hang_;  // the notice being answered (main thread)
  bool peer_ended_ = false;     // the job ended before the notice was seen (OnEnded, main thread)
  bool declared_here_ = false;  // a hang declared by this node's own detectors
  double declared_unix_ = 0;
  bool stuck_logged_ = false;
  std::string post_mortem_;
  // A rank failure seen in the output (torchrun's "failed (exitcode: ...)" line), pump threads.
  struct RankFailure {
    double time_unix = 0;
    int exitcode = 0;
    int local_rank = -1;
    pid_t pid = 0;
    std::string source;      // stdout / stderr
    std::uint64_t line = 0;  // its line number there
  };
  mutable std::mutex rank_failure_mu_;
  std::optional<RankFailure> rank_failure_;
  std::map<pid_t, int> rank_by_pid_;  // main thread
  watchdog::Clock::time_point rank_pids_at_{};
  bool failure_posted_ = false;
  std::atomic<bool> hang_seen_{false};  // a hang signature was recorded (pump threads)
  // live.json (main thread, except last_event_ under evidence_mu_)
  std::unique_ptr<LiveWriter> live_;
  std::unique_ptr<Redactor> live_redactor_;
  LiveState live_state_;
  watchdog::Clock::time_point live_at_{};
  std::uint64_t live_lines_ = ~0ull;
  bool stop_requested_ = false;
  LiveState last_event_;  // only its event_* fields
};

}  // namespace sl::hang
