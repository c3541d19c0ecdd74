#pragma once
// Pure parsers behind the host checks: /dev/kmsg records and the kernel events the kernel.log
// check looks for, PCI config space (the ACS extended capability), and sysctl values. Text (or
// bytes) in, values out; no I/O, never throws, garbage gives errors or skipped lines.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl::preflight {

// ---- /dev/kmsg -------------------------------------------------------------------------------

/// One /dev/kmsg record: "prio,seq,usec,flags[,...];message" plus " KEY=value" lines.
struct KmsgRecord {
  int level = 6;     ///< prio & 7 (0 emerg ... 7 debug)
  int facility = 0;  ///< prio >> 3 (0 = kernel)
  std::uint64_t seq = 0;
  std::int64_t usec = 0;  ///< monotonic time since boot, microseconds
  std::string message;    ///< \xNN escapes decoded (a message may hold newlines)
  std::string device;     ///< " DEVICE=+pci:0000:41:00.0" -> "+pci:0000:41:00.0", else ""
  int line = 0;           ///< 1-based line of the record's header in the text
};

struct KmsgParse {
  std::vector<KmsgRecord> records;
  std::vector<int> bad_lines;  ///< 1-based lines that are neither records nor dictionary lines
};

/// Parses the text of /dev/kmsg as read record by record (or a plain file in that format).
KmsgParse ParseKmsg(std::string_view text);
/// "[ 1234.567890] " + message (first line), as dmesg prints it: for evidence.
std::string KmsgDmesgLine(const KmsgRecord& r);

enum class KernelEventKind {
  kMlx5CommandFailure,  ///< mlx5 firmware command failed / timed out, SW reset, health
  kMlx5MrFailure,       ///< "create_mkey_warn ... async reg mr failed"
  kLinkDown,            ///< "Port: N Link DOWN" (ib_core) or netdev "Link down"
  kLinkUp,              ///< "Port: N Link ACTIVE" or netdev "Link up"
  kXid,                 ///< NVRM: Xid (PCI:...): N, ...
  kGpuFellOffBus,       ///< "GPU has fallen off the bus" / "fallen off the bus and is not ..."
  kPcieAerCorrected,    ///< "AER: Corrected error received"
  kPcieAerUncorrected,  ///< "AER: Uncorrected (Non-Fatal|Fatal) error received"
  kSuppressed,          ///< "<func>: N callbacks suppressed" (ratelimit of the line before)
};

struct KernelEvent {
  KernelEventKind kind = KernelEventKind::kMlx5CommandFailure;
  std::string entity;       ///< "0000:41:00.0", "mlx5_5:1", "ens1np0", "0000:09:00.0"
  std::string what;         ///< "CREATE_MKEY(0x200) failed, status limits exceeded(0x8)", "Xid 79"
  int xid = 0;              ///< kXid only
  bool fatal = false;       ///< kXid: in the known-fatal list; kPcieAerUncorrected: "Fatal"
  std::uint64_t count = 1;  ///< kSuppressed: how many lines the ratelimit dropped
  std::string suppressed_func;  ///< kSuppressed: "mlx5_cmd_out_err"
};

/// The event a record reports, or nullopt for everything else.
std::optional<KernelEvent> ClassifyKernelRecord(const KmsgRecord& r);
/// Xid codes that mean the GPU (or its NVLink/memory) needs attention before it is used again.
bool IsFatalXid(int xid);
/// One line on what an Xid means, "" for codes without a note.
std::string XidMeaning(int xid);

// ---- PCI config space ------------------------------------------------------------------------

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

// ---- sysctl ----------------------------------------------------------------------------------

/// Whitespace/tab separated unsigned integers ("4096\t131072\t6291456"). Error on garbage or
/// when the count differs from `expected` (0 = any).
Result<std::vector<std::uint64_t>> ParseSysctlValues(std::string_view text, std::size_t expected);

}  // namespace sl::preflight
