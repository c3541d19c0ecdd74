// Differential fuzz target for the pump's line scan: LineMatcher::ScanBlock over the input must
// hand over every line that MatchLine matches on its own, with the right index, and count the
// lines exactly as a plain split does; and the vector kernel (AnchorFilter, its AVX-512 steps
// where the CPU has them and its portable statement) must hand over exactly the scalar scan's
// lines. Any difference aborts (libFuzzer reports it).
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
  using Kernel = sl::diagnose::LineMatcher::ScanKernel;
  std::vector<std::string_view> by_kernel[3];
  int k = 0;
  for (Kernel kernel : {Kernel::kScalar, Kernel::kFilter, Kernel::kFilterPortable}) {
    matcher.ScanBlockWith(kernel, block, [&](std::string_view line, sl::diagnose::LineIndex&) {
      by_kernel[k].push_back(line);
    });
    ++k;
  }
  for (int j = 1; j < 3; ++j) {
    if (by_kernel[j].size() != by_kernel[0].size()) std::abort();
    for (std::size_t i = 0; i < by_kernel[0].size(); ++i) {
      // The same line: the same bytes of the block, not only equal text.
      if (by_kernel[j][i].data() != by_kernel[0][i].data() ||
          by_kernel[j][i].size() != by_kernel[0][i].size()) {
        std::abort();
      }
    }
  }
  return 0;
}
