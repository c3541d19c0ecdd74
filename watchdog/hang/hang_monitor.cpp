#include "watchdog/hang/hang_monitor.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/exit_codes.h"
#include "common/log.h"
#include "watchdog/hang/peer_verdict.h"

namespace sl::hang {

using watchdog::Clock;

Result<OnHang> ParseOnHang(std::string_view text) {
  if (text == "capture-and-stop") return OnHang::kCaptureAndStop;
  if (text == "capture-only") return OnHang::kCaptureOnly;
  return MakeError(fmt::format("unknown --on-hang value '{}'", text), "--on-hang",
                   "use capture-and-stop (default) or capture-only");
}

int PeerFailureExitStatus(const PeerEvent& failure) {
  const int s = failure.exit_status.value_or(1);
  return s >= 1 && s <= 255 && s != exit_code::kHang ? s : 1;
}

namespace {

std::uint64_t MonotonicUsec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

// The owner of /proc/<pid> (the job may have changed user); our euid when it is gone.
uid_t JobUid(pid_t pid) {
  struct stat st {};
  if (pid > 0 && ::stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0) return st.st_uid;
  return ::geteuid();
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t Ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

PeerCoordinatorOptions CoordinatorOptions(const HangOptions& o) {
  PeerCoordinatorOptions p;
  p.events_dir = o.events_dir;
  p.node = o.node.empty() ? (o.host.empty() ? log::HostName() : o.host) : o.node;
  p.poll = o.peer_poll;
  p.job_env = o.job_env;
  p.job_argv = o.job_argv;
  p.proc_root = o.proc_root;
  return p;
}

}  // namespace

HangMonitor::HangMonitor(HangOptions options)
    : options_(std::move(options)),
      scanner_(matcher_, [this](int stream, diagnose::Match m, std::uint64_t line_no,
                                Clock::time_point t) { Record(stream, std::move(m), line_no, t); }),
      detector_(options_.stall_timeout_s),
      peers_(CoordinatorOptions(options_),
             [this](diagnose::Trigger t, std::optional<int> s) { return QuickVerdict(t, s); }),
      evidence_(std::make_shared<diagnose::Evidence>()),
      evidence_mu_(std::make_shared<std::mutex>()) {
  start_ = Clock::now();
  start_wall_ = std::chrono::system_clock::now();
  start_monotonic_usec_ = MonotonicUsec();
  last_output_ns_ = Ns(start_);
  if (options_.host.empty()) options_.host = log::HostName();
}

HangMonitor::~HangMonitor() = default;

void HangMonitor::SetControl(std::unique_ptr<JobControl> control) {
  control_ = std::move(control);
  peers_.SetControl(control_.get());
}

watchdog::SupervisorHooks HangMonitor::Hooks(watchdog::SupervisorHooks inner) {
  watchdog::SupervisorHooks h;
  h.on_start = [this, f = inner.on_start](pid_t pid) {
    if (f) f(pid);
    OnStart(pid);
  };
  h.on_output = [this, f = inner.on_output](int stream, std::string_view lines,
                                            Clock::time_point t) {
    if (f) f(stream, lines, t);
    OnOutput(stream, lines, t);
  };
  h.on_tick = [this, f = inner.on_tick](Clock::time_point now) {
    if (f) f(now);
    OnTick(now);
    PublishLive(now, stop_requested_ ? "stopping" : "running");
  };
  h.on_ended = [this, f = inner.on_ended](int wait_status) {
    if (f) f(wait_status);
    OnEnded(wait_status);
  };
  h.on_exit = [this, f = inner.on_exit](const watchdog::JobExit& e) {
    OnExit(e);
    if (f) f(e);
  };
  return h;
}

void HangMonitor::OnStart(pid_t) {
  start_ = Clock::now();
  start_wall_ = std::chrono::system_clock::now();
  start_monotonic_usec_ = MonotonicUsec();
  last_output_ns_ = Ns(start_);
  RootedFileReader fs(options_.proc_root == "/" ? "" : options_.proc_root);
  ib_start_ = ReadIbCounters(fs);  // a few hundred small sysfs reads, once
  peers_.Start(start_wall_);
  if (!options_.run_dir.empty() && !live_) {
    live_ = std::make_unique<LiveWriter>(options_.run_dir);
    live_redactor_ = std::make_unique<Redactor>(options_.job_env);
    live_redactor_->LearnArgv(options_.job_argv);
    PublishLive(start_, "running", true);
  }
}

void HangMonitor::OnOutput(int stream, std::string_view lines, Clock::time_point t) {
  last_output_ns_.store(Ns(t), std::memory_order_relaxed);
  scanner_.Feed(stream, lines, t);
}

void HangMonitor::Record(int stream, diagnose::Match m, std::uint64_t line_no,
                         Clock::time_point t) {
  m.source = stream == watchdog::kStderr ? "stderr" : "stdout";
  m.at_s = std::chrono::duration<double>(t - start_).count();
  bool hang = m.signature->severity == diagnose::Severity::kHang;
  if (hang) hang_seen_ = true;
  if (!hang_seen_.load() && !captured_.load()) peers_.NoteMatch(m, stream, line_no);
  {
    std::lock_guard lock(*evidence_mu_);
    m.line_number = line_no;
    last_event_.event_signature = m.signature->id;
    last_event_.event_category = std::string(m.signature->category);
    last_event_.event_severity = std::string(diagnose::SeverityName(m.signature->severity));
    last_event_.event_line = std::string(m.line.substr(0, 300));
    last_event_.event_unix = WallSeconds();
    evidence_->Add(std::move(m));
  }
  if (hang && !captured_.load()) signature_ = true;
}

Clock::time_point HangMonitor::LastHeard() const {
  auto last = Clock::time_point(std::chrono::nanoseconds(last_output_ns_.load()));
  return control_ ? std::max(last, control_->LastOutput()) : last;
}

double HangMonitor::SilentFor(Clock::time_point now) const {
  return std::max(0.0, std::chrono::duration<double>(now - LastHeard()).count());
}

StallObservations HangMonitor::Observe(Clock::time_point now) {
  StallObservations o;
  o.signature = signature_.load();
  o.last_output = LastHeard();
  if (!options_.heartbeat_path.empty() && now - last_heartbeat_check_ >= std::chrono::seconds(1)) {
    last_heartbeat_check_ = now;
    const auto start_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(start_wall_.time_since_epoch());
    if (auto t = HeartbeatTouchNs(options_.heartbeat_path, start_ns.count()))
      heartbeat_mtime_ns_ = *t;
  }
  if (heartbeat_mtime_ns_ != 0) o.heartbeat_ns = heartbeat_mtime_ns_;
  o.wall_now_ns = WallNs();
  return o;
}

void HangMonitor::OnTick(Clock::time_point now) {
  peers_.OnTick(now, captured_.load());
  if (captured_.load()) return;
  StallObservations o = Observe(now);
  std::optional<PeerEvent> notice = peers_.FirstNotice();
  o.peer_notice = notice.has_value();
  const StallDecision d = detector_.On(o, now);
  if (!d.source.empty()) stall_source_ = d.source;
  if (d.trigger == diagnose::Trigger::kNone) return;
  if (d.trigger == diagnose::Trigger::kPeerHang) {
    // Another node declared a hang: capture now, while this node's ranks are still in it.
    peers_.Answer(std::move(*notice));
  }
  Declare(d.trigger, now);
}

void HangMonitor::Declare(diagnose::Trigger trigger, Clock::time_point now) {
  hang_detected_ = true;
  detected_at_ = now;
  if (trigger != diagnose::Trigger::kPeerHang) {
    declared_here_ = true;
    declared_unix_ = WallSeconds();
    // Before the capture: the other nodes start theirs while this one runs its collectors.
    peers_.PostHang(trigger);
  }
  BundleInfo info = Capture(trigger, std::nullopt);
  if (options_.on_hang == OnHang::kCaptureAndStop && control_) {
    // A hang that follows another node's failure is that failure's consequence: not 124.
    const int status = info.peer_failure    ? PeerFailureExitStatus(*info.peer_failure)
                       : info.local_failure ? PeerFailureExitStatus(*info.local_failure)
                                            : exit_code::kHang;
    control_->RequestStop("hang detected: " + info.verdict.headline, status);
    stop_requested_ = true;
  }
  PublishLive(Clock::now(), stop_requested_ ? "stopping" : "running", true);
}

void HangMonitor::OnEnded(int wait_status) {
  // The job ended before this node heard of another node's hang: its ranks most likely died of
  // that node's capture stopping their peers ("Connection closed by peer" in Gloo/NCCL) within
  // the poll interval. One last read, bounded: a hang posted before now is the cause, and this
  // node reports it as a capture on peer notice (exit 124) instead of a failure of its own.
  const bool failed =
      WIFSIGNALED(wait_status) || (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0);
  if (!failed || captured_.load() || options_.on_hang != OnHang::kCaptureAndStop || !control_)
    return;
  if (peers_.NoticeBeforeEnd()) {
    control_->RequestStop("hang detected: " + PeerHangHeadline(*peers_.Answered()),
                          exit_code::kHang);
  }
}

void HangMonitor::OnExit(const watchdog::JobExit& exit) {
  if (peers_.EndedOnNotice() && !captured_.load()) {
    Capture(diagnose::Trigger::kPeerHang, exit.exit_status);
  }
  bool failed = exit.how == watchdog::JobExit::How::kSignaled ||
                (exit.how == watchdog::JobExit::How::kExited && exit.code != 0);
  // Stopped by Slurm/user/us: not a failure of its own.
  const bool own_failure = failed && exit.stopped_by.empty();
  if (own_failure) peers_.PostJobFailure(exit.exit_status);
  if (own_failure && !captured_.load() && options_.bundle_on_failure) {
    Capture(diagnose::Trigger::kJobFailed, exit.exit_status);
  }
  peers_.Finish();
  if (live_) {
    PublishLive(Clock::now(), "ended", true);
    live_->Flush(std::chrono::seconds(2));
  }
  if (!declared_here_) return;
  PostMortemOptions pm;
  pm.job_root = options_.job_root;
  pm.self_dir = options_.run_dir.substr(options_.run_dir.rfind('/') + 1);
  pm.expected_nodes = options_.expected_nodes;
  pm.wait = options_.post_mortem_wait;
  pm.diagnose = options_.diagnose_root;
  pm.diagnose_deadline = options_.diagnose_deadline;
  post_mortem_ = RunPostMortem(pm, peers_.Channel());
}

void HangMonitor::PublishLive(Clock::time_point now, const char* phase, bool force) {
  if (!live_) return;
  const std::uint64_t lines = scanner_.Lines(watchdog::kStdout) + scanner_.Lines(watchdog::kStderr);
  const bool new_phase = live_state_.phase != phase;
  const auto since = now - live_at_;
  if (!force && !new_phase && !(lines != live_lines_ && since >= kLiveBusyPeriod) &&
      since < kLiveIdlePeriod) {
    return;
  }
  const double wall = WallSeconds();
  if (new_phase || live_state_.phase_since_unix == 0) live_state_.phase_since_unix = wall;
  live_state_.phase = phase;
  if (lines != live_lines_) {
    // The rings' last lines, redacted: a token in a traceback stays out of the run root.
    live_state_.tail.clear();
    for (int stream : {watchdog::kStdout, watchdog::kStderr}) {
      if (!control_) break;
      for (auto& l : control_->TailLines(stream, 8)) {
        live_state_.tail.push_back(live_redactor_->Redact(l.substr(0, 400)));
      }
    }
  }
  live_state_.last_output_unix = lines > 0 ? wall - SilentFor(now) : 0;
  live_state_.stdout_lines = scanner_.Lines(watchdog::kStdout);
  live_state_.stderr_lines = scanner_.Lines(watchdog::kStderr);
  {
    std::lock_guard lock(*evidence_mu_);
    live_state_.event_signature = live_redactor_->Redact(last_event_.event_signature);
    live_state_.event_category = last_event_.event_category;
    live_state_.event_severity = last_event_.event_severity;
    live_state_.event_line = live_redactor_->Redact(last_event_.event_line);
    live_state_.event_unix = last_event_.event_unix;
  }
  const bool tail_changed = lines != live_lines_;
  live_lines_ = lines;
  live_at_ = now;
  live_->Publish(LiveJson(live_state_, wall), tail_changed ? LiveTail(live_state_) : "");
}

std::shared_ptr<CaptureContext> HangMonitor::MakeCaptureContext(bool alive) {
  auto ctx = std::make_shared<CaptureContext>();
  ctx->host = options_.host;
  ctx->run_dir = options_.run_dir;
  ctx->job_env = options_.job_env;
  ctx->job_argv = options_.job_argv;
  ctx->job_alive = alive;
  ctx->start_monotonic_usec = start_monotonic_usec_;
  ctx->start_wall = start_wall_;
  ctx->job_uid = ::geteuid();  // the supervisor starts the job as itself
  ctx->ib_start = ib_start_;
  ctx->fr_wait = options_.fr_wait;
  auto fs = std::make_shared<RootedFileReader>(options_.proc_root == "/" ? "" : options_.proc_root);
  ctx->fs = fs;
  if (control_) {
    ctx->job_pid = control_->JobPid();
    ctx->job_uid = JobUid(ctx->job_pid);
    if (alive) ctx->descendants = control_->Descendants();
    ctx->stdout_tail = control_->TailLines(watchdog::kStdout, 200);
    ctx->stderr_tail = control_->TailLines(watchdog::kStderr, 200);
    JobControl* c = control_.get();
    ctx->run_helper = [c](const std::vector<std::string>& argv, std::chrono::milliseconds d) {
      return c->RunHelper(argv, d);
    };
  }
  ctx->ranks = FindRanks(*fs, ctx->descendants);
  ctx->redactor = MakeRedactor(*ctx, *fs);
  auto ras = nccl::RasAddressFrom(options_.job_env);
  ctx->ras = ras.ok() ? *ras : RasAddress{};
  ctx->evidence = evidence_;
  ctx->evidence_mu = evidence_mu_;
  ctx->matcher =
      std::shared_ptr<const diagnose::LineMatcher>(&matcher_, [](const diagnose::LineMatcher*) {});
  return ctx;
}

diagnose::JobTiming HangMonitor::CaptureTiming(diagnose::Trigger trigger,
                                               std::optional<int> exit_status,
                                               Clock::time_point t0) const {
  diagnose::JobTiming timing;
  timing.host = options_.host;
  const auto at = detected_at_ == Clock::time_point{} ? t0 : detected_at_;
  timing.since_start_s = std::chrono::duration<double>(at - start_).count();
  timing.since_progress_s = SilentFor(at);
  if (trigger == diagnose::Trigger::kHeartbeat && heartbeat_mtime_ns_) {
    timing.since_progress_s = (WallNs() - heartbeat_mtime_ns_) / 1e9;
  }
  timing.exit_status = exit_status;
  timing.stall_timeout_s = options_.stall_timeout_s;
  if (trigger == diagnose::Trigger::kStall || trigger == diagnose::Trigger::kHeartbeat)
    timing.stall_source = stall_source_;
  return timing;
}

BundleInfo HangMonitor::Capture(diagnose::Trigger trigger, std::optional<int> exit_status) {
  captured_ = true;
  const auto t0 = Clock::now();
  PublishLive(t0, "capturing", true);
  const bool alive = !exit_status.has_value();
  std::shared_ptr<CaptureContext> ctx = MakeCaptureContext(alive);
  const diagnose::JobTiming timing = CaptureTiming(trigger, exit_status, t0);
  const char* kind = trigger == diagnose::Trigger::kJobFailed ? "failure" : "hang";
  CaptureRun run{fmt::format("{}-{}-{}", kind, options_.host,
                             UtcStamp(std::chrono::system_clock::now(), "%Y%m%dT%H%M%SZ")),
                 kind,
                 trigger,
                 alive,
                 t0,
                 {}};
  const double at_unix = WallSeconds();
  run.peer_notes = [this, at_unix] { return peers_.NotesAt(at_unix); };

  BundleInfo info = CaptureIntoRunDir(options_.run_dir, run, ctx, timing);
  info.capture_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::lock_guard lock(bundle_mu_);
  last_bundle_ = info;
  return info;
}

diagnose::Verdict HangMonitor::QuickVerdict(diagnose::Trigger trigger,
                                            std::optional<int> exit_status) const {
  const diagnose::JobTiming timing = CaptureTiming(trigger, exit_status, Clock::now());
  return DecideOnSnapshot(*evidence_mu_, *evidence_, trigger, timing).verdict;
}

std::optional<BundleInfo> HangMonitor::LastBundle() const {
  std::lock_guard lock(bundle_mu_);
  return last_bundle_;
}

}  // namespace sl::hang
