#include "common/parse/pci_config.h"

#include <cstdio>

namespace sl {
namespace {

std::uint16_t Le16(std::string_view b, std::size_t off) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(b[off]) |
                                    (static_cast<unsigned char>(b[off + 1]) << 8));
}

std::uint32_t Le32(std::string_view b, std::size_t off) {
  return static_cast<std::uint32_t>(Le16(b, off)) |
         (static_cast<std::uint32_t>(Le16(b, off + 2)) << 16);
}

}  // namespace

Result<ConfigAcsResult> FindAcsInConfig(std::string_view config) {
  ConfigAcsResult out;
  const std::size_t n = config.size();
  if (n < 64) {
    return MakeError("config space truncated: " + std::to_string(n) +
                     " bytes, less than the 64-byte header");
  }
  out.vendor = Le16(config, 0);
  out.device = Le16(config, 2);
  if (n < 256) {
    // sysfs gives non-root readers the first 64 bytes (128 for CardBus bridges).
    if (n == 64 || n == 128) {
      out.status = ConfigAcs::kUnprivileged;
      return out;
    }
    return MakeError("config space truncated: " + std::to_string(n) + " bytes");
  }
  if (n == 256) {
    out.status = ConfigAcs::kNoExtended;
    return out;
  }
  std::size_t offset = 0x100;
  for (int ttl = (4096 - 256) / 8; ttl > 0; --ttl) {
    if (offset + 4 > n) {
      return MakeError("config space truncated at " + std::to_string(n) +
                       " bytes inside the extended capability list (capability at 0x" +
                       [&] {
                         char b[8];
                         std::snprintf(b, sizeof b, "%zx", offset);
                         return std::string(b);
                       }() +
                       ")");
    }
    std::uint32_t header = Le32(config, offset);
    if (header == 0 || header == 0xffffffffu) break;  // no extended capabilities
    std::uint16_t id = header & 0xffff;
    std::size_t next = (header >> 20) & 0xffc;
    if (id == 0x000D) {
      if (offset + 8 > n) {
        return MakeError("config space truncated at " + std::to_string(n) +
                         " bytes inside the ACS capability");
      }
      out.status = ConfigAcs::kFound;
      out.acs.offset = static_cast<std::uint16_t>(offset);
      out.acs.cap = Le16(config, offset + 4);
      out.acs.control = Le16(config, offset + 6);
      return out;
    }
    if (next == 0) break;
    if (next < 0x100) {
      return MakeError("malformed extended capability list: next pointer 0x" + [&] {
        char b[8];
        std::snprintf(b, sizeof b, "%zx", next);
        return std::string(b);
      }() + " points into the standard header");
    }
    offset = next;
    if (ttl == 1) return MakeError("malformed extended capability list: it loops");
  }
  out.status = ConfigAcs::kAbsent;
  return out;
}

std::string AcsControlText(std::uint16_t control) {
  static constexpr const char* kNames[] = {"SrcValid",    "TransBlk",   "ReqRedir",   "CmpltRedir",
                                           "UpstreamFwd", "EgressCtrl", "DirectTrans"};
  std::string out;
  for (int bit = 0; bit < 7; ++bit) {
    if (!out.empty()) out.push_back(' ');
    out += kNames[bit];
    out.push_back((control >> bit) & 1 ? '+' : '-');
  }
  return out;
}

}  // namespace sl
