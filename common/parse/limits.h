#pragma once
// /proc/<pid>/limits: text in, rows out; never throws.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

/// The value /proc/<pid>/limits prints as "unlimited" (RLIM_INFINITY).
inline constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

/// One row of /proc/<pid>/limits.
struct ProcLimit {
  std::string name;                  ///< "Max locked memory"
  std::uint64_t soft = 0, hard = 0;  ///< kUnlimited for "unlimited"
  std::string units;                 ///< "bytes", "files", "" (nice/rtprio)
  std::string raw;                   ///< the line as read, trimmed
};

/// Parses the whole table. The header line is required; a row whose values are neither a number
/// nor "unlimited" is an error naming the 1-based line.
Result<std::vector<ProcLimit>> ParseProcLimits(std::string_view text);
/// The row named `name` ("Max locked memory"); error when absent.
Result<ProcLimit> FindLimit(std::string_view text, std::string_view name);

}  // namespace sl
