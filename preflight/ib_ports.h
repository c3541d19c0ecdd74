#pragma once
// Shared by the ib.* checks: the read errors of a port's facts (IbPort::sysfs) and the findings
// made of them, and device-level gather problems. Which ports NCCL uses is nccl/ports.h.
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/node_facts.h"
#include "nccl/ports.h"

namespace sl::preflight {

/// "/sys/class/infiniband/mlx5_0/ports/1/<rel>" (node path, for evidence): only for what the
/// port's facts do not hold, the counters directories (NodeFacts::ib_counters keys).
std::string IbPortPath(const IbPort& port, std::string_view rel);

/// A port file that could not be read or parsed: its fact's node path and the reason.
struct IbReadError {
  std::string path;     ///< node path, e.g. /sys/class/infiniband/mlx5_0/ports/1/state
  std::string message;  ///< reason, with the host path (root prefix included)
};

/// Appends `fact`'s error when it was gathered (has a path) but holds no value.
template <typename T>
void AddReadError(const Fact<T>& fact, std::vector<IbReadError>* out) {
  if (fact.ok() || fact.path.empty()) return;
  const Error& e = fact.error;
  out->push_back({fact.path, e.where.empty() ? e.message : e.where + ": " + e.message});
}

/// The read errors of the port's state, phys_state, rate and link_layer facts.
std::vector<IbReadError> IbStateReadErrors(const IbPort& port);
/// The read errors of the port's GID table facts (ls gids/, gids/I).
std::vector<IbReadError> IbGidReadErrors(const IbPort& port);

/// An `error` finding for a port whose files could not be read: names every host path.
Finding IbReadErrorFinding(std::string_view check_id, const IbPort& port,
                           const std::vector<IbReadError>& problems);

/// `error` findings for device-level problems (unreadable /sys/class/infiniband, a device
/// without a readable ports/ directory), or an empty vector.
std::vector<Finding> IbDeviceErrorFindings(std::string_view check_id, const NodeFacts& facts);

}  // namespace sl::preflight
