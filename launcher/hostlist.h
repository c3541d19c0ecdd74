#pragma once
// Slurm's hostlist syntax (SLURM_JOB_NODELIST): the expected host of every node rank.
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl::launcher {

/// Expands Slurm hostlist syntax: "gpu[01-04,07]" -> gpu01 gpu02 gpu03 gpu04 gpu07;
/// "a[1-2]-ib,b3" -> a1-ib a2-ib b3; several bracket groups in one name multiply out.
/// Zero padding follows the range's first bound, as Slurm does. Errors name the offending part.
Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist);

}  // namespace sl::launcher
