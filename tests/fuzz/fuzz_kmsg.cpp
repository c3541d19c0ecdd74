// libFuzzer target: /dev/kmsg text -> records -> kernel events (kernel.log's parser).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/parse/kmsg.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = sl::ParseKmsg(text);
  for (const auto& r : parsed.records) {
    (void)sl::KmsgDmesgLine(r);
    (void)sl::ClassifyKernelRecord(r);
  }
  return 0;
}
