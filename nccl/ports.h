#pragma once
// Which IB/RoCE ports NCCL will use (src/transport/net_ib*: NCCL_IB_DISABLE, NCCL_IB_HCA).
#include <string>
#include <string_view>

#include "common/environment.h"
#include "common/node_facts.h"
#include "nccl/name_filter.h"

namespace sl::nccl {

/// NCCL's view of the IB ports: NCCL_IB_DISABLE=1 uses none; NCCL_IB_HCA filters by name/port
/// ('^' exclude, '=' exact, ':N' port). An unparsable NCCL_IB_HCA is treated as unset here
/// (env.nccl reports it).
class PortSelection {
 public:
  explicit PortSelection(const Environment& env);
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
  NameFilter filter_;
};

/// "mlx5_0:1 (ACTIVE, 400 Gb/sec (4X NDR), RoCE)" for messages.
std::string DescribePort(const IbPort& p);

}  // namespace sl::nccl
