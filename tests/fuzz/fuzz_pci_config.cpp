// libFuzzer target: PCI config space bytes -> ACS capability walk (pci.acs).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/parse/pci_config.h"
#include "common/parse/sysctl.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto r = sl::FindAcsInConfig(bytes); r.ok()) {
    (void)sl::AcsControlText(r->acs.control);
  }
  (void)sl::ParseSysctlValues(bytes, 0);
  return 0;
}
