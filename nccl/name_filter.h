#pragma once
// NCCL's interface-selection syntax, shared by checks, lint and recipes.
// NCCL_IB_HCA:        "mlx5_0:1,mlx5_1" (prefix match), "=mlx5_0" (exact), "^mlx5_3" (exclude),
//                     "^=mlx5_3" (exclude, exact); ":N" restricts to port N.
// NCCL_SOCKET_IFNAME: "eth" (prefix), "=eth0" (exact), "^docker,lo" (exclude), "^=eth1".
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl::nccl {

struct NameFilter {
  bool exclude = false;  ///< leading '^'
  bool exact = false;    ///< leading '=' (after '^' if both)
  struct Entry {
    std::string name;
    int port = -1;  ///< -1: any port (NCCL_IB_HCA only)
  };
  std::vector<Entry> entries;
};

/// Parses NCCL_IB_HCA. Errors (empty entries, bad port numbers) name the variable and value.
Result<NameFilter> ParseIbHca(std::string_view spec);
/// Parses NCCL_SOCKET_IFNAME (no ports).
Result<NameFilter> ParseSocketIfname(std::string_view spec);

/// Would NCCL use `device`:`port` under this filter? (prefix or exact match; '^' inverts)
bool FilterSelectsIbPort(const NameFilter& f, std::string_view device, int port);
/// Would NCCL consider interface `name` under this filter?
bool FilterSelectsIfname(const NameFilter& f, std::string_view name);

/// Writes the filter back in NCCL syntax, e.g. "=mlx5_0:1,mlx5_1:1".
std::string FormatFilter(const NameFilter& f);

}  // namespace sl::nccl
