#pragma once
// PCI config space bytes (sysfs .../config): the ACS extended capability. Bytes in, values out;
// never throws.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace sl {

inline constexpr std::uint16_t kAcsSrcValid = 0x01, kAcsTransBlk = 0x02, kAcsReqRedir = 0x04,
                               kAcsCmpltRedir = 0x08, kAcsUpstreamFwd = 0x10, kAcsEgressCtrl = 0x20,
                               kAcsDirectTrans = 0x40;

struct AcsCapability {
  std::uint16_t offset = 0;   ///< of the extended capability header (ECAP_ACS)
  std::uint16_t cap = 0;      ///< ACS Capability register (offset + 4)
  std::uint16_t control = 0;  ///< ACS Control register (offset + 6)
};

enum class ConfigAcs {
  kFound,        ///< ACS capability present (see AcsCapability)
  kAbsent,       ///< extended capability list walked, no ACS
  kNoExtended,   ///< 256-byte config space: no extended capabilities readable on this system
  kUnprivileged  ///< 64 (or 128) bytes: sysfs hides the rest from non-root readers
};

struct ConfigAcsResult {
  ConfigAcs status = ConfigAcs::kAbsent;
  AcsCapability acs;
  std::uint16_t vendor = 0, device = 0;
};

/// Walks the extended capability list from 0x100 for ID 0x000D. Errors for truncated or
/// malformed bytes (header shorter than 64 bytes, capability beyond the end, a loop).
Result<ConfigAcsResult> FindAcsInConfig(std::string_view config);
/// lspci's ACSCtl text: "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl-
/// DirectTrans-".
std::string AcsControlText(std::uint16_t control);
/// The bits that break GPU<->NIC peer-to-peer: SrcValid, ReqRedir, CmpltRedir, UpstreamFwd.
inline constexpr std::uint16_t kAcsP2pBreaking =
    kAcsSrcValid | kAcsReqRedir | kAcsCmpltRedir | kAcsUpstreamFwd;

}  // namespace sl
