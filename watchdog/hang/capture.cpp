// One capture into a bundle: the collectors, the verdict with the other nodes' notes, the
// summaries and the manifest, then the rename into place (or the manifest of an incomplete one).
#include "watchdog/hang/capture.h"

#include <fmt/format.h>
#include <time.h>

#include <ctime>

#include "common/file_writer.h"
#include "common/json_text.h"
#include "common/log.h"
#include "watchdog/hang/peer_verdict.h"

namespace sl::hang {

using watchdog::Clock;

std::string UtcStamp(std::chrono::system_clock::time_point t, const char* fmt_str) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), fmt_str, &tm);
  return buf;
}

// Every secret the bundle must not show: the job's environment and argv, each rank's secret-named
// variables, and every descendant's command line.
std::shared_ptr<Redactor> MakeRedactor(const CaptureContext& ctx, const FileReader& fs) {
  auto redactor = std::make_shared<Redactor>(ctx.job_env);
  redactor->LearnArgv(ctx.job_argv);
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

namespace {

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

}  // namespace

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

BundleInfo CaptureIntoRunDir(const std::string& run_dir, const CaptureRun& run,
                             const std::shared_ptr<const CaptureContext>& ctx,
                             const diagnose::JobTiming& timing) {
  BundleInfo info;
  auto verdict_alone = [&] {
    const PeerNotes notes = run.peer_notes ? run.peer_notes() : PeerNotes{};
    return DecideOnSnapshot(*ctx->evidence_mu, *ctx->evidence, run.trigger, timing, notes).verdict;
  };
  if (run_dir.empty()) {
    info.verdict = verdict_alone();
    info.error = "no run directory; bundle not written";
    log::Error("hang detector: {} (no run directory, nothing captured)", info.verdict.headline);
  } else if (auto created = Bundle::Create(run_dir, run.name, ctx->redactor.get()); !created.ok()) {
    info.verdict = verdict_alone();
    info.error = created.error().Describe();
    log::Error("hang detector: {}", info.verdict.headline);
    log::Error("bundle not written: {}", info.error);
  } else {
    CaptureIntoBundle(std::move(created).value(), run, ctx, timing, info);
  }
  return info;
}

}  // namespace sl::hang
