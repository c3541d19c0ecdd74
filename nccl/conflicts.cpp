#include "nccl/conflicts.h"

#include <algorithm>
#include <optional>
#include <set>

#include "common/strings.h"
#include "nccl/gid.h"
#include "nccl/name_filter.h"
#include "nccl/param.h"
#include "nccl/ports.h"
#include "nccl/socket.h"

namespace sl::nccl {
namespace {

/// What every rule needs: the ports that are ACTIVE/LinkUp and their names.
struct NodeView {
  const NodeFacts& facts;
  std::vector<const IbPort*> active;
  std::vector<std::string> active_names;
  explicit NodeView(const NodeFacts& f) : facts(f) {
    for (const auto& p : f.ib_ports) {
      if (!p.IsUp()) continue;
      active.push_back(&p);
      active_names.push_back(p.Name());
    }
  }
};

void IbDisableConflicts(const Environment& env, const NodeView& n, std::vector<Conflict>* out) {
  auto v = Lookup(env, "NCCL_IB_DISABLE");
  if (!v || IntParam(env, "NCCL_IB_DISABLE", 0) == 0 || n.active.empty()) return;
  out->push_back({"NCCL_IB_DISABLE", *v,
                  "IB/RoCE transport disabled while " + std::to_string(n.active.size()) +
                      " RDMA port(s) are ACTIVE (" + Join(n.active_names, ", ") +
                      "): training silently runs over TCP sockets, many times slower",
                  "unset NCCL_IB_DISABLE (or set it to 0)"});
}

void NetConflicts(const Environment& env, const NodeView& n, std::vector<Conflict>* out) {
  auto v = Lookup(env, "NCCL_NET");
  if (!v || ToLower(Trim(*v)) != "socket" || n.active.empty()) return;
  out->push_back(
      {"NCCL_NET", *v,
       "socket transport forced while RDMA ports are ACTIVE (" + Join(n.active_names, ", ") + ")",
       "unset NCCL_NET"});
}

/// One entry of an including NCCL_IB_HCA list: names a missing port, a down port, or (prefix
/// match) more devices than it says.
void IbHcaEntryConflicts(const std::string& value, const NameFilter& f, const NameFilter::Entry& e,
                         const NodeView& n, std::vector<Conflict>* out) {
  std::vector<const IbPort*> hits;
  std::set<std::string> extra_devices;
  for (const auto& p : n.facts.ib_ports) {
    bool name_ok = f.exact ? p.device == e.name : StartsWith(p.device, e.name);
    if (name_ok && (e.port < 0 || e.port == p.port)) {
      hits.push_back(&p);
      if (p.device != e.name) extra_devices.insert(p.device);
    }
  }
  std::string ent = e.name + (e.port >= 0 ? ":" + std::to_string(e.port) : "");
  if (hits.empty()) {
    std::vector<std::string> have;
    for (const auto& p : n.facts.ib_ports) have.push_back(p.Name());
    out->push_back(
        {"NCCL_IB_HCA", value,
         "names " + ent + ", which this node does not have (ports: " + Join(have, ", ") + ")",
         "list only existing ports, e.g. NCCL_IB_HCA='=" +
             (n.active_names.empty() ? std::string("mlx5_0:1") : Join(n.active_names, ",")) + "'"});
    return;
  }
  bool any_up = std::any_of(hits.begin(), hits.end(), [](const IbPort* p) { return p->IsUp(); });
  if (!any_up) {
    std::vector<std::string> d;
    for (const IbPort* p : hits) d.push_back(DescribePort(*p));
    out->push_back({"NCCL_IB_HCA", value,
                    "names " + ent + ", which is not ACTIVE/LinkUp: " + Join(d, ", "),
                    "bring the port up, or remove it from NCCL_IB_HCA"});
  }
  if (!f.exact && !extra_devices.empty()) {
    out->push_back({"NCCL_IB_HCA", value,
                    "'" + e.name + "' is a prefix match: it also selects " +
                        Join({extra_devices.begin(), extra_devices.end()}, ", "),
                    "prefix the list with '=' for exact names: NCCL_IB_HCA='=" +
                        std::string(Trim(value)) + "'",
                    true});
  }
}

void IbHcaConflicts(const Environment& env, const NodeView& n, std::vector<Conflict>* out) {
  auto v = Lookup(env, "NCCL_IB_HCA");
  if (!v || n.facts.ib_ports.empty()) return;
  auto f = ParseIbHca(*v);
  if (!f.ok()) return;  // env.nccl reports the syntax error
  const std::size_t before = out->size();
  if (!f->exclude) {
    for (const auto& e : f->entries) IbHcaEntryConflicts(*v, *f, e, n, out);
  }
  const bool per_entry = std::any_of(out->begin() + static_cast<std::ptrdiff_t>(before), out->end(),
                                     [](const Conflict& c) { return !c.warning_only; });
  bool selects_active = std::any_of(n.active.begin(), n.active.end(), [&](const IbPort* p) {
    return FilterSelectsIbPort(*f, p->device, p->port);
  });
  if (!selects_active && !n.active.empty() && !per_entry) {
    out->push_back({"NCCL_IB_HCA", *v,
                    "selects none of the ACTIVE ports (" + Join(n.active_names, ", ") +
                        "): NCCL finds no IB device and falls back to sockets",
                    "set NCCL_IB_HCA='=" + Join(n.active_names, ",") + "'"});
  }
}

/// Why the GID entry NCCL_IB_GID_INDEX names on this port cannot carry RoCE v2 traffic; "" when
/// it can.
std::string GidIndexProblem(const IbPort& p, const std::string& value, long long idx) {
  const GidEntry* entry = nullptr;
  for (const auto& g : p.gids) {
    if (g.index == idx) entry = &g;
  }
  if (entry == nullptr || entry->IsZero()) return "GID index " + value + " is empty on " + p.Name();
  if (entry->IsLinkLocal()) {
    return "GID index " + value + " on " + p.Name() + " is link-local (" + entry->gid +
           "): not routable between nodes";
  }
  if (!entry->type.empty() && !entry->IsRoceV2()) {
    return "GID index " + value + " on " + p.Name() + " is " + entry->type + ", not RoCE v2";
  }
  return {};
}

void GidIndexConflicts(const Environment& env, const NodeView& n, std::vector<Conflict>* out) {
  auto v = Lookup(env, "NCCL_IB_GID_INDEX");
  long long idx = IntParam(env, "NCCL_IB_GID_INDEX", -1);
  if (!v || idx < 0) return;
  std::optional<NameFilter> hca;
  if (auto h = Lookup(env, "NCCL_IB_HCA")) {
    if (auto f = ParseIbHca(*h); f.ok()) hca = *f;
  }
  for (const IbPort* p : n.active) {
    if (!p->IsRoce()) continue;
    if (hca && !FilterSelectsIbPort(*hca, p->device, p->port)) continue;
    std::string problem = GidIndexProblem(*p, *v, idx);
    if (problem.empty()) continue;
    auto good = SelectGidIndex(*p, env);
    out->push_back({"NCCL_IB_GID_INDEX", *v, problem,
                    good ? "use index " + std::to_string(*good) +
                               " (RoCE v2, IPv4), or unset it: NCCL >= 2.21 picks it itself"
                         : "unset it; this port has no usable RoCE v2 GID (see ib.gid)"});
  }
}

bool Usable(const NetInterface& i) {
  return (i.operstate == "up" || i.operstate == "unknown") && !i.addresses.empty();
}

/// The interface the fix suggests: the one the plan would pin (never lo or a bridge).
std::string SuggestedIfname(const NodeFacts& facts) {
  const NetInterface* pick = PickSocketInterface(facts);
  return pick ? pick->name : "eth0";
}

void SocketIfnameConflicts(const Environment& env, const NodeView& n, std::vector<Conflict>* out) {
  auto v = Lookup(env, "NCCL_SOCKET_IFNAME");
  if (!v || n.facts.interfaces.empty()) return;
  auto f = ParseSocketIfname(*v);
  if (!f.ok()) return;
  std::vector<std::string> selected, up, have;
  for (const auto& i : n.facts.interfaces) {
    have.push_back(i.name);
    if (!FilterSelectsIfname(*f, i.name)) continue;
    selected.push_back(i.name);
    if (Usable(i)) up.push_back(i.name);
  }
  if (selected.empty()) {
    out->push_back({"NCCL_SOCKET_IFNAME", *v,
                    "matches no interface of this node (" + Join(have, ", ") +
                        "): NCCL bootstrap fails with 'no socket interface found'",
                    "name an existing interface, e.g. NCCL_SOCKET_IFNAME='=" +
                        SuggestedIfname(n.facts) + "'"});
  } else if (up.empty()) {
    out->push_back(
        {"NCCL_SOCKET_IFNAME", *v,
         "matches only interfaces that are down or have no address (" + Join(selected, ", ") + ")",
         "bring the interface up or choose another"});
  }
}

}  // namespace

std::vector<Conflict> FactConflicts(const Environment& env, const NodeFacts& facts) {
  std::vector<Conflict> out;
  const NodeView n(facts);
  IbDisableConflicts(env, n, &out);
  NetConflicts(env, n, &out);
  IbHcaConflicts(env, n, &out);
  GidIndexConflicts(env, n, &out);
  SocketIfnameConflicts(env, n, &out);
  return out;
}

}  // namespace sl::nccl
