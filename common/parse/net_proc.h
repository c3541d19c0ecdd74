#pragma once
// /proc/net/{fib_trie,route,if_inet6}: text in, values out; never throws.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

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
