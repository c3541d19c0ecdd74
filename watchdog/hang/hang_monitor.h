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
// The pieces: output_scan.h (the catalog scan of each block), stall_detector.h (the pure
// decision of a tick), capture.h (the bundle), peer_coordinator.h and peer_verdict.h (the other
// nodes), post_mortem.h (the job-level diagnosis); this file wires them to the hooks and keeps
// the exit-status policy.
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
#include "watchdog/hang/capture.h"
#include "watchdog/hang/collectors.h"
#include "watchdog/hang/job_control.h"
#include "watchdog/hang/live_status.h"
#include "watchdog/hang/output_scan.h"
#include "watchdog/hang/peer_coordinator.h"
#include "watchdog/hang/peer_events.h"
#include "watchdog/hang/post_mortem.h"
#include "watchdog/hang/ras_client.h"
#include "watchdog/hang/stall_detector.h"
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
  /// After a hang declared here: how long to wait for the other nodes' bundles, then diagnose
  /// job_root (post_mortem.h). 0 = neither.
  std::chrono::milliseconds post_mortem_wait{30000};
  /// The in-process diagnosis of the job run root (the launcher composes it from diagnose/);
  /// empty = none. Runs in a forked child bounded by diagnose_deadline.
  DiagnoseRoot diagnose_root;
  std::chrono::milliseconds diagnose_deadline{120000};
  int expected_nodes = 0;  ///< nodes of the job when known (SLURM_NNODES), else 0
};

/// How the verdict's exit status is chosen when a hang here follows another node's failure:
/// that node's job status when it is 1..255 (and not 124), else 1.
int PeerFailureExitStatus(const PeerEvent& failure);

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
  /// A match of the output (OutputScanner's callback, pump threads).
  void Record(int stream, diagnose::Match m, std::uint64_t line_no, watchdog::Clock::time_point t);
  /// When the job was last heard from: its output here or the supervisor's measure.
  watchdog::Clock::time_point LastHeard() const;
  /// Seconds the job has been silent at `now`, never negative (a pump may stamp a read after
  /// the tick took `now`).
  double SilentFor(watchdog::Clock::time_point now) const;
  /// What the stall detector is told at `now` (the heartbeat file is stat()ed every 1 s).
  StallObservations Observe(watchdog::Clock::time_point now);
  /// The capture of a tick that fired, and the exit-status policy: a hang that follows a
  /// failure (another node's, or this node's rank) is that failure's consequence, not 124.
  void Declare(diagnose::Trigger trigger, watchdog::Clock::time_point now);
  /// What the collectors see of this job at a capture (`alive`: the job has not exited).
  std::shared_ptr<CaptureContext> MakeCaptureContext(bool alive);
  /// The verdict's timing, measured at the tick that detected the hang (`t0` when none did).
  diagnose::JobTiming CaptureTiming(diagnose::Trigger trigger, std::optional<int> exit_status,
                                    watchdog::Clock::time_point t0) const;
  /// The verdict so far on a snapshot of the evidence (no collectors), for a peer event.
  diagnose::Verdict QuickVerdict(diagnose::Trigger trigger, std::optional<int> exit_status) const;
  /// Publishes live.json (live_status.h): at once when `force` or the phase changed, else when
  /// the job printed since the last one (every kLiveBusyPeriod) or kLiveIdlePeriod passed.
  void PublishLive(watchdog::Clock::time_point now, const char* phase, bool force = false);

  HangOptions options_;
  std::unique_ptr<JobControl> control_;
  diagnose::LineMatcher matcher_;
  OutputScanner scanner_;
  StallDetector detector_;
  PeerCoordinator peers_;
  std::shared_ptr<diagnose::Evidence> evidence_;
  std::shared_ptr<std::mutex> evidence_mu_;
  std::atomic<std::int64_t> last_output_ns_{0};  // steady clock
  std::atomic<bool> signature_{false};  // a hang signature fired the detector (pump threads)
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
  bool declared_here_ = false;  // a hang declared by this node's own detectors
  double declared_unix_ = 0;
  std::string post_mortem_;
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
