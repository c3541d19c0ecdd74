#pragma once
// Shared by os.memlock and os.nofile: one row of /proc/self/limits, or an error finding.
#include <optional>
#include <string_view>

#include "common/fact.h"
#include "common/finding.h"
#include "common/parse/limits.h"

namespace sl::preflight {

/// The gathered row of /proc/self/limits. When it is there adds the raw row as evidence to `f`;
/// when it could not be read or parsed turns `f` into an `error` finding that names the file and
/// the fix (`what` is e.g. "the memlock limit") and returns nullopt.
std::optional<ProcLimit> LimitRow(const Fact<ProcLimit>& row, std::string_view what, Finding* f);

}  // namespace sl::preflight
