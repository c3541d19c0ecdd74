// libFuzzer target: /proc/self/limits text (os.memlock, os.nofile, host facts).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/parse/limits.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)sl::ParseProcLimits(text);
  (void)sl::FindLimit(text, "Max locked memory");
  (void)sl::FindLimit(text, "Max open files");
  return 0;
}
