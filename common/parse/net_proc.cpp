#include "common/parse/net_proc.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>

#include "common/strings.h"

namespace sl {
namespace {

std::string NetProcLineWhere(int line) { return "line " + std::to_string(line); }

}  // namespace

std::vector<std::string> ParseFibTrieLocal(std::string_view text) {
  std::vector<std::string> out;
  std::string leaf;
  for (const auto& line : SplitLines(text)) {
    std::string_view t = Trim(line);
    if (StartsWith(t, "|--")) {
      leaf = std::string(Trim(t.substr(3)));
      in_addr probe;
      if (::inet_pton(AF_INET, leaf.c_str(), &probe) != 1) leaf.clear();
      continue;
    }
    if (StartsWith(t, "+--") || EndsWith(t, ":")) {
      leaf.clear();
      continue;
    }
    // Alias line of the current leaf: "/32 host LOCAL".
    if (!leaf.empty() && StartsWith(t, "/32 ") && EndsWith(t, " LOCAL") &&
        t.find(" host ") != std::string_view::npos) {
      if (std::find(out.begin(), out.end(), leaf) == out.end()) out.push_back(leaf);
    }
  }
  return out;
}

Result<std::vector<Ipv4Route>> ParseProcRoute(std::string_view text) {
  std::vector<Ipv4Route> out;
  int line_no = 0;
  for (const auto& line : SplitLines(text)) {
    ++line_no;
    std::string_view t = Trim(line);
    if (t.empty() || StartsWith(t, "Iface")) continue;
    auto f = Fields(t);
    if (f.size() < 8) {
      return MakeError("malformed route row \"" + Printable(t) + "\"", NetProcLineWhere(line_no));
    }
    Ipv4Route r;
    r.iface = std::string(f[0]);
    auto hex = [](std::string_view s, std::uint32_t* v) {
      if (s.size() != 8) return false;
      std::uint32_t x = 0;
      for (char c : s) {
        int d = std::isdigit(static_cast<unsigned char>(c))
                    ? c - '0'
                    : (std::tolower(static_cast<unsigned char>(c)) >= 'a' &&
                               std::tolower(static_cast<unsigned char>(c)) <= 'f'
                           ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                           : -1);
        if (d < 0) return false;
        x = x * 16 + static_cast<std::uint32_t>(d);
      }
      *v = x;
      return true;
    };
    std::uint32_t flags = 0;
    if (!hex(f[1], &r.destination) || !hex(f[2], &r.gateway) || !hex(f[7], &r.mask) ||
        f[3].size() > 8 || !hex(std::string(8 - f[3].size(), '0') + std::string(f[3]), &flags)) {
      return MakeError("malformed route row \"" + Printable(t) + "\"", NetProcLineWhere(line_no));
    }
    r.flags = flags;
    out.push_back(std::move(r));
  }
  return out;
}

std::string InterfaceForIpv4(const std::vector<Ipv4Route>& routes, std::string_view ipv4) {
  in_addr a;
  if (::inet_pton(AF_INET, std::string(ipv4).c_str(), &a) != 1) return {};
  // /proc/net/route prints the in-memory (network order) value as a host number, so comparing
  // the raw s_addr against the parsed numbers works on any endianness of this machine.
  std::uint32_t addr = a.s_addr;
  if ((ntohl(addr) >> 24) == 127) return "lo";
  std::string best;
  int best_bits = -1;
  for (const auto& r : routes) {
    if (r.flags & 0x2) continue;  // RTF_GATEWAY: not a directly connected subnet
    if ((addr & r.mask) != r.destination) continue;
    int bits = __builtin_popcount(r.mask);
    if (bits > best_bits) {
      best_bits = bits;
      best = r.iface;
    }
  }
  return best;
}

std::vector<Inet6Address> ParseIfInet6(std::string_view text) {
  std::vector<Inet6Address> out;
  for (const auto& line : SplitLines(text)) {
    auto f = Fields(line);
    if (f.size() < 6 || f[0].size() != 32) continue;
    in6_addr a;
    bool ok = true;
    for (int i = 0; i < 16 && ok; ++i) {
      auto byte = ParseUint("0x" + std::string(f[0].substr(2 * i, 2)));
      ok = byte.ok();
      if (ok) a.s6_addr[i] = static_cast<unsigned char>(*byte);
    }
    auto plen = ParseUint("0x" + std::string(f[2]));
    if (!ok || !plen.ok()) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
    out.push_back({std::string(f[5]), buf, static_cast<int>(*plen)});
  }
  return out;
}

}  // namespace sl
