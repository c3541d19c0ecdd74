#include "common/parse/ib_sysfs.h"

#include <charconv>
#include <cstdio>

#include "common/strings.h"

namespace sl {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Error Garbage(std::string_view what, std::string_view raw, std::string_view expected) {
  return MakeError("unexpected " + std::string(what) + " value '" + PrintableValue(raw) +
                   "' (expected " + std::string(expected) + ")");
}

}  // namespace

std::string PrintableValue(std::string_view raw) {
  std::string out;
  for (std::size_t i = 0; i < raw.size() && i < 64; ++i) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (raw.size() > 64) out += "...";
  return out;
}

Result<SysfsCodeName> ParseSysfsCodeName(std::string_view text, std::string_view what) {
  std::string_view s = Trim(text);
  std::size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == 0 || i > 3 || i + 1 >= s.size() || s[i] != ':' || s[i + 1] != ' ') {
    return Garbage(what, text, "'<number>: <name>' such as '4: ACTIVE'");
  }
  SysfsCodeName out;
  std::from_chars(s.data(), s.data() + i, out.code);
  std::string_view name = Trim(s.substr(i + 2));
  if (name.empty()) return Garbage(what, text, "a name after the number");
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || IsDigit(c) || c == ' ' ||
              c == '_' || c == '-';
    if (!ok) return Garbage(what, text, "'<number>: <name>' such as '4: ACTIVE'");
  }
  out.name = std::string(name);
  return out;
}

Result<double> ParseIbRate(std::string_view text) {
  // Kernel rate_show(): "%d%s Gb/sec (%dX %s)" with "%s" ".5" for SDR 1X, or "... (%dX)".
  std::string_view s = Trim(text);
  std::size_t i = 0;
  while (i < s.size() && (IsDigit(s[i]) || s[i] == '.')) ++i;
  std::string_view number = s.substr(0, i);
  std::string_view rest = s.substr(i);
  if (number.empty() || !StartsWith(rest, " Gb/sec")) {
    return Garbage("rate", text,
                   "'<number> Gb/sec (<width>X <speed>)' such as '400 Gb/sec (4X NDR)'");
  }
  rest.remove_prefix(7);
  if (!rest.empty() && !(StartsWith(rest, " (") && EndsWith(rest, ")"))) {
    return Garbage("rate", text, "'<number> Gb/sec (<width>X <speed>)'");
  }
  auto v = ParseDouble(number, "rate");
  if (!v.ok() || *v < 0 || *v > 100000) return Garbage("rate", text, "a rate in Gb/sec");
  return *v;
}

Result<std::string> ParseLinkLayer(std::string_view text) {
  std::string_view s = Trim(text);
  if (s == "InfiniBand" || s == "Ethernet" || s == "Unknown") return std::string(s);
  return Garbage("link_layer", text, "'InfiniBand' or 'Ethernet'");
}

Result<GidBytes> ParseGid(std::string_view text) {
  std::string_view s = Trim(text);
  GidBytes out{};
  if (s.size() != 39) {
    return Garbage("GID", text,
                   "8 groups of 4 hex digits, e.g. fe80:0000:0000:0000:a288:c2ff:fe5b:03ec");
  }
  for (int g = 0; g < 8; ++g) {
    std::string_view group = s.substr(static_cast<std::size_t>(g) * 5, 4);
    if (g < 7 && s[static_cast<std::size_t>(g) * 5 + 4] != ':') {
      return Garbage("GID", text, "groups separated by ':'");
    }
    int v = 0;
    for (char c : group) {
      int h = HexValue(c);
      if (h < 0) return Garbage("GID", text, "hex digits");
      v = v * 16 + h;
    }
    out[static_cast<std::size_t>(g) * 2] = static_cast<std::uint8_t>(v >> 8);
    out[static_cast<std::size_t>(g) * 2 + 1] = static_cast<std::uint8_t>(v & 0xff);
  }
  return out;
}

bool GidIsIpv4(const GidBytes& gid) {
  // NCCL getGidAddrFamily(): ::ffff:a.b.c.d, or ff0e::ffff:a.b.c.d (IPv4-mapped multicast).
  bool mid_zero = true;
  for (int i = 4; i < 10; ++i) mid_zero = mid_zero && gid[static_cast<std::size_t>(i)] == 0;
  bool ffff = gid[10] == 0xff && gid[11] == 0xff;
  bool head_zero = gid[0] == 0 && gid[1] == 0 && gid[2] == 0 && gid[3] == 0;
  bool head_mc = gid[0] == 0xff && gid[1] == 0x0e && gid[2] == 0 && gid[3] == 0;
  return mid_zero && ffff && (head_zero || head_mc);
}

std::string GidIpv4(const GidBytes& gid) {
  bool mapped = gid[10] == 0xff && gid[11] == 0xff;
  for (int i = 0; i < 10; ++i) mapped = mapped && gid[static_cast<std::size_t>(i)] == 0;
  if (!mapped) return {};
  char buf[20];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", gid[12], gid[13], gid[14], gid[15]);
  return buf;
}

bool GidIsLinkLocal(const GidBytes& gid) {
  // NCCL linkLocalGid(): first 32 bits fe80:0000 and the next 32 bits zero.
  return gid[0] == 0xfe && gid[1] == 0x80 && gid[2] == 0 && gid[3] == 0 && gid[4] == 0 &&
         gid[5] == 0 && gid[6] == 0 && gid[7] == 0;
}

bool GidIsUnconfigured(const GidBytes& gid) {
  // NCCL configuredGid(): all-zero, or fe80:0000 followed by 96 zero bits.
  bool trailer_zero = true;
  for (int i = 4; i < 16; ++i) trailer_zero = trailer_zero && gid[static_cast<std::size_t>(i)] == 0;
  bool head_zero = gid[0] == 0 && gid[1] == 0 && gid[2] == 0 && gid[3] == 0;
  bool head_fe80 = gid[0] == 0xfe && gid[1] == 0x80 && gid[2] == 0 && gid[3] == 0;
  return trailer_zero && (head_zero || head_fe80);
}

int RoceVersionFromType(std::string_view type) {
  // Same prefix comparisons as NCCL's ncclIbRoceGetVersionNum().
  type = Trim(type);
  if (StartsWith(type, "IB/RoCE v1") || StartsWith(type, "RoCE v1")) return 1;
  if (StartsWith(type, "RoCE v2")) return 2;
  return 0;
}

Result<std::uint64_t> ParseCounterValue(std::string_view text) {
  std::string_view s = Trim(text);
  if (s.empty() || s.size() > 20) return Garbage("counter", text, "a decimal count");
  for (char c : s) {
    if (!IsDigit(c)) return Garbage("counter", text, "a decimal count");
  }
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return Garbage("counter", text, "a decimal count below 2^64");
  }
  return v;
}

Result<int> ParseNetdevMtu(std::string_view text) {
  std::string_view s = Trim(text);
  if (s.empty() || s.size() > 7) return Garbage("mtu", text, "a decimal byte count such as 9000");
  for (char c : s) {
    if (!IsDigit(c)) return Garbage("mtu", text, "a decimal byte count such as 9000");
  }
  int v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  if (v <= 0) return Garbage("mtu", text, "a positive byte count");
  return v;
}

bool IsIbErrorCounter(std::string_view dir, std::string_view name) {
  auto in = [&](const auto& list) {
    for (const IbErrorCounter& c : list) {
      if (c.name == name) return true;
    }
    return false;
  };
  if (dir == "counters") return in(kIbPortErrorCounters);
  if (dir == "hw_counters") return in(kIbHwErrorCounters);
  return false;
}

}  // namespace sl
