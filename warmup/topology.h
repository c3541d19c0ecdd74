#pragma once
// Where this node sits in the job: node count, node rank, ranks per node and node 0's address.
// The launcher infers it from its flags, the launched command and the scheduler's variables
// (launcher/layout.h); the warm-up only consumes it.
#include <map>
#include <string>
#include <vector>

namespace sl::warmup {

struct Topology {
  int nnodes = 1;
  int node_rank = 0;
  int nproc_per_node = 1;
  /// torchrun's "gpu"/"auto" while the node's GPU count is not known yet (nproc_per_node is 0
  /// until then); "" once resolved or when a count was given.
  std::string nproc_per_node_spec;
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

}  // namespace sl::warmup
