#pragma once
// The job's layout (node count, node rank, ranks per node, node 0's address) from what each
// launcher says. One function per launcher turns its arguments or variables into LayoutHints;
// MergeLayout takes, field by field, the first hint in priority order: safe-launch's own flags,
// the launched torchrun (and its PET_* defaults), torch.distributed's MASTER_ADDR/MASTER_PORT,
// then Slurm. Adding a launcher (mpirun's OMPI_COMM_WORLD_*, srun's SLURM_STEP_*) is one more
// hints function and one more entry in InferLayout's list. Pure: nothing here reads the machine.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/environment.h"
#include "common/result.h"
#include "warmup/topology.h"

namespace sl::launcher {

/// One launcher's value for one field of the layout. A value that does not parse is kept as its
/// Error, which counts only when this hint is the one chosen (a lower-priority source's garbage
/// does not fail a job whose flags already say everything).
template <typename T>
struct Hint {
  Result<T> value;
  std::string source;  ///< for messages: "torchrun --nnodes", "SLURM_NODEID", "--rendezvous"
  std::string text;    ///< the raw value as written
};

/// Node 0's address; port -1 when the source names only the host.
struct Endpoint {
  std::string host;
  int port = -1;
};

/// ranks per node = one per local GPU (torchrun --nproc-per-node=gpu|auto).
inline constexpr int kRanksPerLocalGpu = 0;

/// What one launcher says about the layout; absent fields fall through to the next launcher.
struct LayoutHints {
  std::optional<Hint<int>> nnodes;
  std::optional<Hint<int>> node_rank;
  std::optional<Hint<int>> nproc_per_node;  ///< kRanksPerLocalGpu: resolved by ResolveLocalGpus
  std::optional<Hint<Endpoint>> rendezvous;
  std::optional<Hint<int>> port;  ///< rendezvous port when the chosen endpoint has none
  std::optional<Hint<std::vector<std::string>>> hosts;  ///< expected host per node rank
  std::optional<Hint<int>> warmup_port;
};

/// safe-launch's own layout flags, as CLI11 stored them (0 / -1 / "" = not given; CLI11's
/// validators have already checked their ranges).
struct LayoutFlags {
  int nnodes = 0;
  int node_rank = -1;
  int nproc_per_node = 0;
  std::string rendezvous;  ///< "HOST:PORT", "[v6]:PORT" or "HOST"
  int warmup_port = 0;
};

/// --nnodes, --node-rank, --nproc-per-node, --rendezvous, --warmup-port.
LayoutHints FlagHints(const LayoutFlags& flags);
/// torchrun / python -m torch.distributed.run|launch in `command`: its arguments, else its
/// PET_<NAME> environment defaults; --standalone is one node on 127.0.0.1:29400. Empty when
/// the command is not torchrun.
LayoutHints TorchrunHints(const std::vector<std::string>& command, const Environment& env);
/// torch.distributed's env:// rendezvous variables MASTER_ADDR and MASTER_PORT.
LayoutHints TorchEnvHints(const Environment& env);
/// Slurm: SLURM_NNODES / SLURM_JOB_NUM_NODES, SLURM_NODEID, SLURM_JOB_NODELIST (node 0 = its
/// first host). A malformed node list is an error whatever else is given.
LayoutHints SlurmHints(const Environment& env);

/// MPI launchers: Open MPI's OMPI_COMM_WORLD_{SIZE,RANK,LOCAL_SIZE}, else MPICH/Hydra's
/// PMI_SIZE/PMI_RANK/MPI_LOCALNRANKS (PMIX_RANK for the rank under PMIx): ranks per node = the
/// local size, nodes = size / local size, node rank = rank / local size (ranks placed by node,
/// mpirun's default --map-by slot). Empty when no MPI launcher is seen.
LayoutHints MpiHints(const Environment& env);

/// The first hint per field, in `by_priority` order; defaults for the rest (1 node, rank 0,
/// 1 rank per node, 127.0.0.1:29500, warm-up port = rendezvous port + 1); then the consistency
/// checks. Errors name the source of the bad value and the fix.
Result<warmup::Topology> MergeLayout(const std::vector<LayoutHints>& by_priority);

/// How many safe-launch the launcher started on this node, and which one this is. safe-launch
/// runs once per node (torchrun starts the node's ranks); a count above 1 is refused unless
/// --per-task. Sources, first found wins: Open MPI (OMPI_COMM_WORLD_LOCAL_SIZE/LOCAL_RANK),
/// MPICH/Hydra (MPI_LOCALNRANKS/MPI_LOCALRANKID), then, inside a Slurm step (SLURM_STEP_ID),
/// SLURM_STEP_TASKS_PER_NODE's entry for SLURM_NODEID ("2(x2),1" form), else
/// SLURM_NTASKS_PER_NODE, and SLURM_LOCALID.
struct LocalTasks {
  int count = 1;       ///< safe-launch processes on this node
  int local_rank = 0;  ///< this one's index among them
  std::string rank;    ///< global task rank (SLURM_PROCID, OMPI_COMM_WORLD_RANK, ...); ""
  std::string source;  ///< "SLURM_STEP_TASKS_PER_NODE=2(x2)" for messages; "" when none
};
LocalTasks TasksOnThisNode(const Environment& env);

/// The id of this launch that every task sees: Slurm's SLURM_JOB_ID[.SLURM_STEP_ID], else
/// PMIx's PMIX_NAMESPACE (Open MPI 4+, srun --mpi=pmix), else OMPI_MCA_ess_base_jobid; "" when
/// none is set (MPICH/Hydra exports no id of its launch).
std::string JobKey(const Environment& env);

/// Where several --per-task tasks share a node, the layout the node's warm-up uses: ranks per
/// node = the node's task count when no source gave it (srun --ntasks-per-node=N).
void PerTaskLayout(warmup::Topology* topology, const LocalTasks& tasks);

/// The refusal when `tasks` says several safe-launch share this node: names the variable and
/// the fix (srun --ntasks-per-node=1, or --per-task).
Status CheckOncePerNode(const LocalTasks& tasks);

/// torch.distributed's per-rank variables for one launcher task in --per-task mode (mpirun,
/// srun --ntasks-per-node=N starting the ranks themselves): RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE from Open MPI (OMPI_COMM_WORLD_*), MPICH/Hydra (PMI_RANK, PMI_SIZE,
/// MPI_LOCALRANKID, MPI_LOCALNRANKS), PMIx (PMIX_RANK) or Slurm (SLURM_PROCID, SLURM_NTASKS,
/// SLURM_LOCALID), and MASTER_ADDR/MASTER_PORT from the job's layout when known. Only variables
/// `env` does not already set are returned: what the user set is never overridden.
Environment RankEnvironment(const Environment& env, const LocalTasks& tasks,
                            const std::string& master_addr, int master_port);

/// MergeLayout over flags, torchrun, torch env and Slurm.
Result<warmup::Topology> InferLayout(const LayoutFlags& flags,
                                     const std::vector<std::string>& command,
                                     const Environment& env);

/// The rendezvous endpoint the job's torch will use, from the launched command and environment
/// alone (not safe-launch's flags, not Slurm): torchrun's --rdzv-endpoint or --master-addr with
/// --master-port (or their PET_* defaults), else MASTER_ADDR/MASTER_PORT (env://). nullopt when
/// neither names one or the one named does not parse.
struct JobEndpoint {
  std::string host;
  int port = 0;
  std::string source;  ///< "torchrun --rdzv-endpoint", "MASTER_ADDR + MASTER_PORT", ...
};
std::optional<JobEndpoint> TorchEndpoint(const std::vector<std::string>& command,
                                         const Environment& env);

/// Turns ranks-per-local-GPU into the count once the node's GPUs are known; an error naming the
/// source and --nproc-per-node when there are none.
Status ResolveLocalGpus(warmup::Topology* topology, int local_gpus);

/// The torchrun arguments found in `command` (torchrun, python -m torch.distributed.run or
/// torch.distributed.launch), keyed by canonical dashed name ("nnodes", "nproc-per-node", ...);
/// both spellings ("--nproc_per_node", torch 1.13) and "--x=v" / "--x v" forms are accepted.
/// Arguments after the training script belong to the script and are ignored.
std::map<std::string, std::string> TorchrunArguments(const std::vector<std::string>& command);

/// Splits "HOST:PORT" / "[v6addr]:PORT" / "HOST"; port -1 when absent.
Result<std::pair<std::string, int>> SplitHostPort(std::string_view endpoint, std::string_view what);

}  // namespace sl::launcher
