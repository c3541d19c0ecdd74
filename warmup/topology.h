#pragma once
// Where this node sits in the job: node count, node rank, ranks per node and node 0's address,
// inferred from (highest priority first) safe-launch's own flags, the torchrun arguments in the
// launched command (and torchrun's PET_* environment defaults), then Slurm's environment.
// Pure: the caller passes argv and an Environment; nothing here reads the machine.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/result.h"

namespace sl::warmup {

/// Expands Slurm hostlist syntax: "gpu[01-04,07]" -> gpu01 gpu02 gpu03 gpu04 gpu07;
/// "a[1-2]-ib,b3" -> a1-ib a2-ib b3; several bracket groups in one name multiply out.
/// Zero padding follows the range's first bound, as Slurm does. Errors name the offending part.
Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist);

/// safe-launch's explicit flags; unset fields fall through to torchrun and Slurm.
struct TopologyFlags {
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::optional<int> nproc_per_node;
  std::optional<std::string> rendezvous;  ///< "HOST:PORT", "[v6]:PORT" or "HOST"
  std::optional<int> warmup_port;
};

struct Topology {
  int nnodes = 1;
  int node_rank = 0;
  int nproc_per_node = 1;
  std::string rendezvous_host = "127.0.0.1";  ///< node 0's address: the warm-up store is there
  int rendezvous_port = 29500;
  int warmup_port = 29501;         ///< rendezvous_port + 1 unless --warmup-port
  std::vector<std::string> hosts;  ///< expected host per node rank (Slurm), may be empty
  /// Where each field came from, for messages: {"nnodes", "torchrun --nnodes"}, ...
  std::map<std::string, std::string> source;

  int WorldSize() const { return nnodes * nproc_per_node; }
  /// torchrun's rank assignment: node_rank * nproc_per_node + local_rank.
  int GlobalRank(int local_rank) const { return node_rank * nproc_per_node + local_rank; }
  /// "node 1 (gpu02)" when the host is known from Slurm, else "node 1".
  std::string NodeLabel(int node) const;
};

/// The torchrun arguments found in `command` (torchrun, python -m torch.distributed.run or
/// torch.distributed.launch), keyed by canonical dashed name ("nnodes", "nproc-per-node", ...);
/// both spellings ("--nproc_per_node", torch 1.13) and "--x=v" / "--x v" forms are accepted.
/// Arguments after the training script belong to the script and are ignored.
std::map<std::string, std::string> TorchrunArguments(const std::vector<std::string>& command);

/// Infers the topology. `local_gpus` resolves torchrun's "--nproc-per-node=gpu|auto".
/// Errors name the source of the bad value (flag, torchrun argument or variable) and the fix.
Result<Topology> InferTopology(const TopologyFlags& flags, const std::vector<std::string>& command,
                               const Environment& env, int local_gpus = 0);

/// Splits "HOST:PORT" / "[v6addr]:PORT" / "HOST"; port -1 when absent.
Result<std::pair<std::string, int>> SplitHostPort(std::string_view endpoint, std::string_view what);

}  // namespace sl::warmup
