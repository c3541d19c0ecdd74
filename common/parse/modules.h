#pragma once
// /proc/modules: text in, values out; never throws.
#include <string_view>

namespace sl {

/// /proc/modules has a line for `module` (first field; "nvidia_peermem").
bool ModuleListed(std::string_view proc_modules, std::string_view module);

}  // namespace sl
