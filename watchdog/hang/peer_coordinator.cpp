#include "watchdog/hang/peer_coordinator.h"

#include <unistd.h>

#include <cstdlib>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/log.h"
#include "watchdog/hang/collectors.h"
#include "watchdog/hang/redact.h"

namespace sl::hang {
namespace {

using watchdog::Clock;

double CoordWallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// How much later than this node's detection another node's failure may be posted and still be
// taken as its cause: a node posts when its torchrun exits, seconds after the rank died.
constexpr double kFailureSlackS = 10;
// Events this much older than our job's start are from an earlier job in the same run root.
constexpr double kStaleEventS = 60;

}  // namespace

PeerCoordinator::PeerCoordinator(PeerCoordinatorOptions options, QuickVerdict verdict)
    : options_(std::move(options)), verdict_(std::move(verdict)) {}

PeerCoordinator::~PeerCoordinator() = default;

void PeerCoordinator::Start(std::chrono::system_clock::time_point start_wall) {
  if (options_.events_dir.empty() || peers_) return;
  PeerChannel::Options o;
  o.dir = options_.events_dir;
  o.self_node = options_.node;
  o.uid = ::geteuid();
  o.poll = options_.poll;
  o.not_before_unix =
      std::chrono::duration<double>(start_wall.time_since_epoch()).count() - kStaleEventS;
  o.launch = LaunchOf(options_.job_env);
  peers_ = std::make_unique<PeerChannel>(std::move(o));
}

void PeerCoordinator::NoteMatch(const diagnose::Match& m, int stream, std::uint64_t line_no) {
  if (m.signature->id != "torchrun.failed_exitcode") return;
  // torchrun saw a rank fail: the job may still run on for minutes (torch 1.13 waits in its
  // exit barrier for the other nodes), so the failure is told to them now, not at the exit.
  // Not after a hang signature or a capture (our own stop: the caller checks), nor -6 (SIGABRT:
  // the watchdog taking a hung rank down) or -15 (SIGTERM: a stop from outside): consequences.
  std::lock_guard lock(rank_failure_mu_);
  const std::string code = m.Field("exitcode");
  if (rank_failure_ || code == "-6" || code == "-15") return;
  RankFailure f;
  f.time_unix = CoordWallSeconds();
  f.exitcode = std::atoi(code.c_str());
  f.local_rank = m.Field("local_rank").empty() ? -1 : std::atoi(m.Field("local_rank").c_str());
  f.pid = static_cast<pid_t>(std::atoi(m.Field("pid").c_str()));
  f.source = stream == watchdog::kStderr ? "stderr" : "stdout";
  f.line = line_no;
  if (f.exitcode != 0) rank_failure_ = f;
}

void PeerCoordinator::OnTick(Clock::time_point now, bool captured) {
  if (!peers_) return;
  if (!stuck_logged_) {
    if (std::string stuck = peers_->Stuck(); !stuck.empty()) {
      log::Warn("peer events: {} (slow or dead file system?); the job is not held up", stuck);
      stuck_logged_ = true;
    }
  }
  if (captured) return;
  RefreshRankPids(now);
  if (failure_posted_) return;
  if (auto f = LocalFailure()) {
    failure_posted_ = true;
    log::Warn("rank failure: {}; telling the other nodes", PeerFailureHeadline(*f));
    Post("failure", diagnose::Trigger::kJobFailed, f->exit_status, &*f);
  }
}

std::optional<PeerEvent> PeerCoordinator::FirstNotice() const {
  if (!peers_) return std::nullopt;
  for (PeerEvent& notice : peers_->Events()) {
    if (notice.kind == "failure" && IsRootFailure(notice)) continue;
    return std::move(notice);
  }
  return std::nullopt;
}

void PeerCoordinator::Answer(PeerEvent notice) {
  answered_ = std::move(notice);
  log::Warn("peer notice: {}", PeerHangHeadline(*answered_));
}

void PeerCoordinator::PostHang(diagnose::Trigger trigger) {
  if (peers_) Post("hang", trigger, std::nullopt);
}

void PeerCoordinator::PostJobFailure(std::optional<int> exit_status) {
  if (!peers_ || failure_posted_) return;
  failure_posted_ = true;
  Post("failure", diagnose::Trigger::kJobFailed, exit_status);
}

bool PeerCoordinator::NoticeBeforeEnd() {
  if (!peers_) return false;
  // A rank of this node failed on its own first (posted as the failure the others answer).
  if (failure_posted_ || LocalFailure()) return false;
  if (!peers_->PollNow(std::chrono::milliseconds(1500)))
    return false;  // a slow file system: the job's own status stands
  // The channel keeps out this node's own events and those older than the job.
  const double now = CoordWallSeconds();
  for (PeerEvent& e : peers_->Events()) {
    if (e.kind != "hang" || e.time_unix > now) continue;
    answered_ = std::move(e);
    ended_on_notice_ = true;
    log::Warn("peer notice: {} (this node's job ended meanwhile)", PeerHangHeadline(*answered_));
    return true;
  }
  return false;
}

PeerNotes PeerCoordinator::NotesAt(double at_unix) const {
  PeerNotes notes;
  notes.hang = answered_;
  notes.failure = CausingFailure(at_unix);
  // This node's own rank failed before the hang: the hang (a stall in torchrun's exit
  // barrier, a store timeout) follows from it, unless another node failed even earlier.
  if (auto local = LocalFailure();
      local && local->time_unix <= at_unix &&
      (!notes.failure || local->time_unix < notes.failure->time_unix)) {
    notes.failure.reset();
    notes.local = std::move(local);
    std::lock_guard lock(rank_failure_mu_);
    if (rank_failure_) {
      notes.local_source = rank_failure_->source;
      notes.local_line = rank_failure_->line;
    }
  }
  return notes;
}

void PeerCoordinator::Finish() {
  if (!peers_) return;
  if (!peers_->Flush(std::chrono::seconds(3))) {
    log::Warn("peer events: the last event was not written within 3 s ({})", peers_->dir());
  }
  if (!peers_->LastError().empty()) log::Warn("peer events: {}", peers_->LastError());
}

void PeerCoordinator::Post(const char* kind, diagnose::Trigger trigger,
                           std::optional<int> exit_status, const PeerEvent* rank_failure) {
  PeerEvent e;
  e.kind = kind;
  e.node = options_.node;
  e.time_unix = CoordWallSeconds();
  e.trigger = std::string(diagnose::TriggerName(trigger));
  const diagnose::Verdict v = verdict_(trigger, exit_status);
  e.category = v.category;
  e.severity = v.severity;
  e.headline = v.headline;
  e.exit_status = exit_status;
  if (std::string_view(kind) == "failure" && control_) {
    std::vector<std::string> lines = control_->TailLines(watchdog::kStderr, 200);
    std::vector<std::string> out = control_->TailLines(watchdog::kStdout, 200);
    lines.insert(lines.end(), out.begin(), out.end());
    FailureFacts f = FailureFromOutput(lines);
    e.rank = f.rank;
    e.first_error = f.first_error;
  }
  if (rank_failure) {
    e.time_unix = rank_failure->time_unix;
    if (rank_failure->rank) e.rank = rank_failure->rank;
    // Not the job's end: the verdict so far may be a hang symptom, but the rank did fail.
    e.severity = "error";
  }
  // The event leaves the node: the same redaction as the bundle's.
  Redactor redactor(options_.job_env);
  redactor.LearnArgv(options_.job_argv);
  e.headline = redactor.Redact(e.headline);
  e.first_error = redactor.Redact(e.first_error);
  peers_->Post(std::move(e));
}

void PeerCoordinator::RefreshRankPids(Clock::time_point now) {
  if (now - rank_pids_at_ < std::chrono::seconds(2) || !control_) return;
  rank_pids_at_ = now;
  RootedFileReader fs(options_.proc_root == "/" ? "" : options_.proc_root);
  for (const RankProc& r : FindRanks(fs, control_->Descendants())) {
    if (r.rank >= 0) rank_by_pid_[r.pid] = r.rank;
  }
}

std::optional<PeerEvent> PeerCoordinator::LocalFailure() const {
  std::optional<RankFailure> f;
  {
    std::lock_guard lock(rank_failure_mu_);
    f = rank_failure_;
  }
  if (!f) return std::nullopt;
  PeerEvent e;
  e.kind = "failure";
  e.node = options_.node;
  e.time_unix = f->time_unix;
  e.trigger = "rank_failed";
  e.category = "rank_process_failed";
  e.severity = "error";
  // torchrun's exitcode: negative = killed by that signal.
  e.exit_status = f->exitcode < 0 ? exit_code::kSignalBase - f->exitcode : f->exitcode;
  if (auto it = rank_by_pid_.find(f->pid); it != rank_by_pid_.end()) e.rank = it->second;
  if (control_) {
    e.first_error = FailureFromOutput(control_->TailLines(watchdog::kStderr, 200)).first_error;
  }
  return e;
}

std::optional<PeerEvent> PeerCoordinator::CausingFailure(double by_unix) const {
  if (!peers_) return std::nullopt;
  for (const PeerEvent& e : peers_->Events()) {
    if (IsRootFailure(e) && e.time_unix <= by_unix + kFailureSlackS) return e;
  }
  return std::nullopt;
}

}  // namespace sl::hang
