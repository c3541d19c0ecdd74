#pragma once
// One capture of a hang or failure into a bundle (watchdog/hang/bundle.h): the collectors run in
// parallel (collectors.h), then the verdict is decided with what the other nodes said
// (peer_verdict.h), summary.{json,md} and manifest.json are written, and the bundle is renamed
// into place and packed -- or, when that fails, the manifest of the incomplete bundle says why.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/file_reader.h"
#include "diagnose/verdict.h"
#include "watchdog/hang/bundle.h"
#include "watchdog/hang/collectors.h"
#include "watchdog/hang/peer_events.h"
#include "watchdog/hang/peer_verdict.h"
#include "watchdog/supervisor.h"

namespace sl::hang {

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

/// What one capture is: its bundle name, the trigger, whether the job was alive, when it began.
struct CaptureRun {
  std::string name;  ///< "<hang|failure>-<host>-<UTC stamp>"
  const char* kind;  ///< "hang" or "failure"
  diagnose::Trigger trigger;
  bool alive;
  watchdog::Clock::time_point t0;
  /// Asked at decide time (after the collectors): a peer's failure may arrive meanwhile.
  std::function<PeerNotes()> peer_notes;
};

/// `t` in UTC with strftime's `fmt_str`.
std::string UtcStamp(std::chrono::system_clock::time_point t, const char* fmt_str);

/// Every secret the bundle must not show: the job's environment and argv, each rank's
/// secret-named variables, and every descendant's command line (read through `fs`).
std::shared_ptr<Redactor> MakeRedactor(const CaptureContext& ctx, const FileReader& fs);

/// Runs the collectors into the bundle, then writes the summaries and the manifest and finishes
/// it; fills `info` and logs the verdict and where the bundle is. Everything it needs of the
/// monitor is in `ctx` (host, start, evidence, environment).
void CaptureIntoBundle(std::unique_ptr<Bundle> created, const CaptureRun& run,
                       const std::shared_ptr<const CaptureContext>& ctx,
                       const diagnose::JobTiming& timing, BundleInfo& info);

/// The capture of `run` into `run_dir`: CaptureIntoBundle, or -- no run directory, or the
/// bundle cannot be created there -- the verdict alone, logged with why nothing was written.
BundleInfo CaptureIntoRunDir(const std::string& run_dir, const CaptureRun& run,
                             const std::shared_ptr<const CaptureContext>& ctx,
                             const diagnose::JobTiming& timing);

}  // namespace sl::hang
