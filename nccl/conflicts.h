#pragma once
// User NCCL_* values that contradict the node's facts, as NCCL would act on them. Shared by the
// environment plan (recipes/) and the env.nccl preflight check.
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/node_facts.h"

namespace sl::nccl {

/// A user value that contradicts the node (NCCL_IB_HCA naming a down port, NCCL_IB_GID_INDEX on a
/// RoCE v1 entry, NCCL_IB_DISABLE=1 with active IB ports). The plan keeps the user value.
struct Conflict {
  std::string name;
  std::string value;
  std::string message;  ///< what is wrong, with the fact (port, index, state)
  std::string fix;
  bool warning_only = false;  ///< a likely mistake rather than a certain one (prefix match)
};

/// Contradictions between NCCL_* values in `env` and the node: NCCL_IB_DISABLE=1 or NCCL_NET=Socket
/// with active RDMA ports, NCCL_IB_HCA naming missing/down ports or selecting none (or a prefix
/// that also selects mlx5_10.. for mlx5_1), NCCL_IB_GID_INDEX on an empty/link-local/RoCE v1 entry,
/// NCCL_SOCKET_IFNAME matching no (up) interface. Integer values are read as NCCL reads them
/// (nccl/param.h).
std::vector<Conflict> FactConflicts(const Environment& env, const NodeFacts& facts);

}  // namespace sl::nccl
