#include "nccl/gid.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "common/parse/ib_sysfs.h"
#include "nccl/param.h"

namespace sl::nccl {
namespace {

struct AddrRange {
  bool set = false;
  std::uint8_t addr[16] = {};
  int prefix_len = 0;
};

// NCCL envIbAddrRange(): "addr/len"; anything malformed is ignored (no filtering).
AddrRange ParseAddrRange(const Environment& env, bool ipv6, std::string* shown) {
  AddrRange r;
  auto v = Lookup(env, "NCCL_IB_ADDR_RANGE");
  if (!v || v->empty()) return r;
  std::string s = v->substr(0, 127);
  auto slash = s.find('/');
  if (slash == std::string::npos) return r;
  std::string addr = s.substr(0, slash);
  if (inet_pton(ipv6 ? AF_INET6 : AF_INET, addr.c_str(), r.addr) != 1) return r;
  long len = std::strtol(s.c_str() + slash + 1, nullptr, 10);
  if (len > (ipv6 ? 128 : 32)) return r;
  r.prefix_len = static_cast<int>(len);
  r.set = true;
  *shown = s;
  return r;
}

std::uint32_t Word(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::uint32_t NetMask(int bits) {
  return bits >= 32 ? 0xffffffffu : ~((std::uint32_t{1} << (32 - bits)) - 1);
}

// NCCL matchGidAddrPrefix(): IPv4 compares the last GID word; IPv6 word by word.
bool MatchesRange(const AddrRange& r, bool ipv6, const GidBytes& gid) {
  int len = r.prefix_len;
  if (!r.set || len <= 0) return true;
  if (!ipv6) {
    std::uint32_t m = NetMask(len);
    return (Word(r.addr) & m) == (Word(&gid[12]) & m);
  }
  for (int i = 0; i < 4 && len > 0; ++i) {
    std::uint32_t m = NetMask(std::min(len, 32));
    if ((Word(r.addr + 4 * i) & m) != (Word(&gid[4 * static_cast<std::size_t>(i)]) & m)) {
      return false;
    }
    len -= 32;
  }
  return true;
}

struct Slot {
  GidBytes bytes{};
  int version = 0;  // 0: type unreadable/empty (NCCL leaves its variable unchanged)
};

}  // namespace

int RoceIbMtuForNetdevMtu(int netdev_mtu) {
  // include/rdma/ib_addr.h iboe_get_mtu(): GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 +
  // ICRC 4 = 96 bytes of headers, then the largest IB MTU that fits.
  int payload = netdev_mtu - 96;
  for (int m : {4096, 2048, 1024, 512, 256}) {
    if (payload >= m) return m;
  }
  return 0;
}

GidChoice SimulateGidIndex(const IbPort& port, const Environment& env, bool honour_gid_index) {
  GidChoice c;
  c.roce_version = static_cast<int>(IntParam(env, "NCCL_IB_ROCE_VERSION_NUM", 2));
  auto fam = Lookup(env, "NCCL_IB_ADDR_FAMILY");
  c.want_ipv6 = fam && *fam == "AF_INET6";
  AddrRange range = ParseAddrRange(env, c.want_ipv6, &c.addr_range);

  int len = port.gid_table_len;
  for (const auto& g : port.gids) len = std::max(len, g.index + 1);
  std::vector<Slot> table(static_cast<std::size_t>(std::max(len, 1)));
  for (const auto& g : port.gids) {
    auto b = ParseGid(g.gid);
    if (!b.ok() || g.index < 0) continue;
    table[static_cast<std::size_t>(g.index)] = {*b, g.RoceVersion()};
  }
  auto valid = [](const GidBytes& b) { return !GidIsUnconfigured(b) && !GidIsLinkLocal(b); };
  auto usable = [&](int i) {
    if (i < 0 || i >= static_cast<int>(table.size())) return false;
    const Slot& s = table[static_cast<std::size_t>(i)];
    return valid(s.bytes) && s.version == c.roce_version && GidIsIpv4(s.bytes) != c.want_ipv6 &&
           MatchesRange(range, c.want_ipv6, s.bytes);
  };
  for (int i = 0; i < static_cast<int>(table.size()); ++i) {
    if (usable(i)) c.usable_indices.push_back(i);
  }

  if (honour_gid_index) {
    long long forced = IntParam(env, "NCCL_IB_GID_INDEX", -1);
    if (forced >= 0) {
      c.from_env = true;
      c.env_text = Lookup(env, "NCCL_IB_GID_INDEX").value_or("");
      c.index = forced > 1 << 20 ? 1 << 20 : static_cast<int>(forced);
      c.usable = usable(c.index);
      return c;
    }
  }

  // ncclIbGetGidIndex()/ncclUpdateGidIndex(): start at 0 and let each later index replace the
  // current one. A candidate of the wanted family replaces a current entry of the other family
  // outright (even before versions are compared); within the wanted family a valid candidate
  // in range replaces the current one when it has the wanted RoCE version and the current one
  // has another version or is not valid.
  int cur = 0;
  for (int cand = 1; cand < static_cast<int>(table.size()); ++cand) {
    const Slot& g = table[static_cast<std::size_t>(cur)];
    const Slot& k = table[static_cast<std::size_t>(cand)];
    bool k_v6 = !GidIsIpv4(k.bytes);
    bool g_v6 = !GidIsIpv4(g.bytes);
    bool k_match = MatchesRange(range, c.want_ipv6, k.bytes);
    if (k_v6 != g_v6 && k_v6 == c.want_ipv6 && k_match) {
      cur = cand;
      continue;
    }
    if (k_v6 != c.want_ipv6 || !valid(k.bytes) || !k_match) continue;
    // An unreadable type leaves NCCL's version variable unset; -1 never equals a real version.
    int g_ver = g.version == 0 ? -1 : g.version;
    int k_ver = k.version == 0 ? -1 : k.version;
    if ((g_ver != k_ver || !valid(g.bytes)) && k_ver == c.roce_version) cur = cand;
  }
  c.index = cur;
  c.usable = usable(cur);
  return c;
}

std::optional<int> SelectGidIndex(const IbPort& port, const Environment& env) {
  GidChoice c = SimulateGidIndex(port, env, /*honour_gid_index=*/false);
  if (!c.usable) return std::nullopt;
  return c.index;
}

}  // namespace sl::nccl
