// The computed variables of recipes' `{ compute = "<name>" }`: one function per name, listed in
// kComputes[]. Each reads the node's facts through nccl/ and says why it chose its value.
#include "recipes/computes.h"

#include <algorithm>
#include <cstdint>

#include "common/strings.h"
#include "nccl/gid.h"
#include "nccl/name_filter.h"
#include "nccl/ports.h"
#include "nccl/ras.h"
#include "nccl/socket.h"

namespace sl::recipes {
namespace {

using nccl::Version;
using nccl::Versions;

constexpr Version kNcclAutoGid{2, 21, 5};  // first NCCL that picks the RoCE v2 GID itself
constexpr Version kNcclRas{2, 24, 3};      // first NCCL with the RAS subsystem

std::vector<const IbPort*> Ports(const NodeFacts& f, std::string_view link_layer, bool up_only) {
  std::vector<const IbPort*> out;
  for (const auto& p : f.ib_ports) {
    if (!link_layer.empty() && p.link_layer != link_layer) continue;
    if (up_only && !p.IsUp()) continue;
    out.push_back(&p);
  }
  return out;
}

Computed ComputeIbHca(const ComputeInput& in) {
  const EnvSetting& s = in.setting;
  const NodeFacts& facts = in.facts;
  auto up = Ports(facts, s.link_layer, true);
  auto all = Ports(facts, s.link_layer, false);
  if (up.empty()) {
    std::string why = all.empty()
                          ? "this node has no RDMA port" +
                                (s.link_layer.empty() ? "" : " of link layer " + s.link_layer)
                          : "no RDMA port is ACTIVE/LinkUp";
    return {std::nullopt,
            why + "; left unset (NCCL would use sockets: see preflight ib.port.state)"};
  }
  nccl::NameFilter f;
  f.exact = true;
  std::vector<std::string> used, skipped;
  for (const IbPort* p : up) {
    f.entries.push_back({p->device, p->port});
    used.push_back(nccl::DescribePort(*p));
  }
  for (const IbPort* p : all) {
    if (!p->IsUp()) skipped.push_back(nccl::DescribePort(*p));
  }
  std::string why = "the ACTIVE ports: " + Join(used, ", ");
  if (!skipped.empty()) why += "; skipped " + Join(skipped, ", ");
  why += "; '=' makes the match exact (without it mlx5_1 also selects mlx5_10..mlx5_17)";
  return {nccl::FormatFilter(f), why};
}

Computed ComputeSocketIfname(const ComputeInput& in) {
  const NodeFacts& facts = in.facts;
  if (facts.interfaces.empty()) {
    return {std::nullopt,
            "no network interfaces known for this node; left unset (NCCL picks ib* first, then any "
            "interface but docker*, lo, virbr*)"};
  }
  const NetInterface* pick = nccl::PickSocketInterface(facts);
  if (pick == nullptr) {
    return {std::nullopt,
            "no interface is up with an address (lo, docker*, veth*, virbr* do not count); left "
            "unset: see preflight net.ifname"};
  }
  std::string why = pick->name + " is up with address " + pick->addresses.front() +
                    (nccl::IsIpoib(pick->name) ? " (IPoIB: NCCL's first preference)"
                                               : " (first usable non-container interface)") +
                    "; pinned with '=' so every rank bootstraps over the same, checked interface "
                    "and never over a container bridge";
  return {"=" + pick->name, why};
}

Computed ComputeGidIndex(const ComputeInput& in) {
  const EnvSetting& s = in.setting;
  const Versions& versions = in.versions;
  auto up = Ports(in.facts, s.link_layer.empty() ? "Ethernet" : s.link_layer, true);
  std::vector<const IbPort*> roce;
  for (const IbPort* p : up) {
    if (p->IsRoce()) roce.push_back(p);
  }
  if (roce.empty()) return {std::nullopt, "no ACTIVE RoCE port; not needed"};
  std::vector<std::string> picks;
  std::optional<int> common;
  bool agree = true;
  for (const IbPort* p : roce) {
    auto idx = nccl::SelectGidIndex(*p, in.env);
    if (!idx) {
      return {std::nullopt, p->Name() +
                                " has no usable RoCE v2 GID (IPv4, not link-local); left unset: "
                                "see preflight ib.gid"};
    }
    picks.push_back(p->Name() + " -> " + std::to_string(*idx));
    if (common && *common != *idx) agree = false;
    if (!common) common = idx;
  }
  const std::string where = Join(picks, ", ");
  if (!versions.nccl) {
    return {std::nullopt,
            "NCCL version unknown; assuming >= 2.21, which picks the RoCE v2 GID "
            "itself (" +
                where + "); state --nccl-version if older"};
  }
  if (*versions.nccl >= kNcclAutoGid) {
    return {std::nullopt, "NCCL " + versions.nccl->ToString() +
                              " (>= 2.21) picks the RoCE v2 GID itself (" + where +
                              "); setting it would only break on nodes whose table differs"};
  }
  if (!agree) {
    return {std::nullopt, "ports need different GID indexes (" + where + ") but NCCL " +
                              versions.nccl->ToString() +
                              " takes one global value; upgrade NCCL to >= 2.21"};
  }
  return {std::to_string(*common),
          "NCCL " + versions.nccl->ToString() +
              " (< 2.21) uses index 0 unless told; the RoCE v2 IPv4 entry is " + where};
}

std::uint64_t Fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

Computed ComputeRasAddr(const ComputeInput& in) {
  const Environment& env = in.env;
  const Versions& versions = in.versions;
  if (versions.nccl && *versions.nccl < kNcclRas) {
    return {std::nullopt,
            "NCCL " + versions.nccl->ToString() + " has no RAS (added in 2.24); not needed"};
  }
  auto job = Lookup(env, "SLURM_JOB_ID");
  if (!job || job->empty()) {
    return {std::nullopt, "not in a Slurm job (no SLURM_JOB_ID): NCCL's default " +
                              nccl::FormatRasAddress(nccl::kRasHost, nccl::kRasPort) + " is kept"};
  }
  auto step = Lookup(env, "SLURM_STEP_ID").value_or("");
  int port = RasPortFor(env);
  const std::string base = std::to_string(nccl::kRasPort);
  return {nccl::FormatRasAddress(nccl::kRasHost, port),
          "job-unique port " + base + " + hash(SLURM_JOB_ID=" + *job +
              (step.empty() ? "" : ", SLURM_STEP_ID=" + step) +
              ") % 1000: two jobs sharing this node would otherwise both want " + base +
              " and the second one's RAS could not listen"};
}

}  // namespace

// The table a recipe's compute name is looked up in (recipe.cpp validates against it).
constexpr ComputeSpec kComputes[] = {
    {.name = "ib_hca", .compute = ComputeIbHca},
    {.name = "socket_ifname", .compute = ComputeSocketIfname},
    {.name = "roce_gid_index", .compute = ComputeGidIndex},
    {.name = "ras_addr", .compute = ComputeRasAddr},
};

const ComputeSpec* FindCompute(std::string_view name) {
  auto it = std::find_if(std::begin(kComputes), std::end(kComputes),
                         [&](const ComputeSpec& c) { return c.name == name; });
  return it == std::end(kComputes) ? nullptr : &*it;
}

std::vector<std::string> ComputeNames() {
  std::vector<std::string> out;
  for (const ComputeSpec& c : kComputes) out.emplace_back(c.name);
  return out;
}

int RasPortFor(const Environment& env) {
  auto job = Lookup(env, "SLURM_JOB_ID");
  if (!job || job->empty()) return nccl::kRasPort;
  std::string key = *job + "." + Lookup(env, "SLURM_STEP_ID").value_or("");
  return nccl::kRasPort + static_cast<int>(Fnv1a(key) % 1000);
}

}  // namespace sl::recipes
