// libFuzzer target: PCI config space bytes -> ACS capability walk (pci.acs).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "preflight/host_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto r = sl::preflight::FindAcsInConfig(bytes); r.ok()) {
    (void)sl::preflight::AcsControlText(r->acs.control);
  }
  (void)sl::preflight::ParseSysctlValues(bytes, 0);
  return 0;
}
