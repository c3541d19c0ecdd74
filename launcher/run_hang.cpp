// Hang detection phase of `run` (owner: hang detection): --stall-timeout and --on-hang, the job
// environment that makes evidence exist (heartbeat file, Flight Recorder dump/pipe paths in the
// run directory), and the HangMonitor attached to the supervisor's hooks; the coordination of the
// job's nodes through <job run root>/.events (watchdog/hang/peer_events.h): --coordinate,
// --post-mortem-wait.
#include <unistd.h>

#include <csignal>

#include "common/file_writer.h"
#include "common/install_layout.h"
#include "common/log.h"
#include "common/strings.h"
#include "diagnose/verdict.h"
#include "launcher/commands.h"
#include "launcher/config.h"
#include "launcher/run_phases.h"
#include "watchdog/hang/hang_monitor.h"

namespace sl::launcher {

struct HangArgs {
  double stall_timeout_s = 600;
  std::string on_hang = "capture-and-stop";
  bool no_bundle_on_failure = false;
  bool capture_on_term = false;
  std::string coordinate = "auto";
  double post_mortem_wait_s = 30;
  bool no_python_stacks = false;
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
  sub.add_option("--coordinate", args->coordinate,
                 "The nodes of a job post hang/failure events in <job run root>/.events and "
                 "capture on each other's hang: auto (default: when the run directory is "
                 "<root>/safe-launch-runs/<job>/<node>), on (the run directory's parent is the "
                 "job run root), off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  sub.add_option("--post-mortem-wait", args->post_mortem_wait_s,
                 "After a hang declared on this node: seconds to wait for the other nodes' "
                 "bundles before diagnosing the job run root (as `safe-launch diagnose <root>`); "
                 "0: neither "
                 "(default 30)")
      ->check(SecondsValidator(0, 3600, /*lo_open=*/false));
  sub.add_flag("--no-python-stacks", args->no_python_stacks,
               "Do not put safe-launch's sitecustomize on the job's PYTHONPATH (faulthandler "
               "stacks of every rank on a hang); also SAFE_LAUNCH_PYTHON_STACKS=0");
  return args;
}

namespace {

// The job run root shared by the nodes: the run directory's parent, when asked for (on) or when
// the run directory has the default layout <root>/safe-launch-runs/<job id>/<node> (auto): an
// explicit --run-dir elsewhere (/tmp/x) has no parent of its own to share.
std::string JobRunRoot(const std::string& mode, const std::string& run_dir) {
  if (mode == "off" || run_dir.empty()) return "";
  const std::string root = PathParent(run_dir);
  if (mode == "on") return root;
  return PathLeaf(PathParent(root)) == "safe-launch-runs" ? root : "";
}

void SetCoordination(const HangArgs& args, const RunContext& ctx, hang::HangOptions& h) {
  h.job_root = JobRunRoot(args.coordinate, ctx.run_dir);
  if (h.job_root.empty()) return;
  h.events_dir = h.job_root + "/.events";
  // Each supervisor's own name in the job: its run directory's leaf, which is unique in the job
  // directory ("gpu01", "vm_vm-n1" for a second slurmd on one host, "gpu01-rank1" for
  // --per-task): the host alone would make the ranks of one node ignore each other's events.
  h.node = PathLeaf(ctx.run_dir);
  if (h.node.empty()) h.node = ctx.host;
  h.post_mortem_wait = std::chrono::milliseconds(static_cast<long>(args.post_mortem_wait_s * 1000));
  // In-process (a forked child of the library call, with its deadline): not an exec of
  // ourselves, which needed /proc/self/exe and a second start-up.
  h.diagnose_root = [](const std::string& root) { return DiagnoseRunRoot(root, DiskFileWriter()); };
  for (const char* k : {"SLURM_NNODES", "SLURM_JOB_NUM_NODES"}) {
    auto v = Lookup(ctx.base_env, k);
    if (v && !v->empty() && v->find_first_not_of("0123456789") == std::string::npos) {
      h.expected_nodes = std::stoi(*v);
      break;
    }
  }
}

}  // namespace

std::optional<recipes::PythonStacks> PythonStacksFor(const HangArgs& args, const RunContext& ctx,
                                                     const std::string& run_dir) {
  if (args.no_python_stacks || run_dir.empty()) return std::nullopt;
  if (Lookup(ctx.base_env, "SAFE_LAUNCH_PYTHON_STACKS").value_or("") == "0") {
    log::Info("Python stacks off (SAFE_LAUNCH_PYTHON_STACKS=0)");
    return std::nullopt;
  }
  // Shipped with the binary: P/share/safe-launch/python/ (build/share/... in the build tree).
  const std::string site = SelfLayout().data_dir + "/python";
  if (SelfLayout().data_dir.empty() || ::access((site + "/sitecustomize.py").c_str(), R_OK) != 0) {
    log::Warn(
        "no {}/sitecustomize.py next to the binary: a hang bundle will have no Python "
        "stacks of the ranks unless py-spy is installed",
        site);
    return std::nullopt;
  }
  // A real-time signal: frameworks take SIGUSR1/SIGUSR2 (Lightning requeues on SIGUSR1 under
  // Slurm), and glibc keeps SIGRTMIN's first two for threads (SIGRTMIN is already past them).
  return recipes::PythonStacks{site, run_dir + "/pystacks", SIGRTMIN + kPythonStacksSignalOffset};
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
  SetCoordination(args, ctx, h);
  const std::string events_dir = h.events_dir;
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
      {"heartbeat", Lookup(opts.env, "SAFE_LAUNCH_HEARTBEAT").value_or("")},
      {"coordinate", args.coordinate},
      {"events", events_dir.empty() ? nlohmann::json() : nlohmann::json(events_dir)},
      {"post_mortem_wait_s", args.post_mortem_wait_s}};
  return std::static_pointer_cast<void>(monitor);
}

std::string PostMortemRoot(const std::shared_ptr<void>& handle, double* declared_unix) {
  if (!handle) return "";
  const auto* m = static_cast<const hang::HangMonitor*>(handle.get());
  if (declared_unix) *declared_unix = m->DeclaredUnix();
  return m->PostMortem();
}

}  // namespace sl::launcher
