// `safe-launch [run] [OPTIONS] -- CMD ARGS...`: environment plan -> preflight -> warm-up ->
// supervise, each phase one call (remediation after a failure or a diagnosed hang); the hang
// monitor attaches to the supervisor through hooks.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/json_text.h"
#include "common/log.h"
#include "common/spawn.h"
#include "launcher/commands.h"
#include "launcher/config.h"
#include "launcher/run_phases.h"
#include "launcher/slurm_stop.h"
#include "preflight/runner.h"
#include "recipes/plan.h"
#include "recipes/version_probe.h"
#include "watchdog/run_dir.h"
#include "watchdog/status.h"
#include "watchdog/supervisor.h"

namespace sl::launcher {
namespace {

std::string Cwd() {
  std::error_code ec;
  auto p = std::filesystem::current_path(ec);
  return ec ? std::string(".") : p.string();
}

// ---- a job that is not started still leaves a status.json saying why --------------------
int WriteNotStarted(const RunContext& ctx, int rc, nlohmann::json stop = nullptr) {
  nlohmann::json j = ctx.status_extra;
  j["schema"] = 1;
  j["state"] = "not_started";
  j["command"] = ctx.command;
  j["host"] = ctx.host;
  j["exit_status"] = rc;
  j["stop"] = std::move(stop);
  // The same writer as the supervisor's (0600, argv and env secrets redacted).
  auto redactor =
      watchdog::MakeJobRedactor(ctx.job_env.empty() ? ctx.base_env : ctx.job_env, ctx.command);
  if (auto s = watchdog::WriteStatusFile(ctx.run_dir, j, *redactor); !s.ok()) {
    log::Warn("{}", s.error().Describe());
  }
  return rc;
}

std::string SenderName(pid_t pid) {
  if (pid == 0) return "from the terminal/kernel";
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return "from pid " + std::to_string(pid) + " (" + comm + ")";
}

// When a SIGTERM/SIGINT was received before the job started (taken now, or by a phase's wait):
// logs it, writes status.json (not_started, the signal) and returns 128+S.
std::optional<int> StopBeforeStart(const RunContext& ctx, const char* phase) {
  (void)TakeStopSignal();
  auto s = StopSignalSeen();
  if (!s) return std::nullopt;
  const std::string by = watchdog::SignalName(s->signal) + " " + SenderName(s->from_pid);
  const std::string reason = std::string("received during the ") + phase + "; job not started";
  log::Warn("{}: {}", by, reason);
  const int rc = exit_code::kSignalBase + s->signal;
  return WriteNotStarted(ctx, rc,
                         {{"requested_by", by},
                          {"reason", reason},
                          {"phase", phase},
                          {"signal", s->signal},
                          {"signal_name", watchdog::SignalName(s->signal)},
                          {"escalated", false},
                          {"exit_status_override", nullptr}});
}

// ---- phase 2: local preflight --------------------------------------------------------------
// Returns kOk to go on, or the exit status. The report is kept for later phases and preflight.json.
int PreflightPhase(const RunConfig& args, RunContext& ctx,
                   std::optional<preflight::PreflightReport>* report,
                   const preflight::PreflightOptions& base) {
  if (args.no_preflight) {
    log::Info("preflight skipped (--no-preflight)");
    ctx.status_extra["preflight"] = {{"verdict", "skipped"}, {"action", "skipped"}};
    return exit_code::kOk;
  }
  preflight::PreflightOptions options = base;
  options.sysroot = args.sysroot;
  // The facts the plan was resolved on (gathered once), judged with the job's environment.
  auto r = preflight::RunPreflightOnFacts(options, ctx.job_env, ctx.facts);
  if (!r.ok()) {
    log::Error("preflight could not run: {}", r.error().Describe());
    return exit_code::kUsage;
  }
  report->emplace(std::move(*r));
  const auto& rep = **report;
  ctx.preflight = &rep;
  ctx.facts = rep.facts;
  ctx.have_facts = true;
  ctx.preflight_verdict = std::string(OutcomeName(rep.verdict));
  if (auto s = watchdog::WriteRunFile(ctx.run_dir, "preflight.json",
                                      JsonText(preflight::ReportToJson(rep)) + "\n");
      !s.ok()) {
    log::Warn("{}", s.error().Describe());
  }
  const bool failed = rep.verdict == Outcome::kFail;
  const bool abort = failed && args.on_preflight_fail == "abort";
  ctx.status_extra["preflight"] = {{"verdict", ctx.preflight_verdict},
                                   {"action", abort    ? "abort"
                                              : failed ? "warn"
                                                       : "go"},
                                   {"report", ctx.run_dir + "/preflight.json"}};
  if (rep.verdict == Outcome::kPass || rep.verdict == Outcome::kSkip) {
    log::Info("preflight passed ({} checks, {:.0f} ms)", rep.findings.size(), rep.elapsed_ms);
    return exit_code::kOk;
  }
  // Print what is wrong: the same table `safe-launch preflight` shows, non-pass lines only.
  preflight::PreflightReport bad = rep;
  std::erase_if(bad.findings, [](const Finding& f) {
    return f.outcome == Outcome::kPass || f.outcome == Outcome::kSkip;
  });
  std::fputs(preflight::RenderText(bad, true, false).c_str(), stderr);
  if (!failed) {
    log::Warn("preflight verdict {}: starting the job anyway (details in {}/preflight.json)",
              ctx.preflight_verdict, ctx.run_dir);
    return exit_code::kOk;
  }
  if (abort) {
    log::Error(
        "preflight failed on this node: the job was NOT started (exit {}). Fix the failures above, "
        "waive a check with a recipe, or pass --on-preflight-fail=warn to start anyway. Report: "
        "{}/preflight.json",
        exit_code::kPreflightFailed, ctx.run_dir);
    return exit_code::kPreflightFailed;
  }
  log::Warn("preflight failed on this node; starting the job anyway (--on-preflight-fail=warn)");
  return exit_code::kOk;
}

// ---- phase 1: environment plan -------------------------------------------------------------
int EnvPlanPhase(const RunConfig& args, RunContext& ctx,
                 preflight::PreflightOptions* preflight_opts) {
  ctx.job_env = ctx.base_env;
  if (!ctx.have_facts) {
    RootedFileReader fs(args.sysroot);
    // The same facts serve the plan and the preflight; kmsg only when the preflight will run.
    ctx.facts = GatherNodeFacts(fs, {.kernel_log = !args.no_preflight});
    ctx.have_facts = true;
  }
  recipes::ResolveOptions opts;
  opts.recipe = args.recipe;
  std::error_code ec;
  opts.run_dir = std::filesystem::absolute(ctx.run_dir, ec).string();
  opts.versions = recipes::DetectVersions({}, ctx.base_env).value_or(recipes::Versions{});
  opts.conf = nccl::ReadConfFiles(RootedFileReader(args.sysroot), ctx.base_env, opts.versions.nccl);
  auto plan = recipes::ResolveForNode(opts, ctx.base_env, ctx.facts);
  if (!plan.ok()) {
    log::Error("environment plan: {}", plan.error().Describe());
    return exit_code::kUsage;
  }
  if (args.hang) {
    if (auto py = PythonStacksFor(*args.hang, ctx, opts.run_dir))
      recipes::AddPythonStacks(&*plan, ctx.base_env, *py);
  }
  ctx.job_env = recipes::ApplyPlan(*plan, ctx.base_env);
  ctx.thresholds = plan->thresholds;
  auto policy = ResolveRemediationPolicy(args.remediation, ctx.base_env, plan->slurm);
  if (!policy.ok()) {
    log::Error("--on-node-fault: {}", policy.error().Describe());
    return exit_code::kUsage;
  }
  ctx.remediation = *policy;
  ctx.plan_json = recipes::PlanToJson(*plan);
  if (preflight_opts) {
    preflight_opts->thresholds = plan->thresholds;
    // A recipe may waive warm-up comparisons too: those go to the warm-up, not to preflight.
    for (const auto& id : plan->waive)
      (IsComparisonId(id) ? ctx.warmup_waive : preflight_opts->waive).push_back(id);
  }
  for (const auto& c : plan->conflicts) {
    log::Warn("{}={}: {} (fix: {})", c.name, c.value, c.message, c.fix);
  }
  ctx.status_extra["env_plan"] = {{"recipe", plan->recipe},
                                  {"entries", plan->entries.size()},
                                  {"file", ctx.run_dir + "/env-plan.json"}};
  if (auto s = watchdog::WriteRunFile(ctx.run_dir, "env-plan.json", JsonText(ctx.plan_json) + "\n");
      !s.ok()) {
    log::Warn("{}", s.error().Describe());
  }
  return exit_code::kOk;
}

// ---- phase 4: supervise --------------------------------------------------------------------
// Under Slurm a stop signal comes from slurmstepd whatever the cause: slurmctld's record of the
// job says which (time limit, scancel, node failure, a step stopped), asked once, bounded.
void AskSlurmWhyOnStop(const RunContext& ctx, watchdog::Supervisor& sup) {
  const std::string job = Lookup(ctx.base_env, "SLURM_JOB_ID").value_or("");
  if (job.empty()) return;
  auto inner = sup.Hooks().on_stop_signal;
  sup.Hooks().on_stop_signal = [inner, job, &sup](int sig, long from) -> nlohmann::json {
    nlohmann::json detail = inner ? inner(sig, from) : nlohmann::json(nullptr);
    if (!detail.is_object()) detail = nlohmann::json::object();
    // slurmstepd signals every process of the step, our scontrol too when its second SIGTERM
    // of the burst lands while it runs: asked again (a few times, within seconds) when killed.
    Result<watchdog::HelperResult> r = MakeError("not asked");
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    do {
      r = sup.RunHelper({"scontrol", "-o", "show", "job", job}, std::chrono::seconds(3));
    } while (r.ok() && r->exit_status >= 128 && std::chrono::steady_clock::now() < until);
    if (!r.ok() || r->exit_status != 0) {
      detail["slurm"] = {{"cause", "unknown"},
                         {"explanation", r.ok() ? fmt::format("scontrol exited {}: {}",
                                                              r->exit_status, Trim(r->output))
                                                : r.error().Describe()}};
    } else {
      detail["slurm"] = SlurmStopCause(r->output);
    }
    log::Info("Slurm says: {} ({})", detail["slurm"].value("cause", "unknown"),
              detail["slurm"].value("explanation", ""));
    return detail;
  };
}

int SupervisePhase(const RunConfig& args, RunContext& ctx) {
  watchdog::SupervisorOptions opts;
  opts.argv = ctx.command;
  opts.env = ctx.job_env;
  if (args.per_task) {
    // Each task is one rank that a torch script reads from RANK/WORLD_SIZE/...: mpirun and srun
    // set only their own variables (KeyError: 'RANK' otherwise).
    const auto& t = args.topology;
    for (auto& [k, v] : RankEnvironment(opts.env, args.tasks, t ? t->rendezvous_host : "",
                                        t ? t->rendezvous_port : 0)) {
      log::Debug("per-task: {}={}", k, v);
      opts.env[k] = v;
    }
  }
  opts.run_dir = ctx.run_dir;
  const char* copy = std::getenv("SAFE_LAUNCH_OUTPUT_COPY");
  opts.forward_by_copy = copy != nullptr && std::string_view(copy) == "1";
  opts.kill_grace = std::chrono::milliseconds(static_cast<long long>(args.kill_grace_s * 1000));
  opts.sweep_grace = std::min(opts.sweep_grace, opts.kill_grace);
  opts.status_extra = ctx.status_extra;
  for (const auto& name : args.signal_ranks)
    opts.signal_ranks.push_back(name.find("USR2") != std::string::npos ? SIGUSR2 : SIGUSR1);
  watchdog::Supervisor sup(std::move(opts), {});
  auto monitor = AttachHangMonitor(*args.hang, ctx, sup);
  if (!monitor.ok()) {
    log::Error("hang detection: {}", monitor.error().Describe());
    return exit_code::kUsage;
  }
  AskSlurmWhyOnStop(ctx, sup);
  // status_extra may have been extended by the hang phase.
  sup.Options().status_extra = ctx.status_extra;
  auto result = sup.Run();
  ctx.post_mortem_root = PostMortemRoot(*monitor, &ctx.hang_declared_unix);
  if (!result.ok()) {
    log::Error("could not start the job: {}", result.error().Describe());
    return exit_code::kInternal;
  }
  const auto& e = *result;
  if (e.how == watchdog::JobExit::How::kNotStarted) {
    // A stop signal came between the last phase and the start (Run took it from the queue).
    return WriteNotStarted(ctx, e.exit_status,
                           {{"requested_by", e.stopped_by},
                            {"reason", e.stop_reason},
                            {"phase", "start"},
                            {"signal", e.signal},
                            {"signal_name", watchdog::SignalName(e.signal)},
                            {"escalated", false},
                            {"exit_status_override", nullptr}});
  }
  const double secs = std::chrono::duration<double>(e.ended - e.started).count();
  switch (e.how) {
    case watchdog::JobExit::How::kExited:
      if (e.code == 0) {
        log::Info("job exited 0 after {:.1f} s", secs);
      } else {
        log::Warn("job exited {} after {:.1f} s", e.code, secs);
      }
      break;
    case watchdog::JobExit::How::kSignaled:
      log::Warn("job died of {} after {:.1f} s (exit status {})", watchdog::SignalName(e.signal),
                secs, 128 + e.signal);
      break;
    case watchdog::JobExit::How::kExecFailed:
    case watchdog::JobExit::How::kNotStarted:
      break;  // already said
  }
  if (!e.stopped_by.empty()) {
    log::Info("stopped by {}: {}{}", e.stopped_by, e.stop_reason,
              e.escalated ? " (grace ran out, descendants were killed)" : "");
  }
  if (e.exit_status != (e.how == watchdog::JobExit::How::kSignaled ? 128 + e.signal : e.code)) {
    log::Info("exit status {} (set by {})", e.exit_status, e.stopped_by);
  }
  log::Info("run directory: {}", ctx.run_dir);
  return e.exit_status;
}

// The log prefix's rank part: the node rank when the layout is known, and the task's rank in
// --per-task mode ("1/r3"): many nodes' and tasks' lines interleave in one job log.
std::string LogRank(const RunConfig& args) {
  std::string rank = args.topology ? std::to_string(args.topology->node_rank) : "";
  if (args.per_task && !args.tasks.rank.empty())
    rank += (rank.empty() ? "r" : "/r") + args.tasks.rank;
  return rank;
}

// Environment plan, preflight and warm-up: nullopt to start the job, else the status to exit
// with (status.json written). On a shared node in --per-task mode the tasks other than local
// rank 0 wait for its verdict instead of running preflight and warm-up themselves. `report`
// holds the preflight report ctx.preflight points at: it must outlive the job.
std::optional<int> PrepareJob(const RunConfig& args, RunContext& ctx,
                              const std::string& verdict_path,
                              std::optional<preflight::PreflightReport>* report) {
  // The plan gives preflight its thresholds and waivers, so it is resolved first when a resolver
  // exists; preflight.json and env-plan.json are both written before anything starts.
  preflight::PreflightOptions preflight_opts;
  preflight_opts.verbose = args.verbose;
  preflight_opts.waive = args.waive;
  // A SIGTERM/SIGINT taken during a phase (its waits end within a tick) ends the run there.
  auto stopped = [&ctx](const char* phase) { return StopBeforeStart(ctx, phase); };
  if (int rc = EnvPlanPhase(args, ctx, &preflight_opts); rc != exit_code::kOk) {
    return StopBeforeStart(ctx, "environment plan").value_or(rc);
  }
  if (auto rc = stopped("environment plan")) return *rc;
  if (!args.NodeLeader()) {
    std::optional<int> rc = WaitForNodeVerdict(args, ctx, verdict_path);
    if (auto by_signal = stopped("wait for local rank 0")) return *by_signal;
    if (rc && *rc != exit_code::kOk) return WriteNotStarted(ctx, *rc);
    return std::nullopt;
  }
  if (int rc = PreflightPhase(args, ctx, report, preflight_opts); rc != exit_code::kOk) {
    if (auto by_signal = stopped("preflight")) return *by_signal;
    return WriteNotStarted(ctx, rc);
  }
  if (auto rc = stopped("preflight")) return *rc;
  if (int rc = RunWarmupPhase(args, ctx); rc != exit_code::kOk) {
    if (auto by_signal = stopped("warm-up")) return *by_signal;  // not the warm-up's failure
    return WriteNotStarted(ctx, rc);
  }
  if (auto rc = stopped("warm-up")) return *rc;
  return std::nullopt;
}

int Run(const RunConfig& args) {
  if (args.list) {
    std::fputs(ListText().c_str(), stdout);
    return exit_code::kOk;
  }
  // First of all: a SIGTERM during preflight/warm-up must be queued for us, not kill us.
  watchdog::BlockSupervisorSignals();
  RunContext ctx;
  // --node-name names this node everywhere: log prefix, run directory, bundle names.
  ctx.host = args.warmup.node_name.empty() ? log::HostName() : args.warmup.node_name;
  const std::string task = args.per_task ? args.tasks.rank : "";
  log::Init(ctx.host, LogRank(args), args.verbose);
  ctx.command = args.command;
  ctx.sysroot = args.sysroot;
  ctx.base_env = ProcessEnvironment();
  const std::string wanted =
      watchdog::DefaultRunDir(args.run_dir, ctx.base_env, Cwd(), ctx.host,
                              std::chrono::system_clock::now(), ::getpid(), task);
  auto dir = watchdog::CreateRunDir(wanted);
  if (!dir.ok()) {
    log::Error("{}", dir.error().Describe());
    return exit_code::kUsage;
  }
  ctx.run_dir = *dir;
  ctx.status_extra["run_dir"] = ctx.run_dir;

  // Local rank 0 of a shared node says "running" first, so its node's other tasks can tell a
  // verdict to come from one that never will (it died).
  const std::string verdict = NodeVerdictPath(args, ctx);
  PublishNodeVerdict(args, ctx, verdict, std::nullopt);
  std::optional<preflight::PreflightReport> report;
  const std::optional<int> rc = PrepareJob(args, ctx, verdict, &report);
  PublishNodeVerdict(args, ctx, verdict, rc.value_or(exit_code::kOk));
  const std::string job_root = JobRootForRemediation(ctx);
  if (rc) {
    // The node a failed preflight or warm-up names gets the same treatment as a diagnosed hang:
    // the preflight's node acts for itself, node 0 for the warm-up's odd node.
    if (*rc == exit_code::kPreflightFailed)
      RemediationPhase(ctx, RemediationTrigger::kPreflight, 0, job_root);
    if (*rc == exit_code::kWarmupFailed && args.topology && args.topology->node_rank == 0)
      RemediationPhase(ctx, RemediationTrigger::kWarmup, 0, job_root);
    return *rc;
  }
  const int status = SupervisePhase(args, ctx);
  if (!ctx.post_mortem_root.empty())
    RemediationPhase(ctx, RemediationTrigger::kPostMortem, ctx.hang_declared_unix,
                     ctx.post_mortem_root);
  return status;
}

}  // namespace

void SetupRun(CLI::App& sub, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  AddRunOptions(sub, flags.get());
  sub.callback([flags, exit_code] {
    auto config = ConfigFromFlags(*flags, ProcessEnvironment());
    if (!config.ok()) {
      log::Init(log::HostName(), {}, flags->config.verbose);
      log::Error("{}", config.error().Describe());
      *exit_code = exit_code::kUsage;
      return;
    }
    *exit_code = Run(*config);
  });
}

}  // namespace sl::launcher
