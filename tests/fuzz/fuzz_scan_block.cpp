// Differential fuzz target for the pump's line scan: LineMatcher::ScanBlock over the input must
// hand over every line that MatchLine matches on its own, with the right index, and count the
// lines exactly as a plain split does. Any difference aborts (libFuzzer reports it).
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "diagnose/signatures.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const sl::diagnose::LineMatcher matcher;
  std::string_view block(reinterpret_cast<const char*>(data), size);
  std::map<std::size_t, std::string_view> candidates;
  const std::size_t count = matcher.ScanBlock(block, [&](std::string_view line, std::size_t i) {
    if (candidates.count(i) != 0) std::abort();  // a line handed over twice
    candidates[i] = line;
  });
  std::vector<std::string_view> lines;
  sl::ForEachLine(block, [&](std::string_view l) { lines.push_back(l); });
  if (count != lines.size()) std::abort();
  for (const auto& [i, line] : candidates) {
    if (i >= lines.size() || lines[i] != line) std::abort();  // wrong index or bounds
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (matcher.MatchLine(lines[i]) && candidates.count(i) == 0) std::abort();  // a missed line
  }
  return 0;
}
