#pragma once
// Shared by os.memlock and os.nofile: one row of /proc/self/limits, or an error finding.
#include <optional>
#include <string_view>

#include "common/file_reader.h"
#include "common/finding.h"
#include "common/parse/limits.h"

namespace sl::preflight {

/// Reads row `row` ("Max locked memory") of /proc/self/limits. On success adds the raw row as
/// evidence to `f`; on failure turns `f` into an `error` finding that names the file and the fix
/// (`what` is e.g. "the memlock limit") and returns nullopt.
std::optional<ProcLimit> ReadProcLimitRow(const FileReader& fs, std::string_view row,
                                          std::string_view what, Finding* f);

}  // namespace sl::preflight
