// ib.gid: on RoCE, NCCL addresses peers by a GID-table entry. The wrong entry (link-local, RoCE
// v1, empty, another pod's slot) gives "ibv_modify_qp failed" at best and a silent hang at worst.
// We compute the entry NCCL >= 2.21 picks on its own (common/node_facts.cpp mirrors its rule) and
// judge NCCL_IB_GID_INDEX when it is set.
#include <algorithm>

#include "common/parse/ib_sysfs.h"
#include "common/strings.h"
#include "nccl/gid.h"
#include "preflight/check.h"
#include "preflight/ib_ports.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"ib.gid/not_used", Outcome::kSkip, Outcome::kSkip, "NCCL will not use this port", ""},
    {"ib.gid/gid_index_ok", Outcome::kPass, Outcome::kPass, "NCCL_IB_GID_INDEX names a usable GID",
     ""},
    {"ib.gid/gid_index_wrong", Outcome::kFail, Outcome::kFail,
     "NCCL_IB_GID_INDEX names an unusable GID", kFixInFinding},
    {"ib.gid/gid_index_no_usable", Outcome::kFail, Outcome::kFail,
     "NCCL_IB_GID_INDEX is set and no usable GID exists", kFixInFinding},
    {"ib.gid/auto_ok", Outcome::kPass, Outcome::kPass, "NCCL's own GID choice is usable", ""},
    {"ib.gid/auto_choice_unusable", Outcome::kFail, Outcome::kFail,
     "NCCL's own GID choice is unusable although a usable entry exists", kFixInFinding},
    {"ib.gid/no_usable_gid", Outcome::kFail, Outcome::kFail, "no usable RoCE GID on the port",
     kFixInFinding},
    {"ib.gid/no_roce_ports", Outcome::kSkip, Outcome::kSkip,
     "no RoCE ports (GID index does not apply)", ""},
    {"ib.gid/port_unreadable", Outcome::kError, Outcome::kError,
     "an IB port file could not be read", kFixReadSource},
};

constexpr const char* kId = "ib.gid";

// Node path of gids/`index`: its fact's, or beside the listed gids/ for an entry not read (an
// index past the table that NCCL_IB_GID_INDEX names).
std::string GidPath(const IbPort& p, int index) {
  auto it = p.sysfs.gids.find(index);
  if (it != p.sysfs.gids.end()) return it->second.path;
  return p.sysfs.gid_indices.path + "/" + std::to_string(index);
}

const GidEntry* Entry(const IbPort& p, int index) {
  for (const auto& g : p.gids) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

// "RoCE v2 11.0.0.72 on ens3np0" / "RoCE v1 fe80:...:03ec (link-local) on ens3np0".
std::string Describe(const GidEntry& g) {
  std::string s = (g.type.empty() ? std::string("type unknown") : g.type) + " ";
  s += g.ipv4.empty() ? g.gid : g.ipv4;
  if (g.IsLinkLocal()) s += " (link-local)";
  if (!g.ndev.empty()) s += " on " + g.ndev;
  return s;
}

// Why entry `index` is not usable for NCCL under `c` (empty when it is).
std::string Unusable(const IbPort& p, int index, const nccl::GidChoice& c) {
  if (index >= std::max(p.gid_table_len, 1) && !Entry(p, index)) {
    return "index " + std::to_string(index) + " does not exist (the table has " +
           std::to_string(p.gid_table_len) + " entries)";
  }
  const GidEntry* g = Entry(p, index);
  if (!g) return "entry " + std::to_string(index) + " is empty";
  auto bytes = ParseGid(g->gid);
  if (bytes.ok() && GidIsUnconfigured(*bytes))
    return "entry " + std::to_string(index) + " is empty";
  if (g->IsLinkLocal()) {
    return "entry " + std::to_string(index) + " is link-local (" + g->type + " " + g->gid +
           (g->ndev.empty() ? std::string() : " on " + g->ndev) + "): not routable between nodes";
  }
  if (g->RoceVersion() != c.roce_version) {
    return "entry " + std::to_string(index) + " is " + Describe(*g) + ", not RoCE v" +
           std::to_string(c.roce_version);
  }
  if (bytes.ok() && GidIsIpv4(*bytes) == c.want_ipv6) {
    return "entry " + std::to_string(index) + " is " + Describe(*g) + ", not an " +
           (c.want_ipv6 ? "IPv6" : "IPv4") + " address (NCCL_IB_ADDR_FAMILY)";
  }
  if (!c.addr_range.empty()) {
    return "entry " + std::to_string(index) + " is " + Describe(*g) +
           ", outside NCCL_IB_ADDR_RANGE=" + c.addr_range;
  }
  return {};
}

void AddEntryEvidence(Finding& f, const IbPort& p, int index) {
  const GidEntry* g = Entry(p, index);
  const std::string idx = std::to_string(index);
  f.With(GidPath(p, index), g ? g->gid : std::string("0000:0000:0000:0000:0000:0000:0000:0000"));
  auto type = p.sysfs.gid_types.find(index);
  if (g && type != p.sysfs.gid_types.end())
    f.With(type->second.path, g->type.empty() ? "(unreadable)" : g->type);
}

// show_gids-style rows as evidence: "gids/3" -> "0000:...:0048  11.0.0.72  v2  ens3np0".
void AddTable(Finding& f, const IbPort& p) {
  for (const auto& g : p.gids) {
    std::string row = g.gid + "  " + (g.ipv4.empty() ? std::string("-") : g.ipv4) + "  " +
                      (g.VersionShort().empty() ? std::string("?") : g.VersionShort()) + "  " +
                      (g.ndev.empty() ? std::string("-") : g.ndev);
    const std::string path = GidPath(p, g.index);
    // The chosen entry is already evidence: give it the table form instead of a second line.
    auto it = std::find_if(f.evidence.begin(), f.evidence.end(),
                           [&](const Evidence& e) { return e.source == path; });
    if (it != f.evidence.end()) {
      it->value = row;
    } else {
      f.With(path, row);
    }
  }
}

std::string NoUsableFix(const IbPort& p, const nccl::GidChoice& c) {
  std::string dev = p.netdev.empty() ? "<netdev>" : p.netdev;
  std::string fix = "give " + dev + " an " + (c.want_ipv6 ? "IPv6" : "IPv4") +
                    " address (`ip addr add <addr>/<len> dev " + dev +
                    "`); the kernel then adds RoCE v1 and v2 entries for it (check with "
                    "`show_gids " +
                    p.device + "`)";
  if (!c.addr_range.empty()) fix += "; or widen NCCL_IB_ADDR_RANGE=" + c.addr_range;
  if (!c.want_ipv6) fix += "; on an IPv6-only fabric set NCCL_IB_ADDR_FAMILY=AF_INET6";
  return fix;
}

// NCCL_IB_GID_INDEX is set: NCCL uses it as is, so it must name a usable entry.
void JudgeGidIndex(const IbPort& p, const Environment& env, const nccl::GidChoice& own,
                   const nccl::GidChoice& eff, Finding* out) {
  Finding& f = *out;
  const std::string ver = "RoCE v" + std::to_string(own.roce_version);
  const bool any_usable = !own.usable_indices.empty();
  const int best = own.usable ? own.index : (any_usable ? own.usable_indices.back() : -1);
  const std::string var = "NCCL_IB_GID_INDEX=" + std::to_string(eff.index);
  f.With("NCCL_IB_GID_INDEX", eff.env_text);
  AddEntryEvidence(f, p, eff.index);
  if (eff.usable) {
    f.outcome = Outcome::kPass;
    f.code = "ib.gid/gid_index_ok";
    f.message = var + " names " + Describe(*Entry(p, eff.index));
    if (own.usable && own.index != eff.index) {
      f.message += " (NCCL would pick " + std::to_string(own.index) + " on its own)";
    }
  } else if (any_usable) {
    f.outcome = Outcome::kFail;
    f.code = "ib.gid/gid_index_wrong";
    f.message = var + " is wrong on this node: " + Unusable(p, eff.index, eff) + "; the usable " +
                ver + " entry is " + std::to_string(best);
    f.next_step = "unset NCCL_IB_GID_INDEX (NCCL >= 2.21 picks " + std::to_string(best) +
                  " on its own; container GID tables differ per pod) or export "
                  "NCCL_IB_GID_INDEX=" +
                  std::to_string(best);
    AddEntryEvidence(f, p, best);
  } else {
    f.outcome = Outcome::kFail;
    f.code = "ib.gid/gid_index_no_usable";
    f.message = var + " and no usable " + ver + " GID exists on " + p.Name() + ": " +
                Unusable(p, eff.index, eff);
    f.next_step = NoUsableFix(p, own);
  }
}

std::vector<Finding> CheckIbGid(const CheckContext& ctx) {
  std::vector<Finding> out;
  nccl::PortSelection sel(ctx.env);
  int roce_ports = 0;
  for (const auto& p : ctx.facts.ib_ports) {
    if (!p.IsRoce()) continue;
    ++roce_ports;
    Finding f;
    f.check_id = kId;
    f.entity = p.Name();
    if (!sel.Uses(p)) {
      f.outcome = Outcome::kSkip;
      f.code = "ib.gid/not_used";
      f.message = "NCCL will not use this port (" + sel.WhyNot(p) + ")";
      out.push_back(std::move(f));
      continue;
    }
    const std::vector<IbReadError> problems = IbGidReadErrors(p);
    if (!problems.empty()) {
      out.push_back(IbReadErrorFinding(kId, p, problems));
      continue;
    }
    const nccl::GidChoice own = nccl::SimulateGidIndex(p, ctx.env, /*honour_gid_index=*/false);
    const nccl::GidChoice eff = nccl::SimulateGidIndex(p, ctx.env, /*honour_gid_index=*/true);
    const std::string ver = "RoCE v" + std::to_string(own.roce_version);
    const bool any_usable = !own.usable_indices.empty();
    const int best = own.usable ? own.index : (any_usable ? own.usable_indices.back() : -1);

    if (eff.from_env) {
      JudgeGidIndex(p, ctx.env, own, eff, &f);
    } else if (own.usable) {
      f.outcome = Outcome::kPass;
      f.code = "ib.gid/auto_ok";
      f.message = "NCCL >= 2.21 picks GID " + std::to_string(own.index) + ": " +
                  Describe(*Entry(p, own.index));
      if (own.index != 0) {
        f.message +=
            " (NCCL < 2.21 uses 0 unless NCCL_IB_GID_INDEX=" + std::to_string(own.index) + ")";
      }
      AddEntryEvidence(f, p, own.index);
    } else if (any_usable) {
      f.outcome = Outcome::kFail;
      f.code = "ib.gid/auto_choice_unusable";
      f.message = "NCCL's own choice on " + p.Name() + " is GID " + std::to_string(own.index) +
                  " (" + Unusable(p, own.index, own) + ") although entry " + std::to_string(best) +
                  " is a usable " + ver + " GID";
      f.next_step = "export NCCL_IB_GID_INDEX=" + std::to_string(best) +
                    " on this node, or correct NCCL_IB_ADDR_FAMILY/NCCL_IB_ADDR_RANGE";
      AddEntryEvidence(f, p, own.index);
      AddEntryEvidence(f, p, best);
    } else {
      f.outcome = Outcome::kFail;
      f.code = "ib.gid/no_usable_gid";
      f.message = "no usable " + ver + " GID on " + p.Name() + " (" +
                  std::to_string(p.gids.size()) + " non-empty entries, none " +
                  (own.want_ipv6 ? "IPv6" : "IPv4") + " " + ver +
                  (own.addr_range.empty() ? "" : " in NCCL_IB_ADDR_RANGE=" + own.addr_range) +
                  "): NCCL falls back to GID " + std::to_string(own.index) +
                  " and cross-node connections fail or hang";
      f.next_step = NoUsableFix(p, own);
    }
    if (ctx.verbose) AddTable(f, p);
    out.push_back(std::move(f));
  }
  if (roce_ports == 0) {
    Finding f;
    f.check_id = kId;
    f.entity = "node";
    f.outcome = Outcome::kSkip;
    f.code = "ib.gid/no_roce_ports";
    f.message = ctx.facts.ib_ports.empty()
                    ? "no InfiniBand/RoCE ports: no GID table to check"
                    : "no RoCE ports (InfiniBand ports address peers by LID; GID index 0)";
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

extern const CheckInfo kIbGidCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kIbGidCheck = {
    "ib.gid", "RoCE GID table has a usable RoCE v2 entry; NCCL_IB_GID_INDEX points at it",
    CheckIbGid, kCodes};

}  // namespace sl::preflight
