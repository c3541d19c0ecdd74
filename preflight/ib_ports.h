#pragma once
// Shared by the ib.* checks: which ports NCCL will use (NCCL_IB_HCA, NCCL_IB_DISABLE), node paths
// of port attributes for evidence, and the gather problems that belong to a port.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/nccl_select.h"
#include "common/node_facts.h"

namespace sl::preflight {

/// NCCL's view of the IB ports: NCCL_IB_DISABLE=1 uses none; NCCL_IB_HCA filters by name/port
/// ('^' exclude, '=' exact, ':N' port). An unparsable NCCL_IB_HCA is treated as unset here
/// (env.nccl reports it).
class NcclPortSelection {
 public:
  explicit NcclPortSelection(const Environment& env);
  /// Would NCCL consider this port (whatever its state)?
  bool Uses(const IbPort& port) const;
  /// Why NCCL will not use the port, e.g. "excluded by NCCL_IB_HCA=^=mlx5_3"; "" when used.
  std::string WhyNot(const IbPort& port) const;
  /// "NCCL_IB_HCA unset" or "NCCL_IB_HCA=mlx5_0,mlx5_1", for messages about used ports.
  std::string Describe() const;

 private:
  bool disabled_ = false;
  bool has_filter_ = false;
  std::string spec_;
  NcclNameFilter filter_;
};

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
