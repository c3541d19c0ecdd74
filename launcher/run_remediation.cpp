// Remediation phase of `run` (launcher/remediation.h): after this node's preflight refused the
// job, after node 0's warm-up failed, or after the post-mortem of a hang declared here, the
// job-level diagnosis decides whether one node is drained and the job requeued without it.
#include <unistd.h>

#include <chrono>
#include <climits>
#include <thread>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "launcher/config.h"
#include "launcher/remediation.h"
#include "launcher/run_phases.h"

namespace sl::launcher {
namespace {

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int ExpectedNodes(const Environment& env) {
  for (const char* k : {"SLURM_NNODES", "SLURM_JOB_NUM_NODES"}) {
    auto v = Lookup(env, k);
    if (v && !v->empty()) {
      if (auto n = ParseInt(*v); n.ok()) return static_cast<int>(*n);
    }
  }
  return 1;
}

// The nodes' preflight reports in the job run root: they run theirs at about the same time, and
// the job-level view (one node or all of them?) needs every one. Bounded by `wait`.
void WaitForPeerReports(const std::string& root, const char* report, int expected,
                        std::chrono::seconds wait) {
  const RootedFileReader fs("");
  const auto end = std::chrono::steady_clock::now() + wait;
  for (;;) {
    int seen = 0;
    if (auto names = fs.ListDir(root); names.ok()) {
      for (const auto& n : *names) {
        if (::access((root + "/" + n + "/" + report).c_str(), R_OK) == 0) ++seen;
      }
    }
    if (seen >= expected || std::chrono::steady_clock::now() >= end) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

std::string OwnExecutable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// `safe-launch diagnose ROOT` (writes diagnosis.{json,md,html} there), bounded.
void DiagnoseRoot(const std::string& root, const Environment& env) {
  SpawnSpec spec;
  spec.argv = {OwnExecutable(), "diagnose", root};
  spec.env = env;
  auto r = RunChild(spec, std::chrono::seconds(60), /*capture_stderr=*/true, 1 << 20);
  if (!r.ok()) {
    log::Warn("remediation: could not run diagnose: {}", r.error().Describe());
  } else if (r->timed_out) {
    log::Warn("remediation: diagnose {} ran past 60 s and was stopped", root);
  }
}

}  // namespace

std::string JobRootForRemediation(const RunContext& ctx) {
  if (ctx.run_dir.empty()) return "";
  const std::string root = PathParent(ctx.run_dir);
  std::string above = PathParent(root);
  while (above.size() > 1 && above.back() == '/') above.pop_back();
  const auto slash = above.rfind('/');
  const std::string name = slash == std::string::npos ? above : above.substr(slash + 1);
  return name == "safe-launch-runs" ? root : "";
}

void RemediationPhase(RunContext& ctx, RemediationTrigger trigger, double declared_unix,
                      const std::string& job_root) {
  if (!ctx.remediation) return;
  const RemediationPolicy& policy = *ctx.remediation;
  // report (the default) is what safe-launch did before: the diagnosis alone.
  if (policy.mode == OnNodeFault::kReport && !policy.dry_run) return;
  const std::string job = Lookup(ctx.base_env, "SLURM_JOB_ID").value_or("");
  if (job.empty()) {
    log::Warn("remediation: --on-node-fault={} needs a Slurm job (no SLURM_JOB_ID): nothing done",
              OnNodeFaultName(policy.mode));
    return;
  }
  if (job_root.empty()) {
    log::Warn("remediation: no job run root (<dir>/safe-launch-runs/<job>/<node>): nothing done");
    return;
  }
  RemediationInput in;
  in.run_root = job_root;
  in.job_id = job;
  in.self_node = Lookup(ctx.base_env, "SLURMD_NODENAME").value_or("");
  in.declared_unix = declared_unix > 0 ? declared_unix : WallNow();
  in.env = ctx.base_env;
  if (trigger == RemediationTrigger::kPreflight || trigger == RemediationTrigger::kWarmup) {
    // No post-mortem ran: the job-level diagnosis of the nodes' reports, made here.
    const char* report =
        trigger == RemediationTrigger::kPreflight ? "preflight.json" : "warmup.json";
    WaitForPeerReports(job_root, report, ExpectedNodes(ctx.base_env), std::chrono::seconds(15));
    DiagnoseRoot(job_root, ctx.base_env);
    in.refused_by = trigger == RemediationTrigger::kPreflight ? "preflight" : "warmup";
  }
  Remediate(in, policy);
}

}  // namespace sl::launcher
