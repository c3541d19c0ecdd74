#pragma once
// /dev/kmsg records, the kernel events safe-launch looks for in them, and the one Xid table
// (used by the kernel.log check, the kernel-log collector and the signature catalog). Text in,
// values out; no I/O, never throws.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

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
/// One row of the Xid table.
struct XidInfo {
  int code = 0;
  bool fatal = false;  ///< the GPU (or its NVLink/memory) needs attention before it is used again
  std::string_view meaning;
};
/// The row for `xid` in the one Xid table (the kernel.log check, the kernel-log collector and the
/// signature catalog all explain Xids from it), nullptr for codes without a note.
const XidInfo* FindXid(int xid);
/// Xid codes that mean the GPU (or its NVLink/memory) needs attention before it is used again.
bool IsFatalXid(int xid);
/// One line on what an Xid means, "" for codes without a note.
std::string XidMeaning(int xid);

}  // namespace sl
