#include "watchdog/hang/hang_monitor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/exit_codes.h"
#include "common/file_writer.h"
#include "common/json_text.h"
#include "common/log.h"
#include "common/strings.h"

namespace sl::hang {

using watchdog::Clock;

Result<OnHang> ParseOnHang(std::string_view text) {
  if (text == "capture-and-stop") return OnHang::kCaptureAndStop;
  if (text == "capture-only") return OnHang::kCaptureOnly;
  return MakeError(fmt::format("unknown --on-hang value '{}'", text), "--on-hang",
                   "use capture-and-stop (default) or capture-only");
}

namespace {

class SupervisorControl final : public JobControl {
 public:
  explicit SupervisorControl(watchdog::Supervisor* s) : s_(s) {}
  pid_t JobPid() const override { return s_->JobPid(); }
  std::vector<pid_t> Descendants() const override { return s_->Descendants(); }
  std::vector<std::string> TailLines(int stream, std::size_t n) const override {
    return s_->TailLines(stream, n);
  }
  void RequestStop(std::string reason, int exit_status) override {
    s_->RequestStop(std::move(reason), exit_status, "hang detector");
  }
  watchdog::Clock::time_point LastOutput() const override { return s_->LastOutput(); }
  Result<HelperOutput> RunHelper(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds deadline) override {
    auto r = s_->RunHelper(argv, deadline);
    if (!r.ok()) return r.error();
    return HelperOutput{r->exit_status, r->timed_out, r->output};
  }

 private:
  watchdog::Supervisor* s_;
};

std::uint64_t MonotonicUsec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

std::string UtcStamp(std::chrono::system_clock::time_point t, const char* fmt_str) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), fmt_str, &tm);
  return buf;
}

// Writes the manifest of an incomplete bundle into its partial directory, or -- the run
// directory being full or read-only -- into $TMPDIR (a place other users can write) under an
// unpredictable name, created O_EXCL|O_NOFOLLOW: a predictable one would let them plant a link
// there and have root overwrite its target. Returns where it went, "" when nowhere.
std::string WriteManifestSomewhere(const std::string& partial_dir, const std::string& name,
                                   const std::string& text, const Environment& env) {
  std::string where = partial_dir + "/manifest.json";
  if (WriteFileAtomic(where, text, kPrivateFile).ok()) return where;
  std::string tmp = Lookup(env, "TMPDIR").value_or("");
  if (tmp.empty()) tmp = "/tmp";
  auto written = WriteUniqueFile(tmp, name + ".manifest.", ".json", text, kPrivateFile);
  return written.ok() ? *written : std::string();
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

// How much later than this node's detection another node's failure may be posted and still be
// taken as its cause: a node posts when its torchrun exits, seconds after the rank died.
constexpr double kFailureSlackS = 10;
// Events this much older than our job's start are from an earlier job in the same run root.
constexpr double kStaleEventS = 60;

std::int64_t Ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Every secret the bundle must not show: the job's environment and argv, each rank's secret-named
// variables, and every descendant's command line.
std::shared_ptr<Redactor> MakeRedactor(const HangOptions& options, const CaptureContext& ctx,
                                       const FileReader& fs) {
  auto redactor = std::make_shared<Redactor>(options.job_env);
  redactor->LearnArgv(options.job_argv);
  for (const auto& r : ctx.ranks) {
    for (const auto& [k, v] : r.env) {
      if (IsSecretName(k)) redactor->AddSecret(v);
    }
  }
  for (pid_t pid : ctx.descendants) {
    if (auto c = fs.ReadFile(fmt::format("/proc/{}/cmdline", pid), 1 << 20); c.ok()) {
      redactor->LearnArgv(ParseCmdline(*c));
    }
  }
  return redactor;
}

// The verdict and its rendered summaries (summary.json, summary.md).
struct Decided {
  diagnose::Verdict verdict;  ///< without evidence pointers
  nlohmann::json json;
  std::string markdown;
};

// What the other nodes said that this capture answers or follows from.
struct PeerNotes {
  std::optional<PeerEvent> hang;     ///< the notice of a peer_hang capture
  std::optional<PeerEvent> failure;  ///< another node's earlier root failure: the verdict
  std::optional<PeerEvent> local;    ///< this node's rank failure before the hang: the verdict
  /// Where the local failure's line was in the output: what came after it is its consequence.
  std::string local_source;
  std::uint64_t local_line = 0;
};

// Whether the match that decided `v` came after the given output line (same stream: by line
// number; else by time).
bool DecidedAfter(const diagnose::Verdict& v, const PeerNotes& peer) {
  for (const diagnose::Match* m : v.evidence) {
    if (m->signature->id != v.signature) continue;
    return m->source == peer.local_source && m->line_number > peer.local_line;
  }
  return false;
}

// When an event happened, as people read it.
std::string EventTime(const PeerEvent& e) {
  return nlohmann::json::parse(EventJson(e)).value("time_utc", "?");
}

nlohmann::json EventEvidence(const PeerEvent& e) {
  return {{"signature", "peer_event." + e.kind},
          {"category", e.kind == "failure" ? "oom_or_crash_other_rank" : e.category},
          {"severity", e.kind == "failure" ? "error" : "hang"},
          {"source", e.file},
          {"line_number", nullptr},
          {"at_s", nullptr},
          {"line", e.kind == "failure" ? PeerFailureHeadline(e) : PeerHangHeadline(e)},
          {"fields", nlohmann::json::parse(EventJson(e))}};
}

// Another node's notice changes what this node's summary says: its headline names the node
// that declared the hang (and keeps its category when this node saw nothing better), and an
// earlier root failure elsewhere is the verdict (oom_or_crash_other_rank), this node's own
// finding kept after "here:".
// Whether this node's verdict is only a consequence (a hang symptom, a store timeout, a generic
// failure) that an earlier rank failure explains; a root cause of its own (CUDA OOM, an IB
// error) stays the verdict.
bool IsConsequence(const diagnose::Verdict& v) {
  static constexpr std::string_view kConsequences[] = {"stall",
                                                       "job_failed",
                                                       "store_timeout",
                                                       "collective_timeout",
                                                       "rank_process_failed",
                                                       "peer_exit_or_network",
                                                       "unknown"};
  if (v.severity == "hang") return true;
  for (std::string_view c : kConsequences) {
    if (v.category == c) return true;
  }
  return false;
}

// The headline without its leading "<category>: ", to be quoted inside another one.
std::string HeadlineBody(const diagnose::Verdict& v) {
  const std::string prefix = v.category + ": ";
  return v.headline.rfind(prefix, 0) == 0 ? v.headline.substr(prefix.size()) : v.headline;
}

void ApplyPeerNotes(const PeerNotes& peer, diagnose::Verdict& v) {
  if (peer.hang) {
    // Decide's own headline for a peer_hang says only that: nothing of this node's to keep.
    const bool nothing_here = v.category == "stall" ||
                              v.headline.find("hang declared on another node") != std::string::npos;
    const std::string own = nothing_here ? "" : HeadlineBody(v);
    if (v.category == "stall") {
      if (!peer.hang->category.empty()) v.category = peer.hang->category;
      v.fix = fmt::format(
          "Node {} declared the hang; this bundle is this node's side of it, taken while its "
          "ranks were still in it. Start from node {}'s bundle in the job's run root, then "
          "compare the stacks (stacks/) and Flight Recorder dumps (fr/) of both sides.",
          peer.hang->node, peer.hang->node);
    }
    v.headline =
        v.category + ": " + PeerHangHeadline(*peer.hang) + (own.empty() ? "" : "; here: " + own);
    v.hosts.insert(peer.hang->node);
  }
  if (peer.failure && IsConsequence(v)) {
    const PeerEvent& f = *peer.failure;
    const std::string own = HeadlineBody(v);
    v.category = "oom_or_crash_other_rank";
    v.signature = "peer_event.failure";
    v.severity = "error";
    v.headline = "oom_or_crash_other_rank: " + PeerFailureHeadline(f) +
                 (f.category.empty() ? "" : " [its verdict: " + f.category + "]") +
                 "; here: " + own;
    v.fix = fmt::format(
        "Fix the first failure, on node {}{} (its failure-* bundle in the job's run root): "
        "this node's {} followed from it.",
        f.node, f.rank ? fmt::format(" rank {}", *f.rank) : "", diagnose::TriggerName(v.trigger));
    if (f.rank) v.ranks.insert(std::to_string(*f.rank));
    v.hosts.insert(f.node);
  }
  if (peer.local && (IsConsequence(v) || DecidedAfter(v, peer))) {
    const PeerEvent& f = *peer.local;
    const std::string own = HeadlineBody(v);
    v.category = "rank_process_failed";
    v.signature = "torchrun.failed_exitcode";
    v.severity = "error";
    std::string who = f.rank ? fmt::format("rank {}", *f.rank) : std::string("a rank");
    v.headline = fmt::format(
        "rank_process_failed: {} on this node failed first (exit {} at {}){}; "
        "then: {}",
        who, f.exit_status.value_or(1), EventTime(f),
        f.first_error.empty() ? "" : ": " + f.first_error, own);
    v.fix = fmt::format(
        "Fix the failure of {} (its traceback in output/ of this bundle): the {} that followed "
        "is torchrun waiting for the other nodes, not a hang of its own.",
        who, diagnose::TriggerName(v.trigger));
    if (f.rank) v.ranks.insert(std::to_string(*f.rank));
  }
}

// Decides on a snapshot of the evidence taken under its lock. The verdict points into the
// snapshot: it is rendered before the snapshot goes away, and kept as a copy without pointers.
Decided DecideOnSnapshot(std::mutex& evidence_mu, const diagnose::Evidence& evidence,
                         diagnose::Trigger trigger, const diagnose::JobTiming& timing,
                         const PeerNotes& peer = {}) {
  std::lock_guard lock(evidence_mu);
  diagnose::Evidence snapshot = evidence;
  diagnose::Verdict v = diagnose::Decide(snapshot, trigger, timing);
  ApplyPeerNotes(peer, v);
  Decided d{{}, diagnose::SummaryJson(v, timing), diagnose::SummaryMarkdown(v, timing)};
  nlohmann::json events = nlohmann::json::array();
  for (const auto* e : {&peer.local, &peer.failure, &peer.hang}) {
    if (!*e) continue;
    events.push_back(nlohmann::json::parse(EventJson(**e)));
    events.back()["file"] = (*e)->file;
    d.json["evidence"].insert(d.json["evidence"].begin(), EventEvidence(**e));
    d.markdown +=
        fmt::format("\n- peer event ({}): {}\n", (*e)->file,
                    (*e)->kind == "failure" ? PeerFailureHeadline(**e) : PeerHangHeadline(**e));
  }
  if (!events.empty()) d.json["peer_events"] = std::move(events);
  v.evidence.clear();
  d.verdict = std::move(v);
  return d;
}

// What one capture is: its bundle name, the trigger, whether the job was alive, when it began.
struct CaptureRun {
  std::string name;  ///< "<hang|failure>-<host>-<UTC stamp>"
  const char* kind;  ///< "hang" or "failure"
  diagnose::Trigger trigger;
  bool alive;
  Clock::time_point t0;
  /// Asked at decide time (after the collectors): a peer's failure may arrive meanwhile.
  std::function<PeerNotes()> peer_notes;
};

// manifest.json: what was captured, by which collectors, how long it took, and what failed to
// be written.
nlohmann::json BundleManifest(const CaptureRun& run, const PeerNotes& peer, const std::string& host,
                              std::chrono::system_clock::time_point job_start_wall,
                              nlohmann::json collectors, const Bundle& bundle) {
  nlohmann::json manifest;
  manifest["schema"] = "safe-launch.bundle-manifest/1";
  manifest["name"] = run.name;
  manifest["host"] = host;
  manifest["trigger"] = diagnose::TriggerName(run.trigger);
  manifest["created_utc"] = UtcStamp(std::chrono::system_clock::now(), "%Y-%m-%dT%H:%M:%SZ");
  manifest["job_start_utc"] = UtcStamp(job_start_wall, "%Y-%m-%dT%H:%M:%SZ");
  manifest["job_alive_at_capture"] = run.alive;
  if (peer.hang) {
    manifest["peer"] = {{"node", peer.hang->node},
                        {"time_utc", peer.hang->time_utc},
                        {"trigger", peer.hang->trigger},
                        {"event", peer.hang->file}};
  }
  if (peer.local) manifest["rank_failure"] = nlohmann::json::parse(EventJson(*peer.local));
  if (peer.failure)
    manifest["peer_failure"] = {{"node", peer.failure->node}, {"event", peer.failure->file}};
  manifest["collectors"] = std::move(collectors);
  manifest["capture_s"] = std::chrono::duration<double>(Clock::now() - run.t0).count();
  auto errors = bundle.WriteErrors();
  manifest["write_errors"] = errors;
  manifest["complete"] = errors.empty();
  return manifest;
}

// Renames the bundle into place and packs it; when that fails, records why in a manifest in the
// partial directory (or $TMPDIR, WriteManifestSomewhere).
void FinishBundle(Bundle& bundle, nlohmann::json manifest, const std::string& name,
                  const Redactor& redactor, const Environment& job_env, BundleInfo& info) {
  auto finished = bundle.Finish();
  if (finished.ok()) {
    info.complete = true;
    info.path = bundle.final_dir();
    info.tar = bundle.final_tar();
    return;
  }
  info.error = finished.error().Describe();
  // Record why in the partial directory when at all possible (a second, tiny write).
  manifest["complete"] = false;
  manifest["write_errors"] = bundle.WriteErrors();
  manifest["finish_error"] = info.error;
  std::string text = redactor.Redact(JsonText(manifest)) + "\n";
  info.manifest = WriteManifestSomewhere(bundle.partial_dir(), name, text, job_env);
}

// The verdict, the next step and where the bundle is (or why it is incomplete), on stderr.
void LogCaptured(const BundleInfo& info) {
  log::Warn("verdict: {}", info.verdict.headline);
  if (!info.verdict.fix.empty()) log::Warn("next step: {}", info.verdict.fix);
  if (info.complete) {
    log::Warn("bundle complete in {:.2f} s: {} (and .tar.gz)", info.capture_s, info.path);
  } else {
    log::Error("bundle INCOMPLETE ({}); what was captured is in {}; manifest: {}", info.error,
               info.path,
               info.manifest.empty() ? "(could not be written anywhere)" : info.manifest);
  }
}

// Runs the collectors into the bundle, then writes the summaries and the manifest and finishes it.
// Everything it needs of the monitor is in `ctx` (host, start, evidence, environment).
void CaptureIntoBundle(std::unique_ptr<Bundle> created, const CaptureRun& run,
                       const std::shared_ptr<const CaptureContext>& ctx,
                       const diagnose::JobTiming& timing, BundleInfo& info) {
  std::shared_ptr<const Redactor> redactor = ctx->redactor;
  // The bundle keeps the redactor it was created with alive as long as it lives.
  std::shared_ptr<Bundle> bundle(created.release(), [redactor](Bundle* b) { delete b; });
  info.path = bundle->partial_dir();
  log::Warn("{} detected ({}); capturing diagnostics into {}", run.kind,
            diagnose::TriggerName(run.trigger), bundle->final_dir());
  auto collectors = RunCollectors(Collectors(), ctx, bundle);
  const PeerNotes notes = run.peer_notes ? run.peer_notes() : PeerNotes{};
  Decided d = DecideOnSnapshot(*ctx->evidence_mu, *ctx->evidence, run.trigger, timing, notes);
  info.verdict = d.verdict;
  info.peer_hang = notes.hang;
  info.peer_failure = notes.failure;
  info.local_failure = notes.local;
  auto r1 = bundle->WriteFile("summary.json", JsonText(d.json));
  auto r2 = bundle->WriteFile("summary.md", d.markdown);
  nlohmann::json manifest =
      BundleManifest(run, notes, ctx->host, ctx->start_wall, std::move(collectors), *bundle);
  auto r3 = bundle->WriteFile("manifest.json", JsonText(manifest));
  FinishBundle(*bundle, std::move(manifest), run.name, *redactor, ctx->job_env, info);
  info.capture_s = std::chrono::duration<double>(Clock::now() - run.t0).count();
  LogCaptured(info);
}

}  // namespace

std::unique_ptr<JobControl> MakeSupervisorControl(watchdog::Supervisor* supervisor) {
  return std::make_unique<SupervisorControl>(supervisor);
}

HangMonitor::HangMonitor(HangOptions options)
    : options_(std::move(options)),
      evidence_(std::make_shared<diagnose::Evidence>()),
      evidence_mu_(std::make_shared<std::mutex>()) {
  start_ = Clock::now();
  start_wall_ = std::chrono::system_clock::now();
  start_monotonic_usec_ = MonotonicUsec();
  last_output_ns_ = Ns(start_);
  if (options_.host.empty()) options_.host = log::HostName();
}

HangMonitor::~HangMonitor() = default;

void HangMonitor::SetControl(std::unique_ptr<JobControl> control) { control_ = std::move(control); }

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
  if (!options_.events_dir.empty() && !peers_) {
    PeerChannel::Options o;
    o.dir = options_.events_dir;
    o.self_node = options_.node.empty() ? options_.host : options_.node;
    o.uid = ::geteuid();
    o.poll = options_.peer_poll;
    o.not_before_unix =
        std::chrono::duration<double>(start_wall_.time_since_epoch()).count() - kStaleEventS;
    o.launch = LaunchOf(options_.job_env);
    peers_ = std::make_unique<PeerChannel>(std::move(o));
  }
  if (!options_.run_dir.empty() && !live_) {
    live_ = std::make_unique<LiveWriter>(options_.run_dir);
    live_redactor_ = std::make_unique<Redactor>(options_.job_env);
    live_redactor_->LearnArgv(options_.job_argv);
    PublishLive(start_, "running", true);
  }
}

// Bytes kept on each side of a cut inside a long line: every catalog signature's match is a few
// hundred bytes, so one that straddles a cut lies within this much of it.
constexpr std::size_t kSeamBytes = 4096;

void HangMonitor::OnOutput(int stream, std::string_view lines, Clock::time_point t) {
  last_output_ns_.store(Ns(t), std::memory_order_relaxed);
  // on_output is ordered per stream, so a plain load/store of the counter is enough.
  const int s = stream == watchdog::kStderr ? 2 : 1;
  auto& counter = lines_[s];
  std::string& seam = seam_tail_[s];
  std::uint64_t base = counter.load(std::memory_order_relaxed);
  if (!seam.empty()) {
    // This block's first line is the one the last piece ended inside: same line number.
    std::string_view head = lines.substr(0, std::min(lines.size(), kSeamBytes));
    head = head.substr(0, std::min(head.size(), head.find('\n')));
    ScanSeam(stream, seam, head, base, t);
    --base;
  }
  const std::size_t n = matcher_.ScanBlock(lines, [&](std::string_view line, std::size_t index) {
    OnCandidateLine(stream, line, base + index + 1, t);
  });
  counter.store(base + n, std::memory_order_relaxed);
  if (lines.empty() || lines.back() == '\n') {
    seam.clear();
    return;
  }
  // The block ends inside a line (a piece): keep that line's last bytes for the next block. A
  // block without '\n' continues the line the seam already holds.
  const std::size_t nl = lines.rfind('\n');
  if (nl != std::string_view::npos) seam.clear();
  std::string_view open_line = nl == std::string_view::npos ? lines : lines.substr(nl + 1);
  if (open_line.size() > kSeamBytes) open_line.remove_prefix(open_line.size() - kSeamBytes);
  seam.append(open_line);
  if (seam.size() > kSeamBytes) seam.erase(0, seam.size() - kSeamBytes);
}

void HangMonitor::ScanSeam(int stream, std::string_view tail, std::string_view head,
                           std::uint64_t line_no, Clock::time_point t) {
  std::string window;
  window.reserve(tail.size() + head.size());
  window.append(tail).append(head);
  auto m = matcher_.MatchLine(window);
  if (!m) return;
  // A match wholly on one side was (or is about to be) found in its own block.
  for (std::string_view side : {tail, head}) {
    auto alone = matcher_.MatchLine(side);
    if (alone && alone->signature == m->signature) return;
  }
  Record(stream, std::move(*m), line_no, t);
}

void HangMonitor::OnCandidateLine(int stream, std::string_view line, std::uint64_t line_no,
                                  Clock::time_point t) {
  auto m = matcher_.MatchLine(line);
  if (!m) return;
  Record(stream, std::move(*m), line_no, t);
}

void HangMonitor::Record(int stream, diagnose::Match m, std::uint64_t line_no,
                         Clock::time_point t) {
  m.source = stream == watchdog::kStderr ? "stderr" : "stdout";
  m.at_s = std::chrono::duration<double>(t - start_).count();
  bool hang = m.signature->severity == diagnose::Severity::kHang;
  if (hang) hang_seen_ = true;
  if (m.signature->id == "torchrun.failed_exitcode" && !hang_seen_.load() && !captured_.load()) {
    // torchrun saw a rank fail: the job may still run on for minutes (torch 1.13 waits in its
    // exit barrier for the other nodes), so the failure is told to them now, not at the exit.
    // Not after a hang signature or a capture (our own stop), nor -6 (SIGABRT: the watchdog
    // taking a hung rank down) or -15 (SIGTERM: a stop from outside): consequences.
    std::lock_guard lock(rank_failure_mu_);
    const std::string code = m.Field("exitcode");
    if (!rank_failure_ && code != "-6" && code != "-15") {
      RankFailure f;
      f.time_unix = WallSeconds();
      f.exitcode = std::atoi(m.Field("exitcode").c_str());
      f.local_rank = m.Field("local_rank").empty() ? -1 : std::atoi(m.Field("local_rank").c_str());
      f.pid = static_cast<pid_t>(std::atoi(m.Field("pid").c_str()));
      f.source = stream == watchdog::kStderr ? "stderr" : "stdout";
      f.line = line_no;
      if (f.exitcode != 0) rank_failure_ = f;
    }
  }
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
  if (hang && !captured_.load()) {
    int none = 0;
    pending_.compare_exchange_strong(none, static_cast<int>(diagnose::Trigger::kSignature));
  }
}

double HangMonitor::SilentFor(Clock::time_point now) const {
  auto last = Clock::time_point(std::chrono::nanoseconds(last_output_ns_.load()));
  if (control_) last = std::max(last, control_->LastOutput());
  return std::max(0.0, std::chrono::duration<double>(now - last).count());
}

void HangMonitor::OnTick(Clock::time_point now) {
  if (peers_ && !stuck_logged_) {
    if (std::string stuck = peers_->Stuck(); !stuck.empty()) {
      log::Warn("peer events: {} (slow or dead file system?); the job is not held up", stuck);
      stuck_logged_ = true;
    }
  }
  if (peers_ && !captured_.load()) RefreshRankPids(now);
  if (peers_ && !failure_posted_ && !captured_.load()) {
    if (auto f = LocalFailure()) {
      failure_posted_ = true;
      log::Warn("rank failure: {}; telling the other nodes", PeerFailureHeadline(*f));
      PostEvent("failure", diagnose::Trigger::kJobFailed, f->exit_status, &*f);
    }
  }
  if (captured_.load()) return;
  if (pending_.load() == 0 && options_.stall_timeout_s > 0) {
    double since = SilentFor(now);
    stall_source_ = "output";
    if (!options_.heartbeat_path.empty()) {
      if (now - last_heartbeat_check_ >= std::chrono::seconds(1)) {
        last_heartbeat_check_ = now;
        struct stat st {};
        if (stat(options_.heartbeat_path.c_str(), &st) == 0) {
          std::int64_t mt =
              static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
          std::int64_t start_ns =
              std::chrono::duration_cast<std::chrono::nanoseconds>(start_wall_.time_since_epoch())
                  .count();
          if (mt >= start_ns) heartbeat_mtime_ns_ = mt;
        }
      }
      if (heartbeat_mtime_ns_ != 0) {
        auto wall_now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
        since = (wall_now - heartbeat_mtime_ns_) / 1e9;
        stall_source_ = "heartbeat";
      }
    }
    if (since >= options_.stall_timeout_s) {
      pending_ = static_cast<int>(stall_source_ == "heartbeat" ? diagnose::Trigger::kHeartbeat
                                                               : diagnose::Trigger::kStall);
    }
  }
  int p = pending_.load();
  if (p == 0 && peers_) {
    // Another node declared a hang: capture now, while this node's ranks are still in it.
    // A failure that was a hang there (a watchdog timeout took the ranks down) is a notice too.
    for (PeerEvent& notice : peers_->Events()) {
      if (notice.kind == "failure" && IsRootFailure(notice)) continue;
      peer_hang_ = std::move(notice);
      p = static_cast<int>(diagnose::Trigger::kPeerHang);
      log::Warn("peer notice: {}", PeerHangHeadline(*peer_hang_));
      break;
    }
  }
  if (p == 0) return;
  hang_detected_ = true;
  detected_at_ = now;
  auto trigger = static_cast<diagnose::Trigger>(p);
  if (trigger != diagnose::Trigger::kPeerHang) {
    declared_here_ = true;
    declared_unix_ = WallSeconds();
    // Before the capture: the other nodes start theirs while this one runs its collectors.
    if (peers_) PostEvent("hang", trigger, std::nullopt);
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
  if (!failed || !peers_ || captured_.load() || options_.on_hang != OnHang::kCaptureAndStop ||
      !control_)
    return;
  // A rank of this node failed on its own first (posted as the failure the others answer).
  if (failure_posted_ || LocalFailure()) return;
  if (!peers_->PollNow(std::chrono::milliseconds(1500)))
    return;  // a slow file system: the job's own status stands
  // The channel keeps out this node's own events and those older than the job.
  const double now = WallSeconds();
  for (PeerEvent& e : peers_->Events()) {
    if (e.kind != "hang" || e.time_unix > now) continue;
    peer_hang_ = std::move(e);
    peer_ended_ = true;
    log::Warn("peer notice: {} (this node's job ended meanwhile)", PeerHangHeadline(*peer_hang_));
    control_->RequestStop("hang detected: " + PeerHangHeadline(*peer_hang_), exit_code::kHang);
    return;
  }
}

void HangMonitor::OnExit(const watchdog::JobExit& exit) {
  if (peer_ended_ && !captured_.load()) Capture(diagnose::Trigger::kPeerHang, exit.exit_status);
  bool failed = exit.how == watchdog::JobExit::How::kSignaled ||
                (exit.how == watchdog::JobExit::How::kExited && exit.code != 0);
  // Stopped by Slurm/user/us: not a failure of its own.
  const bool own_failure = failed && exit.stopped_by.empty();
  if (own_failure && peers_ && !failure_posted_) {
    failure_posted_ = true;
    PostEvent("failure", diagnose::Trigger::kJobFailed, exit.exit_status);
  }
  if (own_failure && !captured_.load() && options_.bundle_on_failure) {
    Capture(diagnose::Trigger::kJobFailed, exit.exit_status);
  }
  if (peers_ && !peers_->Flush(std::chrono::seconds(3))) {
    log::Warn("peer events: the last event was not written within 3 s ({})", peers_->dir());
  }
  if (peers_ && !peers_->LastError().empty()) {
    log::Warn("peer events: {}", peers_->LastError());
  }
  if (live_) {
    PublishLive(Clock::now(), "ended", true);
    live_->Flush(std::chrono::seconds(2));
  }
  if (declared_here_) RunPostMortem();
}

void HangMonitor::PublishLive(Clock::time_point now, const char* phase, bool force) {
  if (!live_) return;
  const std::uint64_t lines = lines_[1].load() + lines_[2].load();
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
  live_state_.stdout_lines = lines_[1].load();
  live_state_.stderr_lines = lines_[2].load();
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

int PeerFailureExitStatus(const PeerEvent& failure) {
  const int s = failure.exit_status.value_or(1);
  return s >= 1 && s <= 255 && s != exit_code::kHang ? s : 1;
}

void HangMonitor::PostEvent(const char* kind, diagnose::Trigger trigger,
                            std::optional<int> exit_status, const PeerEvent* rank_failure) {
  PeerEvent e;
  e.kind = kind;
  e.node = options_.node.empty() ? options_.host : options_.node;
  e.time_unix = WallSeconds();
  e.trigger = std::string(diagnose::TriggerName(trigger));
  const diagnose::JobTiming timing = CaptureTiming(trigger, exit_status, Clock::now());
  diagnose::Verdict v = DecideOnSnapshot(*evidence_mu_, *evidence_, trigger, timing).verdict;
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

void HangMonitor::RefreshRankPids(Clock::time_point now) {
  if (now - rank_pids_at_ < std::chrono::seconds(2) || !control_) return;
  rank_pids_at_ = now;
  RootedFileReader fs(options_.proc_root == "/" ? "" : options_.proc_root);
  for (const RankProc& r : FindRanks(fs, control_->Descendants())) {
    if (r.rank >= 0) rank_by_pid_[r.pid] = r.rank;
  }
}

std::optional<PeerEvent> HangMonitor::LocalFailure() const {
  std::optional<RankFailure> f;
  {
    std::lock_guard lock(rank_failure_mu_);
    f = rank_failure_;
  }
  if (!f) return std::nullopt;
  PeerEvent e;
  e.kind = "failure";
  e.node = options_.node.empty() ? options_.host : options_.node;
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

std::optional<PeerEvent> HangMonitor::CausingFailure(double by_unix) const {
  if (!peers_) return std::nullopt;
  for (const PeerEvent& e : peers_->Events()) {
    if (IsRootFailure(e) && e.time_unix <= by_unix + kFailureSlackS) return e;
  }
  return std::nullopt;
}

void HangMonitor::RunPostMortem() {
  if (options_.job_root.empty() || options_.post_mortem_wait.count() <= 0) return;
  const auto wait = options_.post_mortem_wait;
  const std::string root = options_.job_root;
  std::string self_dir = options_.run_dir.substr(options_.run_dir.rfind('/') + 1);
  const int expected_peers = std::max(0, options_.expected_nodes - 1);
  // Shared with the worker, which may still write it after the wait gave up on it.
  struct Seen {
    std::mutex mu;
    PeerBundles bundles;
  };
  auto seen = std::make_shared<Seen>();
  auto started = Clock::now();
  // On the channel's worker: a dead file system holds that thread, not this one past `wait`.
  bool in_time = !peers_ || peers_->RunOnWorker(
                                [=] {
                                  const auto end = Clock::now() + wait;
                                  for (;;) {
                                    PeerBundles b = ScanPeerBundles(root, self_dir, ::geteuid());
                                    bool all = b.complete.size() == b.nodes.size() &&
                                               b.nodes.size() >= std::size_t(expected_peers);
                                    {
                                      std::lock_guard lock(seen->mu);
                                      seen->bundles = b;
                                    }
                                    if (all || Clock::now() >= end) return;
                                    std::this_thread::sleep_for(std::chrono::milliseconds(250));
                                  }
                                },
                                wait + std::chrono::seconds(2));
  PeerBundles got;
  {
    std::lock_guard lock(seen->mu);
    got = seen->bundles;
  }
  log::Info("post-mortem: {} of {} other node(s) bundled after {:.1f} s{}", got.complete.size(),
            std::max<std::size_t>(got.nodes.size(), expected_peers),
            std::chrono::duration<double>(Clock::now() - started).count(),
            in_time ? "" : " (the run root did not answer in time)");
  if (options_.diagnose_argv.empty() || !control_) return;
  std::vector<std::string> argv = options_.diagnose_argv;
  argv.push_back(root);
  auto r = control_->RunHelper(argv, options_.diagnose_deadline);
  if (!r.ok()) {
    log::Warn("post-mortem: could not run diagnose: {}", r.error().Describe());
  } else if (r->timed_out) {
    log::Warn("post-mortem: diagnose {} ran past {} s and was stopped", root,
              options_.diagnose_deadline.count() / 1000);
  } else {
    post_mortem_ = root;
    const std::string json = root + "/diagnosis.json";
    auto written = std::make_shared<bool>(false);
    bool answered = !peers_ || peers_->RunOnWorker(
                                   [json, written] {
                                     struct stat st {};
                                     *written = ::lstat(json.c_str(), &st) == 0;
                                   },
                                   std::chrono::seconds(2));
    if (!peers_) {
      struct stat st {};
      *written = ::lstat(json.c_str(), &st) == 0;
    }
    if (answered && *written) {
      log::Warn("post-mortem: diagnose exited {}; diagnosis in {}/diagnosis.md (.json, .html)",
                r->exit_status, root);
    } else {
      log::Warn("post-mortem: diagnose {} exited {} and wrote no {}", root, r->exit_status, json);
    }
  }
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
  ctx->redactor = MakeRedactor(options_, *ctx, *fs);
  auto ras = ParseRasAddress(Lookup(options_.job_env, "NCCL_RAS_ADDR").value_or(""));
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
    auto wall_now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    timing.since_progress_s = (wall_now - heartbeat_mtime_ns_) / 1e9;
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
  BundleInfo info;
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
  run.peer_notes = [this, at_unix] {
    PeerNotes notes;
    notes.hang = peer_hang_;
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
  };

  if (options_.run_dir.empty()) {
    info.verdict =
        DecideOnSnapshot(*evidence_mu_, *evidence_, trigger, timing, run.peer_notes()).verdict;
    info.error = "no run directory; bundle not written";
    log::Error("hang detector: {} (no run directory, nothing captured)", info.verdict.headline);
  } else if (auto created = Bundle::Create(options_.run_dir, run.name, ctx->redactor.get());
             !created.ok()) {
    info.verdict =
        DecideOnSnapshot(*evidence_mu_, *evidence_, trigger, timing, run.peer_notes()).verdict;
    info.error = created.error().Describe();
    log::Error("hang detector: {}", info.verdict.headline);
    log::Error("bundle not written: {}", info.error);
  } else {
    CaptureIntoBundle(std::move(created).value(), run, ctx, timing, info);
  }
  info.capture_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::lock_guard lock(bundle_mu_);
  last_bundle_ = info;
  return info;
}

std::optional<BundleInfo> HangMonitor::LastBundle() const {
  std::lock_guard lock(bundle_mu_);
  return last_bundle_;
}

}  // namespace sl::hang
