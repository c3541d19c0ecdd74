#pragma once
// Pure parsers for the host files behind NodeFacts (/proc/self/limits, /proc/mounts,
// /proc/meminfo, /proc/modules, the NVIDIA driver's /proc files, /proc/net/{fib_trie,route,
// if_inet6}) and the small readers built on them that checks share. Parsers take text and
// never throw; the readers go through a FileReader so --sysroot trees work.
// Implemented in host_facts.cpp (kept with GatherHostFacts, their main user).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "common/result.h"

namespace sl {

/// `s` with control and non-ASCII bytes written as \xNN, cut to `max` characters ("..."): raw
/// file content goes into messages and evidence only through this (a NUL would cut a line).
std::string Printable(std::string_view s, std::size_t max = 200);

/// One row of /proc/<pid>/limits.
struct ProcLimit {
  std::string name;                  ///< "Max locked memory"
  std::uint64_t soft = 0, hard = 0;  ///< kUnlimited for "unlimited"
  std::string units;                 ///< "bytes", "files", "" (nice/rtprio)
  std::string raw;                   ///< the line as read, trimmed
};

/// Parses the whole table. The header line is required; a row whose values are neither a number
/// nor "unlimited" is an error naming the 1-based line.
Result<std::vector<ProcLimit>> ParseProcLimits(std::string_view text);
/// The row named `name` ("Max locked memory"); error when absent.
Result<ProcLimit> FindLimit(std::string_view text, std::string_view name);

/// One /proc/mounts line (octal escapes such as \040 decoded).
struct MountEntry {
  std::string source, mount_point, fs_type, options;
  std::string raw;
};
/// Errors name the 1-based line of a line with fewer than 4 fields.
Result<std::vector<MountEntry>> ParseProcMounts(std::string_view text);
/// Value of a comma-separated mount option ("size" in "rw,size=65536k"), nullopt when absent.
std::optional<std::string> MountOption(std::string_view options, std::string_view key);
/// tmpfs "size=" value in bytes: plain bytes or k/m/g/t/p/e suffix, or "N%" of `ram_bytes`
/// (mm/shmem.c). Error on garbage.
Result<std::uint64_t> ParseTmpfsSize(std::string_view value, std::uint64_t ram_bytes);
/// MemTotal of /proc/meminfo in bytes.
Result<std::uint64_t> ParseMemTotal(std::string_view meminfo);

/// Where the /dev/shm size came from, for evidence.
struct ShmSize {
  std::uint64_t bytes = 0;
  std::string source;  ///< node path the value came from ("/proc/mounts", "statvfs(/dev/shm)")
  std::string raw;     ///< the mount line or the statvfs figure
  std::string how;     ///< "size=65536k", "tmpfs default: half of MemTotal 2113591344 kB", ...
};
/// Size of the /dev/shm mount: statvfs on the live node; under a sysroot the last /dev/shm line
/// of /proc/mounts (size= option, else tmpfs' default of half of MemTotal from /proc/meminfo).
/// Error when /dev/shm is not mounted or the files are unreadable/malformed.
Result<ShmSize> ReadShmSize(const FileReader& fs);

/// /proc/modules has a line for `module` (first field; "nvidia_peermem").
bool ModuleListed(std::string_view proc_modules, std::string_view module);

/// /proc/driver/nvidia/version, first line: "NVRM version: NVIDIA UNIX Open Kernel Module for
/// x86_64  580.159.04  Release Build ..." or "... x86_64 Kernel Module  535.183.01  Sun May ...".
struct NvidiaDriverVersion {
  std::string version;       ///< "580.159.04"
  int major = 0;             ///< 580
  bool open_kernel = false;  ///< "Open Kernel Module" (the open GPU kernel modules)
};
Result<NvidiaDriverVersion> ParseNvidiaVersion(std::string_view text);
/// "Model:" field of /proc/driver/nvidia/gpus/<bdf>/information ("" when absent).
std::string ParseGpuInformationModel(std::string_view text);

/// PCI functions of NVIDIA GPUs (vendor 0x10de, class 0x0300xx VGA or 0x0302xx 3D) from
/// /sys/bus/pci/devices, with models from /proc/driver/nvidia/gpus/<bdf>/information.
/// Unreadable or malformed attributes are appended to `problems` (never fatal).
std::vector<GpuInfo> ScanNvidiaGpus(const FileReader& fs, std::vector<Error>* problems);

/// IPv4 addresses the kernel considers local ("/32 host LOCAL" leaves of /proc/net/fib_trie),
/// dotted, in order of appearance, without duplicates. Garbage lines are skipped.
std::vector<std::string> ParseFibTrieLocal(std::string_view text);
/// One /proc/net/route row (addresses as host-order numbers the kernel prints as hex).
struct Ipv4Route {
  std::string iface;
  std::uint32_t destination = 0, gateway = 0, mask = 0;  ///< network byte order values
  unsigned flags = 0;
};
/// Errors name the 1-based line of a malformed row.
Result<std::vector<Ipv4Route>> ParseProcRoute(std::string_view text);
/// The interface whose directly connected route (no RTF_GATEWAY) holds `ipv4` (longest mask);
/// "lo" for 127.0.0.0/8; "" when none.
std::string InterfaceForIpv4(const std::vector<Ipv4Route>& routes, std::string_view ipv4);
/// /proc/net/if_inet6 rows: (interface, address in compressed text form, e.g. "fe80::1").
struct Inet6Address {
  std::string iface, address;
  int prefix_len = 0;
};
std::vector<Inet6Address> ParseIfInet6(std::string_view text);

}  // namespace sl
