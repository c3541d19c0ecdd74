#pragma once
// The run directory: one per job and host, holding status.json, preflight.json, env-plan.json,
// the output tails and hang bundles. Default
// ${SLURM_SUBMIT_DIR:-$PWD}/safe-launch-runs/<jobid[.stepid] | mpi-<ns> | UTC time-pid>/<host>.
#include <sys/types.h>

#include <chrono>
#include <string>

#include "common/environment.h"
#include "common/result.h"

namespace sl::watchdog {

/// The directory to use (not created). `explicit_dir` (--run-dir) wins when non-empty; `cwd` is
/// used when SLURM_SUBMIT_DIR is unset. The job part is Slurm's job[.step], else mpirun's
/// "mpi-<PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid>", else UTC time and pid. The leaf is the host,
/// plus "_<SLURMD_NODENAME>" when Slurm's node name differs (several slurmd on one host), plus
/// "-rank<task>" when `task` is given (--per-task, MPI per-rank mode). Pure: tested without
/// touching the disk.
std::string DefaultRunDir(const std::string& explicit_dir, const Environment& env,
                          const std::string& cwd, const std::string& host,
                          std::chrono::system_clock::time_point now, int pid,
                          const std::string& task = "");

/// Modes in the run directory: it holds the job's command line and output (item 7 of issue 12).
inline constexpr mode_t kRunDirMode = 0700;
inline constexpr mode_t kRunFileMode = 0600;

/// Creates `dir` and its parents (0755; the leaf 0700, made with mkdirat relative to the parent's
/// fd). The leaf is always made new: when the name exists (a directory, even an empty one of
/// ours, a file or a link) ".1", ".2", ... is appended, so two safe-launch on one node never
/// share a run directory and a directory someone else prepared is never written into. Returns
/// the directory actually created; the error names the path and the fix (permissions,
/// read-only or full file system).
Result<std::string> CreateRunDir(const std::string& dir);

/// Writes `content` to dir/name (0600) through sl::WriteFileAtomic: O_EXCL|O_NOFOLLOW temp name,
/// rename relative to the directory's O_NOFOLLOW fd. The error's fix adds --run-dir.
Status WriteRunFile(const std::string& dir, const std::string& name, const std::string& content);

}  // namespace sl::watchdog
