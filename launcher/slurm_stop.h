#pragma once
// Why Slurm stops a job, told apart for status.json: a SIGTERM from slurmstepd looks the same
// for a time limit, scancel, srun --kill-on-bad-exit and a node failure; the job's record in
// slurmctld (`scontrol -o show job`, asked once, bounded in time) says which. Pure parse here;
// the query runs through the supervisor's RunHelper (cmd_run.cpp).
#include <nlohmann/json.hpp>
#include <string_view>

namespace sl::launcher {

/// {"cause": "time_limit" | "scancel" | "node_failure" | "step_stopped" | "unknown",
///  "explanation": "...", "job_state": "...", "reason": "..."} from `scontrol -o show job ID`
/// output. While a job is ended its state reads COMPLETING (the base state is hidden until
/// every node is done), so: Reason=TimeLimit is the time limit, a node reason (NodeDown,
/// NodeFail) or NODE_FAIL is a node failure, a job that ends early (COMPLETING, CANCELLED) is
/// scancel, and a job still RUNNING means only this step is stopped (srun --kill-on-bad-exit
/// after another task failed, or `scancel JOB.STEP`).
nlohmann::json SlurmStopCause(std::string_view scontrol_output);

}  // namespace sl::launcher
