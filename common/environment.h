#pragma once
// The process environment as a value, so pure code (resolve, lint) never calls getenv.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace sl {

using Environment = std::map<std::string, std::string, std::less<>>;

/// Snapshot of this process's environ.
Environment ProcessEnvironment();
std::optional<std::string> Lookup(const Environment& env, std::string_view name);

/// The id of the launch every task of one job sees, or "" when there is none: under mpirun
/// (OMPI_COMM_WORLD_SIZE set) "mpi-<PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid>", prefixed with
/// "<SLURM_JOB_ID>." inside an allocation (mpirun's ranks on the first node run in the batch step,
/// the others under the srun that started their daemon: Slurm's step differs between them, the
/// namespace does not); else Slurm's job[.step]; else "mpi-<namespace>". Names the run
/// directory's job part and the warm-up store's namespace, so both agree on every node.
std::string LaunchId(const Environment& env);

}  // namespace sl
