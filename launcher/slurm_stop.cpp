#include "launcher/slurm_stop.h"

#include <map>
#include <string>

#include "common/strings.h"

namespace sl::launcher {
namespace {

// "Key=Value Key=Value ..." as `scontrol -o` prints a record on one line.
std::map<std::string, std::string> Fields(std::string_view text) {
  std::map<std::string, std::string> out;
  for (const auto& tok : Split(text, ' ')) {
    auto eq = tok.find('=');
    if (eq != std::string::npos && !out.count(tok.substr(0, eq)))
      out[tok.substr(0, eq)] = std::string(Trim(tok.substr(eq + 1)));
  }
  return out;
}

}  // namespace

nlohmann::json SlurmStopCause(std::string_view scontrol_output) {
  auto f = Fields(scontrol_output);
  const std::string state = f.count("JobState") ? f["JobState"] : "";
  const std::string reason = f.count("Reason") ? f["Reason"] : "";
  auto out = [&](const char* cause, const char* why) {
    return nlohmann::json{
        {"cause", cause}, {"explanation", why}, {"job_state", state}, {"reason", reason}};
  };
  if (state.empty()) return out("unknown", "scontrol gave no job state");
  if (reason == "TimeLimit" || state == "TIMEOUT" || state == "DEADLINE")
    return out("time_limit", "the job reached its time limit (--time)");
  if (state == "NODE_FAIL" || reason == "NodeDown" || reason == "NodeFail" ||
      StartsWith(reason, "Node"))
    return out("node_failure", "a node of the job failed (slurmctld lost it or it was drained)");
  if (state == "RUNNING" || state == "SUSPENDED")
    return out("step_stopped",
               "the job goes on, only this step is stopped: srun --kill-on-bad-exit after another "
               "task failed, or scancel of the step");
  if (state == "COMPLETING" || state == "CANCELLED")
    return out("scancel", "the job was cancelled before its time limit (scancel)");
  if (state == "PREEMPTED") return out("preempted", "the job was preempted");
  return out("unknown", "no known cause for this job state");
}

}  // namespace sl::launcher
