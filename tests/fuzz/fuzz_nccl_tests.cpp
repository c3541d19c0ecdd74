// libFuzzer target: nccl-tests output (bench --import). Any text must parse or fail cleanly, and
// what parses must be self-consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/parse/nccl_tests.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto out = sl::ParseNcclTests(text);
  if (!out.ok()) return 0;
  for (const auto& row : out->rows) {
    // Only finite figures are ever returned.
    if (auto b = row.BestBusbw(); b && !(*b == *b)) std::abort();
    if (row.Wrong() < 0) std::abort();
  }
  (void)out->WrongTotal();
  return 0;
}
