#pragma once
// Shared by the ib.* checks: node paths of port attributes for evidence, and the gather problems
// that belong to a port. Which ports NCCL uses is nccl/ports.h.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/node_facts.h"
#include "nccl/ports.h"

namespace sl::preflight {

/// "/sys/class/infiniband/mlx5_0/ports/1/<rel>" (node path, for evidence).
std::string IbPortPath(const IbPort& port, std::string_view rel);

/// Gather problems of this port whose attribute starts with one of `attribute_prefixes`
/// (e.g. {"state", "rate"} or {"gids"}); all of the port's problems when the list is empty.
std::vector<const IbProblem*> IbProblemsFor(const NodeFacts& facts, const IbPort& port,
                                            std::initializer_list<std::string_view> prefixes);

/// An `error` finding for a port whose files could not be read: names every host path.
Finding IbReadErrorFinding(std::string_view check_id, const IbPort& port,
                           const std::vector<const IbProblem*>& problems);

/// `error` findings for device-level problems (unreadable /sys/class/infiniband, a device
/// without a readable ports/ directory), or an empty vector.
std::vector<Finding> IbDeviceErrorFindings(std::string_view check_id, const NodeFacts& facts);

}  // namespace sl::preflight
