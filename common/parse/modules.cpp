#include "common/parse/modules.h"

#include "common/strings.h"

namespace sl {
bool ModuleListed(std::string_view proc_modules, std::string_view module) {
  for (const auto& line : SplitLines(proc_modules)) {
    auto f = Fields(line);
    if (!f.empty() && f[0] == module) return true;
  }
  return false;
}

}  // namespace sl
