#include "common/parse/mounts.h"

#include <cctype>
#include <cstring>

#include "common/parse/limits.h"
#include "common/strings.h"

namespace sl {
namespace {

std::string MountsLineWhere(int line) { return "line " + std::to_string(line); }

// /proc/mounts escapes space, tab, newline and backslash as \ooo (fs/proc_namespace.c).
std::string UnescapeMountField(std::string_view s) {
  std::string out;
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

Result<std::vector<MountEntry>> ParseProcMounts(std::string_view text) {
  std::vector<MountEntry> out;
  int line_no = 0;
  for (const auto& line : SplitLines(text)) {
    ++line_no;
    std::string_view t = Trim(line);
    if (t.empty()) continue;
    auto f = Fields(t);
    if (f.size() < 4) {
      return MakeError("malformed mount line \"" + Printable(t) +
                           "\" (expected: source mountpoint type options dump pass)",
                       MountsLineWhere(line_no));
    }
    MountEntry m;
    m.source = UnescapeMountField(f[0]);
    m.mount_point = UnescapeMountField(f[1]);
    m.fs_type = std::string(f[2]);
    m.options = std::string(f[3]);
    m.raw = Printable(t);
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<std::string> MountOption(std::string_view options, std::string_view key) {
  for (const auto& opt : Split(options, ',')) {
    if (opt.size() > key.size() && opt.compare(0, key.size(), key) == 0 && opt[key.size()] == '=') {
      return opt.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

Result<std::uint64_t> ParseTmpfsSize(std::string_view value, std::uint64_t ram_bytes) {
  std::string_view v = Trim(value);
  if (v.empty()) return MakeError("empty tmpfs size");
  if (v.back() == '%') {
    auto pct = ParseUint(v.substr(0, v.size() - 1), "tmpfs size percentage");
    if (!pct.ok()) return pct.error();
    if (ram_bytes == 0) return MakeError("tmpfs size in % of RAM, but RAM size unknown");
    return ram_bytes / 100 * *pct;
  }
  std::uint64_t mult = 1;
  char last = static_cast<char>(std::tolower(static_cast<unsigned char>(v.back())));
  const char* units = "kmgtpe";
  if (const char* p = std::strchr(units, last); p != nullptr && last != '\0') {
    mult = 1ull << (10 * (p - units + 1));
    v.remove_suffix(1);
  }
  auto n = ParseUint(v, "tmpfs size");
  if (!n.ok()) return n.error();
  if (*n != 0 && mult > kUnlimited / *n) return MakeError("tmpfs size overflows");
  return *n * mult;
}

Result<std::uint64_t> ParseMemTotal(std::string_view meminfo) {
  for (const auto& line : SplitLines(meminfo)) {
    std::string_view t = Trim(line);
    if (!StartsWith(t, "MemTotal:")) continue;
    auto f = Fields(t.substr(9));
    if (f.empty()) break;
    auto kb = ParseUint(f[0], "MemTotal");
    if (!kb.ok()) return kb.error();
    return *kb * 1024;
  }
  return MakeError("no MemTotal line");
}

}  // namespace sl
