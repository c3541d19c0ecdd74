#include "common/parse/sysctl.h"

#include <cctype>

#include "common/strings.h"

namespace sl {
Result<std::vector<std::uint64_t>> ParseSysctlValues(std::string_view text, std::size_t expected) {
  std::vector<std::uint64_t> out;
  std::string_view t = Trim(text);
  std::size_t i = 0;
  while (i < t.size()) {
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
    std::size_t start = i;
    while (i < t.size() && !std::isspace(static_cast<unsigned char>(t[i]))) ++i;
    if (i == start) break;
    auto v = ParseUint(t.substr(start, i - start));
    if (!v.ok()) {
      return MakeError("not a number: \"" + Printable(t.substr(start, i - start), 40) + "\"");
    }
    out.push_back(*v);
  }
  if (out.empty()) return MakeError("empty value");
  if (expected != 0 && out.size() != expected) {
    return MakeError("expected " + std::to_string(expected) + " numbers, found " +
                     std::to_string(out.size()) + " in \"" + Printable(t) + "\"");
  }
  return out;
}

}  // namespace sl
