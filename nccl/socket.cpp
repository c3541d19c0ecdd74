#include "nccl/socket.h"

#include "common/strings.h"
#include "nccl/name_filter.h"

namespace sl::nccl {
namespace {

// The rows marked never_pinned were the picker's list before this table; tun, tap and the CNI
// overlays were the diagnosis' additions. Both keep their behaviour.
constexpr NonRoutableName kNonRoutable[] = {
    {.prefix = "lo", .what = "loopback", .never_pinned = true},
    {.prefix = "docker", .what = "Docker bridge", .never_pinned = true},
    {.prefix = "virbr", .what = "libvirt bridge", .never_pinned = true},
    {.prefix = "veth", .what = "container veth pair", .never_pinned = true},
    {.prefix = "br-", .what = "Docker user bridge", .never_pinned = true},
    {.prefix = "cni", .what = "CNI bridge", .never_pinned = true},
    {.prefix = "flannel", .what = "flannel overlay", .never_pinned = true},
    {.prefix = "tun", .what = "tunnel", .never_pinned = false},
    {.prefix = "tap", .what = "tap device", .never_pinned = false},
    {.prefix = "cali", .what = "Calico veth", .never_pinned = false},
    {.prefix = "weave", .what = "Weave overlay", .never_pinned = false},
    {.prefix = "kube-bridge", .what = "kube-router bridge", .never_pinned = false},
};

bool Matches(const NonRoutableName& rule, std::string_view name, bool alias_ok) {
  if (rule.prefix == "lo") return name == "lo" || (alias_ok && StartsWith(name, "lo:"));
  return StartsWith(name, rule.prefix);
}

// NCCL's default order without NCCL_SOCKET_IFNAME: the first stage with an interface wins.
struct OrderStage {
  bool (*selects)(std::string_view name);
  std::string_view how;
};
constexpr OrderStage kDefaultOrder[] = {
    {.selects = IsIpoib, .how = "NCCL default (NCCL_SOCKET_IFNAME unset): ib* first"},
    {.selects = [](std::string_view n) { return !IsDockerBridge(n) && !IsLoopback(n); },
     .how = "NCCL default (NCCL_SOCKET_IFNAME unset): no ib* interface, any but docker*/lo"},
    {.selects = IsDockerBridge, .how = "NCCL default: only docker* interfaces have an address"},
    {.selects = IsLoopback, .how = "NCCL default: only loopback has an address"},
};

void ChooseByFilter(const std::vector<NetInterface>& ifs,
                    const std::vector<const NetInterface*>& ordered, SocketChoice* c) {
  auto filter = ParseSocketIfname(*c->ifname);
  if (!filter.ok()) {
    c->outcome = SocketChoice::Outcome::kInvalidIfname;
    c->error = filter.error().message;
    return;
  }
  for (const NetInterface* i : ordered) {
    if (FilterSelectsIfname(*filter, i->name)) c->chosen.push_back(i);
  }
  c->how = "NCCL_SOCKET_IFNAME=" + *c->ifname;
  if (!c->chosen.empty()) return;
  c->outcome = SocketChoice::Outcome::kMatchesNone;
  for (const auto& i : ifs) {
    if (FilterSelectsIfname(*filter, i.name)) c->named.push_back(&i);
  }
}

}  // namespace

std::span<const NonRoutableName> NonRoutableNames() { return kNonRoutable; }

bool IsSkippedInterface(std::string_view n) {
  for (const NonRoutableName& r : kNonRoutable) {
    if (r.never_pinned && Matches(r, n, false)) return true;
  }
  return false;
}

bool IsNonRoutableInterface(std::string_view ifname, std::string_view addr) {
  const std::string n = ToLower(ifname);
  for (const NonRoutableName& r : kNonRoutable) {
    if (Matches(r, n, true)) return true;
  }
  const std::string a = ToLower(addr);
  return StartsWith(a, "127.") || StartsWith(a, "169.254.") || StartsWith(a, "fe80") ||
         StartsWith(a, "172.17.") || a == "::1";
}

bool IsIpoib(std::string_view name) { return StartsWith(name, "ib"); }
bool IsLoopback(std::string_view name) { return name == "lo"; }
bool IsDockerBridge(std::string_view name) { return StartsWith(name, "docker"); }

const NetInterface* PickSocketInterface(const NodeFacts& facts) {
  auto usable = [](const NetInterface& i) {
    return !IsSkippedInterface(i.name) && (i.operstate == "up" || i.operstate == "unknown") &&
           !i.addresses.empty();
  };
  for (const auto& i : facts.interfaces) {
    if (IsIpoib(i.name) && usable(i)) return &i;
  }
  for (const auto& i : facts.interfaces) {
    if (usable(i)) return &i;
  }
  return nullptr;
}

int SocketFamily(const Environment& env) {
  auto fam = Lookup(env, "NCCL_SOCKET_FAMILY");
  if (fam && Trim(*fam) == "AF_INET") return 4;
  if (fam && Trim(*fam) == "AF_INET6") return 6;
  return 0;
}

bool IsIpv6(std::string_view a) { return a.find(':') != std::string_view::npos; }

std::vector<std::string> UsableAddresses(const NetInterface& nif, int family) {
  std::vector<std::string> out;
  for (const auto& a : nif.addresses) {
    if (IsIpv6(a)) {
      if (family == 4) continue;
      if (StartsWith(ToLower(a), "fe80:")) continue;  // NCCL skips IPv6 link-local
    } else if (family == 6) {
      continue;
    }
    out.push_back(a);
  }
  return out;
}

SocketChoice ChooseSocketInterfaces(const std::vector<NetInterface>& ifs, const Environment& env) {
  SocketChoice c;
  c.family = SocketFamily(env);
  // getifaddrs lists all IPv4 addresses before the IPv6 ones; each group by ifindex.
  std::vector<const NetInterface*> ordered;
  for (bool v6 : {false, true}) {
    for (const auto& i : ifs) {
      auto a = UsableAddresses(i, c.family);
      if (!a.empty() && IsIpv6(a[0]) == v6) ordered.push_back(&i);
    }
  }
  c.ifname = Lookup(env, "NCCL_SOCKET_IFNAME");
  c.filtered = c.ifname && !Trim(*c.ifname).empty();
  if (c.filtered) {
    ChooseByFilter(ifs, ordered, &c);
    return c;
  }
  for (const OrderStage& stage : kDefaultOrder) {
    for (const NetInterface* i : ordered) {
      if (stage.selects(i->name)) c.chosen.push_back(i);
    }
    c.how = std::string(stage.how);
    if (!c.chosen.empty()) return c;
  }
  c.outcome = SocketChoice::Outcome::kNoAddress;
  return c;
}

}  // namespace sl::nccl
