#pragma once
// /proc/sys values: text in, numbers out; never throws.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

/// Whitespace/tab separated unsigned integers ("4096\t131072\t6291456"). Error on garbage or
/// when the count differs from `expected` (0 = any).
Result<std::vector<std::uint64_t>> ParseSysctlValues(std::string_view text, std::size_t expected);

}  // namespace sl
