// ib.mtu: the MTU each port will run at. RoCE: the netdev's MTU decides the IB path MTU
// (1500 -> 1024, 9000 -> 4096); InfiniBand: the port's active MTU, which only libibverbs reports
// (not in sysfs). Small MTUs cost bandwidth; ports of one node that disagree make NCCL's rails
// uneven.
#include <map>
#include <set>

#include "nccl/gid.h"
#include "preflight/check.h"
#include "preflight/ib_ports.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"ib.mtu/no_ports", Outcome::kSkip, Outcome::kSkip, "no InfiniBand/RoCE ports", ""},
    {"ib.mtu/not_used", Outcome::kSkip, Outcome::kSkip, "NCCL will not use this port", ""},
    {"ib.mtu/netdev_unknown", Outcome::kSkip, Outcome::kSkip,
     "no netdev is known behind a RoCE port", ""},
    {"ib.mtu/roce_mtu_mismatch", Outcome::kFail, Outcome::kFail,
     "the RoCE netdev MTU differs from the expected MTU", kFixInFinding},
    {"ib.mtu/roce_mtu_not_jumbo", Outcome::kWarn, Outcome::kWarn,
     "the RoCE netdev MTU is below jumbo", kFixInFinding},
    {"ib.mtu/roce_ok", Outcome::kPass, Outcome::kPass, "the RoCE MTU fits", ""},
    {"ib.mtu/ib_mtu_mismatch", Outcome::kFail, Outcome::kFail,
     "the IB active MTU differs from the expected MTU", kFixInFinding},
    {"ib.mtu/ib_mtu_below_min", Outcome::kWarn, Outcome::kWarn,
     "the IB active MTU is below the minimum", kFixInFinding},
    {"ib.mtu/ib_ok", Outcome::kPass, Outcome::kPass, "the IB MTU fits", ""},
    {"ib.mtu/active_mtu_not_checkable", Outcome::kSkip, Outcome::kSkip,
     "the IB active MTU is not checkable (sysroot or no verbs)", ""},
    {"ib.mtu/mtus_disagree", Outcome::kFail, Outcome::kFail,
     "the ports NCCL uses have different MTUs", kFixInFinding},
    {"ib.mtu/port_unreadable", Outcome::kError, Outcome::kError,
     "an IB port file could not be read", kFixReadSource},
};

constexpr const char* kId = "ib.mtu";

// A RoCE port: its netdev MTU against the thresholds; up ports record their path MTU.
void JudgeRoceMtu(const IbPort& p, const Thresholds& th, Finding* out,
                  std::map<std::string, int>* path_mtu,
                  std::map<std::string, std::string>* path_mtu_how) {
  Finding& f = *out;
  f.With(p.sysfs.netdev_mtu.path, std::to_string(p.netdev_mtu));
  const int ib_mtu = nccl::RoceIbMtuForNetdevMtu(p.netdev_mtu);
  if (p.active_mtu > 0)
    f.With("ibv_query_port(" + p.Name() + ").active_mtu", std::to_string(p.active_mtu));
  const std::string desc = p.netdev + " MTU " + std::to_string(p.netdev_mtu) +
                           " allows a RoCE path MTU of " + std::to_string(ib_mtu);
  const std::string fix = "set the MTU on the netdev (`ip link set " + p.netdev + " mtu " +
                          std::to_string(th.expected_mtu.value_or(th.min_roce_mtu)) +
                          "`, and persist it in netplan/NetworkManager), on the switch ports "
                          "(9216 for jumbo) and identically on every node";
  if (th.expected_mtu && p.netdev_mtu != *th.expected_mtu) {
    f.outcome = Outcome::kFail;
    f.code = "ib.mtu/roce_mtu_mismatch";
    f.message = desc + ", expected netdev MTU " + std::to_string(*th.expected_mtu);
    f.next_step = fix;
  } else if (!th.expected_mtu && p.netdev_mtu < th.min_roce_mtu) {
    f.outcome = Outcome::kWarn;
    f.code = "ib.mtu/roce_mtu_not_jumbo";
    f.message = desc + " (below jumbo " + std::to_string(th.min_roce_mtu) +
                "): more packets per message, lower bandwidth";
    f.next_step = fix;
  } else {
    f.outcome = Outcome::kPass;
    f.code = "ib.mtu/roce_ok";
    f.message = desc;
  }
  if (p.IsUp() && ib_mtu > 0) {
    (*path_mtu)[p.Name()] = ib_mtu;
    (*path_mtu_how)[p.Name()] = p.netdev + " " + std::to_string(p.netdev_mtu);
  }
}

// An InfiniBand port with a verbs answer: its active MTU against the thresholds.
void JudgeIbMtu(const IbPort& p, const Thresholds& th, Finding* out,
                std::map<std::string, int>* path_mtu,
                std::map<std::string, std::string>* path_mtu_how) {
  Finding& f = *out;
  f.With("ibv_query_port(" + p.Name() + ").active_mtu", std::to_string(p.active_mtu));
  const std::string desc = "active MTU " + std::to_string(p.active_mtu);
  const std::string fix =
      "the IB MTU comes from the partition: set mtu=5 (4096) for the "
      "partition in opensm's partitions.conf or UFM, then re-run "
      "`ibv_devinfo -d " +
      p.device + "`";
  if (th.expected_mtu && p.active_mtu != *th.expected_mtu) {
    f.outcome = Outcome::kFail;
    f.code = "ib.mtu/ib_mtu_mismatch";
    f.message = desc + ", expected " + std::to_string(*th.expected_mtu);
    f.next_step = fix;
  } else if (!th.expected_mtu && p.active_mtu < th.min_ib_mtu) {
    f.outcome = Outcome::kWarn;
    f.code = "ib.mtu/ib_mtu_below_min";
    f.message = desc + " (below " + std::to_string(th.min_ib_mtu) + "): lower bandwidth";
    f.next_step = fix;
  } else {
    f.outcome = Outcome::kPass;
    f.code = "ib.mtu/ib_ok";
    f.message = desc;
  }
  if (p.IsUp()) {
    (*path_mtu)[p.Name()] = p.active_mtu;
    (*path_mtu_how)[p.Name()] = "active";
  }
}

// Ports NCCL uses at different MTUs: connections run at the smaller one of both ends.
void AddDisagreement(const std::map<std::string, int>& path_mtu,
                     const std::map<std::string, std::string>& path_mtu_how,
                     std::vector<Finding>* out) {
  std::set<int> distinct;
  for (const auto& [_, m] : path_mtu) distinct.insert(m);
  if (distinct.size() > 1) {
    Finding f;
    f.check_id = kId;
    f.entity = "node";
    f.outcome = Outcome::kFail;
    f.code = "ib.mtu/mtus_disagree";
    std::string list;
    for (const auto& [name, m] : path_mtu) {
      list += (list.empty() ? "" : ", ") + name + " " + std::to_string(m) + " (" +
              path_mtu_how.at(name) + ")";
      f.With(name, std::to_string(m));
    }
    f.message = "ports NCCL uses run at different MTUs: " + list;
    f.next_step =
        "give every port NCCL uses the same MTU (jumbo 9000 on all RoCE netdevs, "
        "4096 on all IB partitions); connections run at the smaller MTU of both ends";
    out->push_back(std::move(f));
  }
}

std::vector<Finding> CheckIbMtu(const CheckContext& ctx) {
  std::vector<Finding> out;
  if (ctx.facts.ib_ports.empty()) {
    out.push_back(
        Coded(MakeFinding(kId, "node", Outcome::kSkip, "no InfiniBand/RoCE ports: no MTU to check"),
              "ib.mtu/no_ports"));
    return out;
  }
  nccl::PortSelection sel(ctx.env);
  const auto& th = ctx.thresholds;
  std::map<std::string, int> path_mtu;  // used, up ports: the IB MTU they will run at
  std::map<std::string, std::string> path_mtu_how;
  std::vector<std::string> not_checkable;  // InfiniBand ports without a verbs answer

  for (const auto& p : ctx.facts.ib_ports) {
    Finding f;
    f.check_id = kId;
    f.entity = p.Name();
    const bool used = sel.Uses(p);
    if (!used) {
      f.outcome = Outcome::kSkip;
      f.code = "ib.mtu/not_used";
      f.message = "NCCL will not use this port (" + sel.WhyNot(p) + ")";
      out.push_back(std::move(f));
      continue;
    }
    if (p.IsRoce()) {
      std::vector<IbReadError> problems;
      AddReadError(p.sysfs.netdev_mtu, &problems);
      if (!problems.empty()) {
        out.push_back(IbReadErrorFinding(kId, p, problems));
        continue;
      }
      if (p.netdev.empty() || p.netdev_mtu == 0) {
        f.outcome = Outcome::kSkip;
        f.code = "ib.mtu/netdev_unknown";
        f.message = p.Name() +
                    " is RoCE but no netdev is known behind it (no GID entry names "
                    "one): MTU not checkable";
        out.push_back(std::move(f));
        continue;
      }
      JudgeRoceMtu(p, th, &f, &path_mtu, &path_mtu_how);
      out.push_back(std::move(f));
      continue;
    }
    // InfiniBand (or unknown link layer): only the verbs port query knows the active MTU.
    if (p.active_mtu <= 0) {
      not_checkable.push_back(p.Name());
      continue;
    }
    JudgeIbMtu(p, th, &f, &path_mtu, &path_mtu_how);
    out.push_back(std::move(f));
  }

  if (!not_checkable.empty()) {
    // One line for all of them: on a --sysroot tree this is every InfiniBand port.
    Finding f;
    f.check_id = kId;
    f.entity = not_checkable.size() == 1 ? not_checkable[0] : "node";
    f.outcome = Outcome::kSkip;
    f.code = "ib.mtu/active_mtu_not_checkable";
    std::string list;
    for (const auto& n : not_checkable) list += (list.empty() ? "" : ", ") + n;
    f.message =
        "InfiniBand active MTU not checkable for " + list +
        ": it is not in sysfs and only libibverbs on the live node reports it" +
        (ctx.facts.IsSysroot() ? " (this is a --sysroot tree)" : " (no device could be opened)");
    out.push_back(std::move(f));
  }

  AddDisagreement(path_mtu, path_mtu_how, &out);
  return out;
}

}  // namespace

extern const CheckInfo kIbMtuCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kIbMtuCheck = {
    "ib.mtu", "port MTUs are jumbo and agree across the ports NCCL uses", CheckIbMtu, kCodes};

}  // namespace sl::preflight
