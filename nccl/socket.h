#pragma once
// NCCL's socket interfaces (src/misc/socket.cc ncclFindInterfaces): which interface its bootstrap
// and socket transport pick, and the names that never reach another node. The only place that
// knows these names: preflight net.ifname, the recipes' socket_ifname and the diagnosis ask here.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/node_facts.h"

namespace sl::nccl {

/// One interface-name rule of the non-routable list: loopback, container/VM bridges, overlays and
/// tunnels. `prefix` matches the start of the name ("lo" only itself or an alias "lo:N").
struct NonRoutableName {
  std::string_view prefix;
  std::string_view what;  ///< "loopback", "Docker bridge", ...
  /// safe-launch never pins NCCL_SOCKET_IFNAME to it (the picker skips it); the other rows only
  /// make a log line's interface suspect in the diagnosis.
  bool never_pinned;
};
/// The list, in one table (nccl/socket.cpp).
std::span<const NonRoutableName> NonRoutableNames();

/// Names NCCL and safe-launch never choose for the bootstrap on their own: lo and container or
/// VM bridges (docker*, virbr*, veth*, br-*, cni*, flannel*). Case-sensitive, as the kernel's.
bool IsSkippedInterface(std::string_view name);
/// An interface (any case) or address that does not reach other nodes: any row of
/// NonRoutableNames(), or a loopback, link-local or Docker-default (172.17.*) address. For log
/// lines ("NCCL INFO Bootstrap: Using docker0:172.17.0.1<0>").
bool IsNonRoutableInterface(std::string_view ifname, std::string_view addr);
/// IPoIB: NCCL's first preference ("ib*").
bool IsIpoib(std::string_view name);
/// The loopback interface ("lo").
bool IsLoopback(std::string_view name);
/// A Docker bridge ("docker*"): NCCL's default order puts it after every other but lo.
bool IsDockerBridge(std::string_view name);

/// The interface to pin NCCL_SOCKET_IFNAME to, in NCCL's own order (IPoIB ib* first, then any
/// other): up (or "unknown"), with an address, not skipped. nullptr when there is none.
const NetInterface* PickSocketInterface(const NodeFacts& facts);

/// NCCL_SOCKET_FAMILY as NCCL reads it: 4 (AF_INET), 6 (AF_INET6), 0 (either; unset or other).
int SocketFamily(const Environment& env);
/// Whether an address is IPv6 (has a ':').
bool IsIpv6(std::string_view address);
/// Addresses NCCL accepts on an interface for `family`, in the order the facts keep (IPv6
/// link-local fe80: never).
std::vector<std::string> UsableAddresses(const NetInterface& nif, int family);

/// What NCCL's ncclFindInterfaces would pick on a node, or why it picks nothing.
struct SocketChoice {
  enum class Outcome {
    kChosen,         ///< `chosen` holds at least one interface
    kInvalidIfname,  ///< NCCL_SOCKET_IFNAME does not parse (`error` says why)
    kMatchesNone,    ///< NCCL_SOCKET_IFNAME selects no interface with a usable address
    kNoAddress,      ///< NCCL_SOCKET_IFNAME unset and no interface has a usable address
  };
  Outcome outcome = Outcome::kChosen;
  int family = 0;                           ///< SocketFamily(env)
  std::optional<std::string> ifname;        ///< NCCL_SOCKET_IFNAME as set (may be blank)
  bool filtered = false;                    ///< NCCL_SOCKET_IFNAME is set and not blank
  std::vector<const NetInterface*> chosen;  ///< NCCL's order; chosen[0] is the bootstrap's
  std::vector<const NetInterface*> named;   ///< kMatchesNone: what the filter names (no address)
  std::string how;    ///< "NCCL_SOCKET_IFNAME=eth0" or "NCCL default (...): ib* first"
  std::string error;  ///< kInvalidIfname: the parser's message
};
/// Interfaces ordered as getifaddrs() gives them (IPv4-addressed first, then IPv6-only, each by
/// ifindex as the facts keep them), then NCCL_SOCKET_IFNAME's filter when set, else NCCL's
/// default order: ib*, any but docker*/lo, docker*, lo -- the first group that is not empty.
/// NCCL does not look at the link state: a down interface that keeps its address is chosen.
SocketChoice ChooseSocketInterfaces(const std::vector<NetInterface>& interfaces,
                                    const Environment& env);

}  // namespace sl::nccl
