#include "common/environment.h"

#include <unistd.h>  // environ (glibc declares it with _GNU_SOURCE, which g++ defines)

#include <cstring>

#include "common/strings.h"

namespace sl {

Environment ProcessEnvironment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    env.emplace(std::string(static_cast<const char*>(*e), eq), std::string(eq + 1));
  }
  return env;
}

std::optional<std::string> Lookup(const Environment& env, std::string_view name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

std::string LaunchId(const Environment& env) {
  auto value = [&](const char* name) {
    auto v = Lookup(env, name);
    return v ? std::string(Trim(*v)) : std::string();
  };
  std::string ns = value("PMIX_NAMESPACE");
  if (ns.empty()) ns = value("OMPI_MCA_ess_base_jobid");
  const std::string job = value("SLURM_JOB_ID");
  if (!ns.empty() && !value("OMPI_COMM_WORLD_SIZE").empty())
    return (job.empty() ? "" : job + ".") + "mpi-" + ns;
  if (!job.empty()) {
    const std::string step = value("SLURM_STEP_ID");
    // A requeued job keeps its id: each attempt gets its own run root, so the diagnosis of
    // attempt N reads only its own nodes' evidence (remediation counts over all of them).
    const std::string restarts = value("SLURM_RESTART_COUNT");
    const std::string attempt = restarts.empty() || restarts == "0" ? "" : ".requeue" + restarts;
    return (step.empty() ? job : job + "." + step) + attempt;
  }
  return ns.empty() ? "" : "mpi-" + ns;
}

}  // namespace sl
