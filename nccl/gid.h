#pragma once
// NCCL's RoCE GID choice and the RoCE path MTU, as NCCL and the kernel compute them. Pure: the
// port's facts (common/node_facts.h) and the environment in, the choice out.
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/node_facts.h"

namespace sl::nccl {

/// The GID index NCCL >= 2.21 picks on its own for a RoCE port (RoCE v2, address family from
/// NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE, NCCL_IB_ROCE_VERSION_NUM; skipping zero and
/// link-local GIDs); nullopt when the table has no usable entry.
std::optional<int> SelectGidIndex(const IbPort& port, const Environment& env);

/// NCCL's RoCE GID selection in full (src/transport/net_ib, ncclIbGetGidIndex).
struct GidChoice {
  int index = 0;           ///< the index NCCL ends up with (NCCL_IB_GID_INDEX when set >= 0)
  bool from_env = false;   ///< NCCL_IB_GID_INDEX was set (>= 0): NCCL uses it as is
  std::string env_text;    ///< from_env: NCCL_IB_GID_INDEX as written, for evidence
  bool usable = false;     ///< the entry is configured, not link-local, of the wanted RoCE
                           ///< version and address family, and inside NCCL_IB_ADDR_RANGE
  int roce_version = 2;    ///< wanted: NCCL_IB_ROCE_VERSION_NUM (default 2)
  bool want_ipv6 = false;  ///< NCCL_IB_ADDR_FAMILY=AF_INET6
  std::string addr_range;  ///< NCCL_IB_ADDR_RANGE as NCCL understood it ("" = none/ignored)
  std::vector<int> usable_indices;  ///< every usable entry of the table, ascending
};
/// `honour_gid_index` false ignores NCCL_IB_GID_INDEX (what NCCL would pick on its own).
GidChoice SimulateGidIndex(const IbPort& port, const Environment& env,
                           bool honour_gid_index = true);
/// The IB path MTU a RoCE port allows over a netdev of `netdev_mtu` bytes (kernel iboe_get_mtu:
/// the largest of 256..4096 that fits after 96 bytes of RoCE headers); 0 below 352.
int RoceIbMtuForNetdevMtu(int netdev_mtu);

}  // namespace sl::nccl
