// `safe-launch preflight`: check this node (or a --sysroot fixture tree) and print the report.
// With --slurm (Prolog / HealthCheckProgram) a failing check drains the node; with --epilog the
// node is checked for what the job left behind (launcher/slurm_health.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "launcher/commands.h"
#include "launcher/config.h"
#include "launcher/slurm_health.h"
#include "preflight/check.h"
#include "preflight/finding_codes.h"
#include "preflight/runner.h"

namespace sl::launcher {
namespace {

struct PreflightArgs {
  std::string sysroot;
  bool json = false;
  bool list = false;
  bool codes = false;
  bool verbose = false;
  std::vector<std::string> only;
  std::vector<std::string> waive;
  std::string since;
  bool slurm = false;
  bool epilog = false;
  std::string node_name;
};

// Each scontrol call of --slurm is killed after this: slurmd waits PrologEpilogTimeout (default
// unlimited) for a prolog, and a hung slurmctld must not hang every job start on the node.
constexpr int kScontrolTimeoutMs = 10000;

/// "90", "90s", "30m", "2h", "1d" -> seconds.
Result<double> ParseDuration(const std::string& text) {
  std::string_view s = Trim(text);
  double mult = 1;
  if (!s.empty() && std::string_view("smhd").find(s.back()) != std::string_view::npos) {
    mult = s.back() == 's' ? 1 : s.back() == 'm' ? 60 : s.back() == 'h' ? 3600 : 86400;
    s.remove_suffix(1);
  }
  auto v = ParseDouble(s, "--since");
  if (!v.ok() || *v < 0) {
    return MakeError("expected a duration such as 30m, 2h or 600, got '" + text + "'", "--since");
  }
  return *v * mult;
}

// Seconds since boot of the node (or the sysroot): /dev/kmsg stamps records in microseconds
// since boot.
Result<double> Uptime(const std::string& sysroot) {
  RootedFileReader fs(sysroot);
  auto uptime = fs.ReadFile("/proc/uptime");
  if (!uptime.ok()) return uptime.error();
  return ParseDouble(Split(*uptime, ' ').front(), "/proc/uptime");
}

// kernel_log_since_us for "the last `ago` seconds"; an error message when uptime is unknown.
Result<std::int64_t> SinceUs(const std::string& sysroot, double ago) {
  auto up = Uptime(sysroot);
  if (!up.ok()) return MakeError("needs /proc/uptime: " + up.error().Describe());
  return static_cast<std::int64_t>(std::max(0.0, *up - ago) * 1e6);
}

// The epilog's kernel-log window: --since, else since the job's StartTime (scontrol, bounded).
// An error (the kernel log is then not checked: since boot would blame this job for old events).
Result<std::int64_t> EpilogSince(const PreflightArgs& args, const Environment& env) {
  if (!args.since.empty()) {
    auto ago = ParseDuration(args.since);
    if (!ago.ok()) return ago.error();
    return SinceUs(args.sysroot, *ago);
  }
  auto job = Lookup(env, "SLURM_JOB_ID");
  if (!job) return MakeError("no --since and no SLURM_JOB_ID");
  auto shown = ShowJob(*job, env, kScontrolTimeoutMs);
  if (!shown.ok()) return shown.error();
  auto start = ParseJobStartTime(*shown);
  if (!start) return MakeError("scontrol shows no StartTime for job " + *job);
  return SinceUs(args.sysroot, std::max<double>(0, std::time(nullptr) - *start));
}

// --slurm: drains the node on the first finding that takes it out; the exit status.
int DrainOnFindings(const PreflightArgs& args, const Environment& env,
                    const preflight::PreflightReport& report) {
  std::vector<const Finding*> drainers;
  for (const auto& f : report.findings) {
    if (DrainsNode(f, args.epilog)) drainers.push_back(&f);
  }
  if (drainers.empty()) return exit_code::kOk;
  const Finding& first = *drainers.front();
  const std::string reason =
      DrainReason(first.check_id, ReasonText(first), static_cast<int>(drainers.size()) - 1);
  if (!args.slurm) return exit_code::kChecksFailed;
  DrainOutcome d = DrainNode(args.node_name, reason, env, kScontrolTimeoutMs);
  if (d.drained) {
    std::fprintf(stderr, "safe-launch preflight: drained node %s: reason \"%s\"\n",
                 args.node_name.c_str(), reason.c_str());
  } else if (d.already_out) {
    std::fprintf(stderr,
                 "safe-launch preflight: node %s is out of service already (%s): its reason is "
                 "kept; ours would have been \"%s\"\n",
                 args.node_name.c_str(), d.existing_reason.c_str(), reason.c_str());
  } else {
    std::fprintf(stderr,
                 "safe-launch preflight: could not drain node %s (%s); reason was \"%s\"; the "
                 "non-zero exit lets slurmd drain it instead\n",
                 args.node_name.c_str(), d.error.c_str(), reason.c_str());
  }
  // Non-zero on purpose: as a Prolog it makes Slurm requeue the job off this node (our reason,
  // set first, survives: slurmctld's "Prolog error" drain skips a drained node), and if scontrol
  // failed slurmd's own drain still takes the node out.
  return exit_code::kChecksFailed;
}

// Checks the mode's options; a usage message, or "" when they fit.
std::string CheckModeArgs(PreflightArgs& args, const Environment& env) {
  if (args.epilog && !args.only.empty()) return "--epilog runs its own checks: drop --only";
  // Without --slurm nothing would drain: an Epilog= line missing it passes every node silently.
  if (args.epilog && !args.slurm)
    return "--epilog needs --slurm: the epilog checks exist to drain the node after a job, and "
           "without --slurm nothing is drained; run `safe-launch preflight --slurm --epilog` "
           "(examples/slurm/epilog.sh), with --node-name NODE outside slurmd";
  if (!args.slurm) return "";
  if (auto n = Lookup(env, "SLURMD_NODENAME"); n && !n->empty()) args.node_name = *n;
  if (args.node_name.empty()) {
    return "--slurm drains the Slurm node it runs on, and no node name is known: run it as "
           "slurmd's Prolog, Epilog or HealthCheckProgram (they set SLURMD_NODENAME) or name the "
           "node with --node-name";
  }
  return "";
}

// The options of the preflight run; "" or a usage message. `kernel_log_skipped` says why the
// epilog cannot check the kernel log ("" when it can).
std::string BuildOptions(const PreflightArgs& args, const Environment& env,
                         preflight::PreflightOptions* options, std::string* kernel_log_skipped) {
  options->sysroot = args.sysroot;
  options->only = args.only;
  options->epilog = args.epilog;
  options->waive = args.waive;
  options->verbose = args.verbose;
  if (!args.since.empty()) {
    if (auto ago = ParseDuration(args.since); !ago.ok()) return ago.error().Describe();
  }
  if (args.epilog) {
    auto since = EpilogSince(args, env);
    if (!since.ok()) {
      // The other epilog checks still run; kernel.log gets an error finding instead.
      *kernel_log_skipped = since.error().Describe();
      for (const auto& c : preflight::Registry()) {
        if (c.InEpilog() && std::string_view(c.id) != "kernel.log") options->only.push_back(c.id);
      }
      return "";
    }
    options->kernel_log_since_us = *since;
  } else if (!args.since.empty()) {
    auto ago = ParseDuration(args.since);
    if (!ago.ok()) return ago.error().Describe();
    auto since = SinceUs(args.sysroot, *ago);
    if (!since.ok()) return "--since " + since.error().Describe();
    options->kernel_log_since_us = *since;
  }
  return "";
}

int Run(PreflightArgs args) {
  if (args.list) {
    std::fputs((args.codes ? preflight::CodesText() : ListText()).c_str(), stdout);
    return exit_code::kOk;
  }
  for (const auto& id : args.waive) {
    // The listed warm-up comparisons only run in `run`: say so rather than "unknown id".
    if (IsKnownId(id) && StartsWith(id, "warmup")) {
      std::fprintf(stderr,
                   "safe-launch preflight: --waive: '%s' is a warm-up comparison, which "
                   "preflight does not run (fix: pass it to `safe-launch run --waive`)\n",
                   id.c_str());
      return exit_code::kUsage;
    }
  }
  const Environment env = ProcessEnvironment();
  preflight::PreflightOptions options;
  std::string skipped;
  std::string usage = CheckModeArgs(args, env);
  if (usage.empty()) usage = BuildOptions(args, env, &options, &skipped);
  if (!usage.empty()) {
    std::fprintf(stderr, "safe-launch preflight: %s\n", usage.c_str());
    return exit_code::kUsage;
  }
  auto report = preflight::RunPreflight(options, env);
  if (!report.ok()) {
    std::fprintf(stderr, "safe-launch preflight: %s\n", report.error().Describe().c_str());
    return exit_code::kUsage;
  }
  if (!skipped.empty()) {
    // Since boot would blame this job for every old event: say it was not checked instead (in
    // kernel.log's place, first).
    report->findings.insert(
        report->findings.begin(),
        Coded(MakeFinding("kernel.log", "node", Outcome::kError,
                          "kernel log not checked: the job's start is unknown: " + skipped,
                          "pass --since (e.g. the job's run time) or check that scontrol answers"),
              "kernel.log/job_start_unknown"));
    report->verdict = Worst(report->findings);
  }
  if (args.json) {
    std::cout << JsonText(preflight::ReportToJson(*report)) << "\n";
  } else {
    const bool color = ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
    std::fputs(preflight::RenderText(*report, args.verbose, color).c_str(), stdout);
  }
  std::fflush(stdout);
  if (args.slurm || args.epilog) return DrainOnFindings(args, env, *report);
  return report->verdict == Outcome::kFail ? exit_code::kChecksFailed : exit_code::kOk;
}

}  // namespace

void SetupPreflight(CLI::App& sub, int* exit_code) {
  auto args = std::make_shared<PreflightArgs>();
  sub.add_option("--sysroot", args->sysroot,
                 "Read /sys, /proc, /dev, /etc under DIR (a fixture tree) instead of this node");
  sub.add_flag("--json", args->json, "Print the report as JSON (schema in doc/manual.md)");
  sub.add_option("--only", args->only, "Run only these check ids or groups (e.g. ib.gid,os)")
      ->delimiter(',');
  sub.add_option("--waive", args->waive, "Do not count fail/warn of these check ids")
      ->delimiter(',');
  auto* list =
      sub.add_flag("--list", args->list, "List the checks (and the warm-up comparisons) and exit");
  sub.add_flag("--codes", args->codes,
               "With --list: list every finding code (outcome, meaning, next step) instead")
      ->needs(list);
  sub.add_flag("-v,--verbose", args->verbose, "Show evidence (files and raw values) and fixes");
  sub.add_option("--since", args->since,
                 "kernel.log: only records newer than this (e.g. 2h, 30m); default since boot");
  auto* slurm =
      sub.add_flag("--slurm", args->slurm,
                   "Prolog/HealthCheckProgram mode: a failing check drains this Slurm node "
                   "(scontrol, reason = the check id)");
  sub.add_flag("--epilog", args->epilog,
               "After a job: check for processes left on /dev/nvidia* and kernel errors since the "
               "job began (with --slurm: drain on them)");
  sub.add_option("--node-name", args->node_name,
                 "--slurm: the Slurm node to drain when SLURMD_NODENAME is not set")
      ->needs(slurm);
  sub.callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sl::launcher
