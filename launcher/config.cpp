#include "launcher/config.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "launcher/run_phases.h"
#include "preflight/check.h"
#include "warmup/compare.h"

namespace sl::launcher {
namespace {

// Each --waive id must name a preflight check or a warm-up comparison (or a group of them).
CLI::Validator KnownIds() {
  return CLI::Validator(
      [](std::string& id) -> std::string {
        if (IsKnownId(id)) return {};
        Error e = UnknownIdError(id, "--waive", "safe-launch run --list");
        return e.message + " (" + e.fix + ")";
      },
      "ID");
}

std::vector<std::string> AllIds() {
  std::vector<std::string> ids;
  for (const auto& c : preflight::Registry()) ids.emplace_back(c.id);
  for (const auto& c : warmup::Comparisons()) ids.emplace_back(c.id);
  return ids;
}

void AddWarmupOptions(CLI::App& app, RunFlags* f) {
  LayoutFlags& l = f->layout;
  WarmupConfig& w = f->config.warmup;
  app.add_option("--nnodes", l.nnodes,
                 "Nodes in the job (default: torchrun's --nnodes, else SLURM_NNODES)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--node-rank", l.node_rank,
                 "This node's rank (default: torchrun's --node-rank, else SLURM_NODEID)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--nproc-per-node", l.nproc_per_node,
                 "Ranks (GPUs) per node (default: torchrun's --nproc-per-node, else 1)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--rendezvous", l.rendezvous,
                 "Node 0's HOST:PORT (default: torchrun's --rdzv-endpoint/--master-addr, else the "
                 "first host of SLURM_JOB_NODELIST)");
  app.add_option("--warmup-port", l.warmup_port,
                 "Port of the warm-up store on node 0 (default: rendezvous port + 1)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--warmup-timeout", w.timeout_s,
                 "Seconds the whole warm-up may take on this node (default 120)")
      ->check(SecondsValidator(0, 86400, /*lo_open=*/true));
  app.add_flag("--no-warmup", w.skip, "Skip the cross-node warm-up");
  app.add_flag("--warmup", w.force,
               "Run the warm-up even for a single-node job (multi-node jobs always run it)");
  app.add_option("--on-warmup-fail", w.on_fail,
                 "abort (default: exit 69, job not started) or warn (start anyway)")
      ->check(CLI::IsMember({"abort", "warn"}));
  app.add_option("--node-name", w.node_name,
                 "Name of this node in warm-up messages (default: its host name)");
  app.add_option("--warmup-backend", w.backend, "auto (NCCL on GPUs, else Gloo), nccl or gloo")
      ->check(CLI::IsMember({"auto", "nccl", "gloo"}));
}

}  // namespace

void AddRemediationOptions(CLI::App& app, RemediationFlags* r) {
  app.add_option("--on-node-fault", r->on_node_fault,
                 "When the job-level diagnosis names one node (node-local cause, probability >= "
                 "--fault-threshold): report (default: nothing done), drain (drain that node), "
                 "requeue (drain it and requeue the job without it); also "
                 "SAFE_LAUNCH_ON_NODE_FAULT or a recipe's [slurm] on_node_fault")
      ->check(CLI::IsMember({"report", "drain", "requeue"}));
  app.add_option("--fault-threshold", r->fault_threshold,
                 "Probability the first cause needs before --on-node-fault acts (default 0.8)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--max-requeues", r->max_requeues,
                 "Requeues of the job by --on-node-fault=requeue, over all its attempts "
                 "(default 2)")
      ->check(CLI::Range(0, 100));
  app.add_flag("--dry-run", r->dry_run,
               "--on-node-fault prints the scontrol commands it would run and runs none (the "
               "job itself runs)");
}

CLI::Validator SecondsValidator(double lo, double hi, bool lo_open) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        auto v = ParseDouble(text);
        const bool above_lo = v.ok() && (lo_open ? *v > lo : *v >= lo);
        // 1e-300 is "more than 0" but no timeout: below a millisecond is refused (0, where
        // allowed, means off).
        if (above_lo && *v <= hi && (*v == 0 || *v >= kMinSeconds)) return {};
        if (above_lo && *v > 0 && *v < kMinSeconds) {
          return fmt::format("must be {}at least {:g} seconds, got '{}'",
                             lo_open ? "" : "0 (off) or ", kMinSeconds, text);
        }
        return fmt::format("must be {} {:g} and at most {:g} seconds, got '{}'",
                           lo_open ? "more than" : "at least", lo, hi, text);
      },
      "SECONDS");
}

CLI::Validator NonEmptyValidator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        // An empty value silently meaning the default ("--sysroot ''" reading the live node,
        // "--sizes ''" running the default sweep) is refused instead.
        return text.empty() ? std::string("must not be empty") : std::string();
      },
      "", "NONEMPTY");
}

void ValidateEveryValue(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (o->get_positional() || o->get_type_size_max() == 0) continue;  // flags take no value
    bool has = false;
    try {
      has = o->get_validator(0) != nullptr;
    } catch (const CLI::OptionNotFound&) {
    }
    if (!has) o->check(NonEmptyValidator());
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    ValidateEveryValue(*sub);
  }
}

bool IsComparisonId(const std::string& id) {
  for (const auto& c : warmup::Comparisons())
    if (IdSelects(id, c.id)) return true;
  return false;
}

bool IsKnownId(const std::string& id) {
  if (IsComparisonId(id)) return true;
  for (const auto& c : preflight::Registry())
    if (IdSelects(id, c.id)) return true;
  return false;
}

Error UnknownIdError(const std::string& id, const std::string& flag, const std::string& list_cmd) {
  std::string hint = ClosestMatch(id, AllIds());
  return MakeError("unknown check id '" + id + "'", flag,
                   hint.empty() ? "see `" + list_cmd + "`" : "did you mean '" + hint + "'?");
}

std::string ListText() {
  std::size_t width = 15;
  for (const auto& id : AllIds()) width = std::max(width, id.size());
  std::string out;
  for (const auto& c : preflight::Registry()) {
    // Where it runs when not before a job only: `preflight --slurm --epilog` (after the job).
    const char* tag = c.when == preflight::CheckWhen::kAfterJob ? " [epilog only]"
                      : c.when == preflight::CheckWhen::kBoth   ? " [also in the epilog]"
                                                                : "";
    out += fmt::format("{:<{}} {}{}\n", c.id, width, c.summary, tag);
  }
  for (const auto& c : warmup::Comparisons())
    out += fmt::format("{:<{}} {}\n", c.id, width, c.summary);
  return out;
}

void AddRunOptions(CLI::App& app, RunFlags* f) {
  RunConfig& c = f->config;
  app.add_flag("--no-preflight", c.no_preflight, "Do not run the local preflight");
  app.add_option("--on-preflight-fail", c.on_preflight_fail,
                 "abort (default: exit 78, job not started) or warn (start anyway)")
      ->check(CLI::IsMember({"abort", "warn"}));
  app.add_option("--waive", f->waive,
                 "Do not count fail/warn of these preflight check or warm-up comparison ids "
                 "(see --list)")
      ->delimiter(',')
      ->check(KnownIds());
  app.add_flag("--list", c.list, "List the preflight checks and warm-up comparisons and exit");
  app.add_option("--run-dir", c.run_dir,
                 "Run directory (default $SLURM_SUBMIT_DIR or cwd + "
                 "/safe-launch-runs/<jobid>/<host>)");
  app.add_option("--kill-grace", c.kill_grace_s,
                 "Seconds between the first SIGTERM to the job and killing every descendant "
                 "(default 25: below Slurm's default KillWait of 30 s)")
      ->check(SecondsValidator(0, 86400, /*lo_open=*/false));
  app.add_option("--recipe", c.recipe, "Recipe name or file for the environment plan");
  app.add_option("--sysroot", c.sysroot,
                 "Read /sys, /proc, /dev, /etc under DIR for preflight and facts (fixture tree)");
  app.add_flag("-v,--verbose", c.verbose, "More log lines");
  app.add_option("--signal-ranks", c.signal_ranks,
                 "Deliver these signals (USR1, USR2) to every process of the job, the ranks "
                 "included, not only to its own process (torchrun does not pass them on)")
      ->delimiter(',')
      ->allow_extra_args(false)  // one comma-separated argument: the next one is not a signal
      ->check(CLI::IsMember({"USR1", "USR2", "SIGUSR1", "SIGUSR2"}));
  app.add_flag("--per-task", c.per_task,
               "Allow one safe-launch per Slurm/MPI task on a node (default: refuse; one per "
               "node); each gets its own run directory; local rank 0 runs the node's preflight and "
               "warm-up, the others wait for its verdict");
  AddWarmupOptions(app, f);
  AddRemediationOptions(app, &c.remediation);
  c.hang = AddHangOptions(app);
  app.add_option("command", c.command, "The job: everything after --");
}

Result<RunConfig> ConfigFromFlags(const RunFlags& flags, const Environment& env) {
  RunConfig c = flags.config;
  if (c.list) return c;
  if (c.command.empty()) {
    return MakeError(
        "no command given: put the job after --, e.g. safe-launch -- torchrun "
        "--nproc-per-node=8 train.py");
  }
  c.tasks = TasksOnThisNode(env);
  if (!c.per_task) {
    if (auto s = CheckOncePerNode(c.tasks); !s.ok()) return s.error();
  } else if (c.tasks.count > 1) {
    // The node's tasks meet in the job directory, named by an id every task sees.
    c.job_key = JobKey(env);
    if (c.job_key.empty() && !c.warmup.skip) {
      // N tasks of one node would each be a "node" of the warm-up: without a shared id they
      // cannot leave it to one of them.
      c.warmup.skip = true;
      c.warmup.skip_reason = "--per-task: " + c.tasks.source +
                             " but no id of the launch (SLURM_JOB_ID, PMIX_NAMESPACE) to let "
                             "local rank 0 run it for the node";
    }
  }
  for (const auto& id : flags.waive) {
    if (!IsKnownId(id)) return UnknownIdError(id, "--waive", "safe-launch run --list");
    (IsComparisonId(id) ? c.warmup.waive : c.waive).push_back(id);
  }
  if (c.warmup.skip) {
    // --per-task still wants node 0's address for MASTER_ADDR; without one it is left unset.
    if (c.per_task)
      if (auto t = InferLayout(flags.layout, c.command, env); t.ok()) c.topology = *t;
    return c;
  }
  auto topology = InferLayout(flags.layout, c.command, env);
  if (!topology.ok() && c.SharesNode()) {
    // Per-rank mode was never refused for want of a layout (an MPI job need not be a torch job):
    // the warm-up is skipped, and said so.
    c.warmup.skip = true;
    c.warmup.skip_reason = "--per-task: cannot tell the job's layout: " + topology.error().message;
    return c;
  }
  if (!topology.ok()) {
    Error e = topology.error();
    e.message = "cannot tell the job's layout: " + e.message;
    if (e.fix.find("--no-warmup") == std::string::npos)
      e.fix += (e.fix.empty() ? "" : "; ") + std::string("or skip the warm-up with --no-warmup");
    return e;
  }
  c.topology = *topology;
  if (c.SharesNode()) PerTaskLayout(&*c.topology, c.tasks);
  return c;
}

Result<RunConfig> BuildConfig(const std::vector<std::string>& argv, const Environment& env) {
  CLI::App app{"safe-launch run", "run"};
  RunFlags flags;
  AddRunOptions(app, &flags);
  try {
    // CLI11 takes a vector in reverse order.
    app.parse(std::vector<std::string>(argv.rbegin(), argv.rend()));
  } catch (const CLI::ParseError& e) {
    return MakeError(e.what(), "safe-launch run", "see `safe-launch run --help`");
  }
  return ConfigFromFlags(flags, env);
}

}  // namespace sl::launcher
