// Hang detection phase of `run` (owner: hang detection): --stall-timeout and --on-hang, the job
// environment that makes evidence exist (heartbeat file, Flight Recorder dump/pipe paths in the
// run directory), and the HangMonitor attached to the supervisor's hooks.
#include "common/log.h"
#include "diagnose/verdict.h"
#include "launcher/config.h"
#include "launcher/run_phases.h"
#include "watchdog/hang/hang_monitor.h"

namespace sl::launcher {

struct HangArgs {
  double stall_timeout_s = 600;
  std::string on_hang = "capture-and-stop";
  bool no_bundle_on_failure = false;
  bool capture_on_term = false;
};

std::shared_ptr<HangArgs> AddHangOptions(CLI::App& sub) {
  auto args = std::make_shared<HangArgs>();
  sub.add_option("--stall-timeout", args->stall_timeout_s,
                 "Seconds without job output (or without a touch of $SAFE_LAUNCH_HEARTBEAT once "
                 "the job touched it) before a hang is declared; 0 disables (default 600)")
      ->check(SecondsValidator(0, 30 * 86400, /*lo_open=*/false));
  sub.add_option("--on-hang", args->on_hang,
                 "capture-and-stop (default: capture a bundle, stop the job, exit 124) or "
                 "capture-only (capture, let the job run on)")
      ->check(CLI::IsMember({"capture-and-stop", "capture-only"}));
  sub.add_flag("--no-bundle-on-failure", args->no_bundle_on_failure,
               "Do not write a bundle when the job fails on its own");
  sub.add_flag("--capture-on-term", args->capture_on_term,
               "On the first SIGTERM/SIGINT (scancel, time limit), capture a bundle before the "
               "signal reaches the job (a hung job's stacks); counts against the grace");
  return args;
}

Result<std::shared_ptr<void>> AttachHangMonitor(const HangArgs& args, RunContext& ctx,
                                                watchdog::Supervisor& sup) {
  auto on_hang = hang::ParseOnHang(args.on_hang);
  if (!on_hang.ok()) return on_hang.error();
  // The heartbeat file and the Flight Recorder variables come with the env plan
  // (recipes/plan.cpp, kCaptureSettings), so env-plan.json shows them.
  auto& opts = sup.Options();
  hang::HangOptions h;
  h.stall_timeout_s = args.stall_timeout_s;
  h.on_hang = *on_hang;
  h.run_dir = ctx.run_dir;
  h.heartbeat_path = Lookup(opts.env, "SAFE_LAUNCH_HEARTBEAT").value_or("");
  h.job_env = opts.env;
  h.job_argv = opts.argv;
  h.host = ctx.host;
  h.bundle_on_failure = !args.no_bundle_on_failure;
  auto monitor = std::make_shared<hang::HangMonitor>(std::move(h));
  monitor->SetControl(hang::MakeSupervisorControl(&sup));
  sup.SetHooks(monitor->Hooks());
  if (args.capture_on_term) {
    // Before the job gets the signal: once it is forwarded the ranks unwind and the stacks of
    // the hang are gone.
    sup.Hooks().on_stop_signal = [m = monitor.get()](int, long) -> nlohmann::json {
      log::Info("stop signal: capturing a bundle first (--capture-on-term)");
      auto info = m->Capture(diagnose::Trigger::kNone, std::nullopt);
      return {{"bundle", info.tar.empty() ? info.path : info.tar}, {"complete", info.complete}};
    };
  }
  ctx.status_extra["hang_detection"] = {
      {"stall_timeout_s", args.stall_timeout_s},
      {"on_hang", args.on_hang},
      {"heartbeat", Lookup(opts.env, "SAFE_LAUNCH_HEARTBEAT").value_or("")}};
  return std::static_pointer_cast<void>(monitor);
}

}  // namespace sl::launcher
