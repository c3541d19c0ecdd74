#pragma once
// /proc/mounts (and the tmpfs size option, with /proc/meminfo's MemTotal for "N%" sizes): text in,
// values out; never throws.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

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

}  // namespace sl
