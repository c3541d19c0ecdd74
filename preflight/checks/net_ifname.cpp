// net.ifname: the interface NCCL's bootstrap (and its socket transport) would use, as
// nccl/socket.h works it out (NCCL_SOCKET_IFNAME, else NCCL's default order). NCCL does not look
// at the link state, so an interface that is down but keeps its address is picked and the
// bootstrap hangs: this check judges the choice.
#include <algorithm>
#include <optional>

#include "nccl/socket.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"net.ifname/file_unreadable", Outcome::kError, Outcome::kError,
     "a file behind the facts could not be read", kFixReadSource},
    {"net.ifname/no_interfaces", Outcome::kError, Outcome::kError, "no network interfaces found",
     kFixReadSource},
    {"net.ifname/ifname_invalid", Outcome::kFail, Outcome::kFail,
     "NCCL_SOCKET_IFNAME is not a valid filter", kFixInFinding},
    {"net.ifname/ifname_matches_none", Outcome::kFail, Outcome::kFail,
     "NCCL_SOCKET_IFNAME matches no usable interface", kFixInFinding},
    {"net.ifname/no_address", Outcome::kFail, Outcome::kFail, "no interface has a usable address",
     kFixInFinding},
    {"net.ifname/ok", Outcome::kPass, Outcome::kPass, "the check passed", ""},
    {"net.ifname/bootstrap_down", Outcome::kFail, Outcome::kFail, "the bootstrap interface is down",
     kFixInFinding},
    {"net.ifname/bootstrap_loopback", Outcome::kFail, Outcome::kFail,
     "the bootstrap would use loopback", kFixInFinding},
    {"net.ifname/bootstrap_container_bridge", Outcome::kWarn, Outcome::kWarn,
     "the bootstrap would use a container bridge", kFixInFinding},
    {"net.ifname/other_down", Outcome::kWarn, Outcome::kWarn,
     "another interface NCCL would use is down", kFixInFinding},
};

constexpr const char* kId = "net.ifname";

Finding Make(std::string entity, Outcome o, std::string message) {
  return MakeFinding(kId, std::move(entity), o, std::move(message));
}

std::string Names(const std::vector<NetInterface>& ifs) {
  std::string out;
  for (const auto& i : ifs) {
    out += (out.empty() ? "" : ", ") + i.name;
    auto a = nccl::UsableAddresses(i, 0);
    out += a.empty() ? " (no address)" : " (" + a[0] + ")";
  }
  return out;
}

// The failure finding when NCCL would pick no interface (nccl::ChooseSocketInterfaces).
Finding NoChoiceFinding(const NodeFacts& facts, const nccl::SocketChoice& c) {
  const std::vector<NetInterface>& ifs = facts.interfaces;
  using O = nccl::SocketChoice::Outcome;
  const std::string spec = c.ifname.value_or("");
  if (c.outcome == O::kInvalidIfname) {
    Finding f = Coded(Make("NCCL_SOCKET_IFNAME", Outcome::kFail,
                           "NCCL_SOCKET_IFNAME=\"" + spec + "\" is not valid: " + c.error),
                      "net.ifname/ifname_invalid");
    f.With("NCCL_SOCKET_IFNAME", spec);
    f.next_step =
        "use a comma-separated list of interface name prefixes, e.g. "
        "NCCL_SOCKET_IFNAME=eno1 or =eno1 (exact) or ^docker,lo (exclude)";
    return f;
  }
  if (c.outcome == O::kMatchesNone) {
    std::vector<NetInterface> by_name;
    for (const NetInterface* i : c.named) by_name.push_back(*i);
    Finding f = Coded(
        Make("NCCL_SOCKET_IFNAME", Outcome::kFail,
             by_name.empty()
                 ? c.how + " matches no interface on this node; available: " + Names(ifs)
                 : c.how + " matches only interfaces without a usable address: " + Names(by_name) +
                       "; available: " + Names(ifs)),
        "net.ifname/ifname_matches_none");
    f.With("NCCL_SOCKET_IFNAME", spec);
    f.With(facts.net.class_net.path, [&] {
      std::string n;
      for (const auto& i : ifs) n += (n.empty() ? "" : " ") + i.name;
      return n;
    }());
    f.next_step =
        "NCCL's bootstrap fails with \"no socket interface found\": set "
        "NCCL_SOCKET_IFNAME to the interface that carries this node's cluster "
        "address (same name on every node), or unset it";
    return f;
  }
  Finding f = Coded(Make("node", Outcome::kFail,
                         "no interface has an IPv4 or global IPv6 address; NCCL's bootstrap "
                         "fails (\"no socket interface found\"); interfaces: " +
                             Names(ifs)),
                    "net.ifname/no_address");
  f.next_step = "configure an address on the cluster network interface";
  return f;
}

// The finding for the interface the bootstrap would use.
Finding JudgeBootstrap(const NetInterface& boot, int family, const std::optional<std::string>& spec,
                       const std::string& how) {
  const auto addrs = nccl::UsableAddresses(boot, family);
  Finding f = Coded(Make(boot.name, Outcome::kPass, ""), "net.ifname/ok");
  f.With("NCCL_SOCKET_IFNAME", spec ? *spec : "(unset)");
  f.With(boot.sysfs.operstate.path, boot.operstate);
  if (boot.flags) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%x", boot.flags);
    f.With(boot.sysfs.flags.path, b);
  }
  const bool admin_down = boot.flags != 0 && (boot.flags & 0x1) == 0;
  const std::string desc = boot.name + " (" + addrs[0] + ", MTU " + std::to_string(boot.mtu) +
                           ", " + (boot.operstate.empty() ? "state ?" : boot.operstate) + ")";
  if (boot.operstate == "down" || boot.operstate == "lowerlayerdown" || admin_down) {
    f.outcome = Outcome::kFail;
    f.code = "net.ifname/bootstrap_down";
    f.message = "NCCL's bootstrap would use " + desc + " [" + how + "], but the interface is " +
                (admin_down ? "administratively down" : "down (no carrier)") +
                ": other nodes cannot connect, init hangs until the timeout";
    f.next_step = "bring it up (`ip link set " + boot.name +
                  " up`, check cable/switch), or "
                  "point NCCL_SOCKET_IFNAME at the interface with the cluster address";
  } else if (nccl::IsLoopback(boot.name)) {
    f.outcome = Outcome::kFail;
    f.code = "net.ifname/bootstrap_loopback";
    f.message = "NCCL's bootstrap would use the loopback interface [" + how +
                "]: other nodes cannot reach this node";
    f.next_step = "configure the cluster network interface and set NCCL_SOCKET_IFNAME to it";
  } else if (nccl::IsDockerBridge(boot.name)) {
    f.outcome = Outcome::kWarn;
    f.code = "net.ifname/bootstrap_container_bridge";
    f.message = "NCCL's bootstrap would use " + desc + " [" + how +
                "]: a container bridge is usually not reachable from other nodes";
    f.next_step = "set NCCL_SOCKET_IFNAME to the cluster network interface";
  } else {
    f.message = "NCCL's bootstrap would use " + desc + " [" + how + "]";
  }
  return f;
}

std::vector<Finding> CheckNetIfname(const CheckContext& ctx) {
  const auto& ifs = ctx.facts.interfaces;
  std::vector<Finding> out;
  for (const Error& e : NetReadErrors(ctx.facts)) {
    Finding f = Coded(Make("node", Outcome::kError, e.where + ": " + e.message),
                      "net.ifname/file_unreadable");
    f.next_step = e.fix.empty() ? "check the file on the node" : e.fix;
    out.push_back(std::move(f));
  }
  if (ifs.empty()) {
    if (out.empty()) {
      out.push_back(Coded(Make("node", Outcome::kError,
                               "no network interfaces found in " +
                                   ctx.facts.HostPath(ctx.facts.net.class_net.path)),
                          "net.ifname/no_interfaces"));
    }
    return out;
  }
  const nccl::SocketChoice choice = nccl::ChooseSocketInterfaces(ifs, ctx.env);
  if (choice.outcome != nccl::SocketChoice::Outcome::kChosen) {
    out.push_back(NoChoiceFinding(ctx.facts, choice));
    return out;
  }
  const auto& chosen = choice.chosen;
  const std::string& how = choice.how;
  const NetInterface& boot = *chosen[0];
  Finding f = JudgeBootstrap(boot, choice.family, choice.ifname, how);
  out.push_back(std::move(f));
  // NCCL's socket transport also uses the other matching interfaces (up to 16).
  for (std::size_t k = 1; k < chosen.size() && k < 16; ++k) {
    const NetInterface& o = *chosen[k];
    if (o.operstate == "down") {
      Finding w = Coded(Make(o.name, Outcome::kWarn,
                             "NCCL would also use " + o.name + " [" + how + "], which is down"),
                        "net.ifname/other_down");
      w.With(o.sysfs.operstate.path, o.operstate);
      w.next_step = "bring it up or exclude it (NCCL_SOCKET_IFNAME=^" + o.name +
                    " or name the "
                    "wanted interfaces)";
      out.push_back(std::move(w));
    }
  }
  return out;
}

}  // namespace

extern const CheckInfo kNetIfnameCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kNetIfnameCheck = {
    "net.ifname", "NCCL's bootstrap interface exists, is up and has an address", CheckNetIfname,
    kCodes};

}  // namespace sl::preflight
