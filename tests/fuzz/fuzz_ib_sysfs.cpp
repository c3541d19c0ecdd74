// libFuzzer target: the /sys/class/infiniband attribute parsers (common/parse/ib_sysfs.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/parse/ib_sysfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)sl::ParseSysfsCodeName(text, "state");
  (void)sl::ParseIbRate(text);
  (void)sl::ParseLinkLayer(text);
  (void)sl::ParseCounterValue(text);
  (void)sl::ParseNetdevMtu(text);
  (void)sl::RoceVersionFromType(text);
  (void)sl::PrintableValue(text);
  auto gid = sl::ParseGid(text);
  if (gid.ok()) {
    (void)sl::GidIpv4(*gid);
    (void)sl::GidIsIpv4(*gid);
    (void)sl::GidIsLinkLocal(*gid);
    (void)sl::GidIsUnconfigured(*gid);
  }
  return 0;
}
