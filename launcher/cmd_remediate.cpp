// `safe-launch remediate RUN_ROOT`: the remediation `run` does after a post-mortem, on its own
// (from an epilog, by hand after `safe-launch diagnose RUN_ROOT`, or to see with --dry-run what
// it would do): diagnosis.json of RUN_ROOT -> drain / requeue (launcher/remediation.h).
#include <memory>
#include <string>

#include "common/exit_codes.h"
#include "common/log.h"
#include "launcher/commands.h"
#include "launcher/config.h"
#include "launcher/remediation.h"

namespace sl::launcher {

void SetupRemediate(CLI::App& sub, int* exit_code) {
  struct Args {
    RemediationFlags flags;
    std::string run_root;
    std::string job_id;
  };
  auto args = std::make_shared<Args>();
  AddRemediationOptions(sub, &args->flags);
  sub.add_option("--job-id", args->job_id, "The Slurm job (default: SLURM_JOB_ID)");
  sub.add_option("run_root", args->run_root, "The job run root holding diagnosis.json")->required();
  sub.callback([args, exit_code] {
    const Environment env = ProcessEnvironment();
    log::Init(log::HostName(), {}, false);
    auto policy = ResolveRemediationPolicy(args->flags, env, {});
    if (!policy.ok()) {
      log::Error("{}", policy.error().Describe());
      *exit_code = exit_code::kUsage;
      return;
    }
    RemediationInput in;
    in.run_root = args->run_root;
    in.job_id = args->job_id.empty() ? Lookup(env, "SLURM_JOB_ID").value_or("") : args->job_id;
    in.env = env;
    const nlohmann::json rec = Remediate(in, *policy);
    bool failed = false;
    for (const auto& a : rec["actions"])
      failed = failed || (a.value("ran", false) && !a.value("ok", false));
    *exit_code = failed ? exit_code::kChecksFailed : exit_code::kOk;
  });
}

}  // namespace sl::launcher
