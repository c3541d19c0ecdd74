// ib.port.state: every port of every /sys/class/infiniband device is ACTIVE/LinkUp at the rate
// of its siblings. NCCL silently skips a port that is not ACTIVE, so one down rail on one node
// means fewer rails there than elsewhere: the job crawls or hangs instead of failing.
#include <algorithm>
#include <cstdio>
#include <map>

#include "common/strings.h"
#include "preflight/check.h"
#include "preflight/ib_ports.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"ib.port.state/no_devices", Outcome::kSkip, Outcome::kSkip,
     "no InfiniBand/RoCE devices (NCCL uses sockets)", ""},
    {"ib.port.state/disabled", Outcome::kFail, Outcome::kFail,
     "a port NCCL would use is administratively disabled", kFixInFinding},
    {"ib.port.state/no_link_partner", Outcome::kFail, Outcome::kFail,
     "a port NCCL would use has no link partner (Polling/Sleep: cable, transceiver or switch port)",
     kFixInFinding},
    {"ib.port.state/no_subnet_manager", Outcome::kFail, Outcome::kFail,
     "a port NCCL would use has link but no subnet manager activated it", kFixInFinding},
    {"ib.port.state/roce_link_down", Outcome::kFail, Outcome::kFail,
     "a RoCE port NCCL would use is down", kFixInFinding},
    {"ib.port.state/link_training", Outcome::kFail, Outcome::kFail,
     "a port NCCL would use is training or in error recovery", kFixInFinding},
    {"ib.port.state/down_not_used", Outcome::kSkip, Outcome::kSkip,
     "a port is down but NCCL will not use it", ""},
    {"ib.port.state/not_used", Outcome::kSkip, Outcome::kSkip, "NCCL will not use this port", ""},
    {"ib.port.state/rate_below_min", Outcome::kFail, Outcome::kFail,
     "the port rate is below the required rate", kFixInFinding},
    {"ib.port.state/rate_below_siblings", Outcome::kWarn, Outcome::kWarn,
     "the port runs slower than its siblings", kFixInFinding},
    {"ib.port.state/ok", Outcome::kPass, Outcome::kPass, "the check passed", ""},
    {"ib.port.state/device_unreadable", Outcome::kError, Outcome::kError,
     "an IB device file could not be read", kFixReadSource},
    {"ib.port.state/port_unreadable", Outcome::kError, Outcome::kError,
     "an IB port file could not be read", kFixReadSource},
};

constexpr const char* kId = "ib.port.state";

std::string StateText(const IbPort& p) {
  return (p.state.empty() ? "?" : p.state) + "/" + (p.phys_state.empty() ? "?" : p.phys_state);
}

std::string RateText(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g Gb/sec", gbps);
  return buf;
}

void AddStateEvidence(Finding& f, const IbPort& p) {
  if (p.sysfs.state.ok()) {
    f.With(p.sysfs.state.path, std::to_string(p.state_code) + ": " + p.state);
  }
  if (p.sysfs.phys_state.ok()) {
    f.With(p.sysfs.phys_state.path, std::to_string(p.phys_state_code) + ": " + p.phys_state);
  }
}

// What to do about a port that is not ACTIVE/LinkUp, by what the two state files say.
std::string DownFix(const IbPort& p) {
  const std::string dev = p.device;
  const std::string exclude =
      "; to run without it meanwhile, exclude it on every node "
      "(export NCCL_IB_HCA=^=" +
      dev + ") so all nodes use the same rails";
  if (p.phys_state == "Disabled") {
    return "the port is administratively disabled: enable it (`ibportstate` on IB, `ip link set " +
           (p.netdev.empty() ? std::string("<netdev>") : p.netdev) +
           " up` on RoCE, or on the switch), then check `ibstat " + dev + "`" + exclude;
  }
  if (p.phys_state == "Polling" || p.phys_state == "Sleep") {
    return "no link partner: reseat or replace the cable/transceiver and check the switch port "
           "(`ibstat " +
           dev + "`, `mlxlink -d " + dev + " -m`)" + exclude;
  }
  if (p.phys_state == "LinkUp" && !p.IsRoce()) {
    return "the cable is fine but no subnet manager activated the port (state " + p.state +
           "): check that opensm/UFM runs and sees this port (`sminfo`, `ibstat " + dev + "`)" +
           exclude;
  }
  if (p.IsRoce()) {
    return "bring the netdev up (`ip link set " +
           (p.netdev.empty() ? std::string("<netdev>") : p.netdev) +
           " up`) and check cable and switch port (`ibstat " + dev + "`, `ethtool " +
           (p.netdev.empty() ? std::string("<netdev>") : p.netdev) + "`)" + exclude;
  }
  return "the link is training or in error recovery: check `ibstat " + dev +
         "` again in a few "
         "seconds, then `mlxlink -d " +
         dev + " -m` for cable errors" + exclude;
}

// The condition code of a port NCCL would use that is down, by the same cases as DownFix.
std::string DownCode(const IbPort& p) {
  if (p.phys_state == "Disabled") return "ib.port.state/disabled";
  if (p.phys_state == "Polling" || p.phys_state == "Sleep") return "ib.port.state/no_link_partner";
  if (p.phys_state == "LinkUp" && !p.IsRoce()) return "ib.port.state/no_subnet_manager";
  if (p.IsRoce()) return "ib.port.state/roce_link_down";
  return "ib.port.state/link_training";
}

Finding NoDevicesFinding() {
  Finding f;
  f.check_id = kId;
  f.entity = "node";
  f.outcome = Outcome::kSkip;
  f.code = "ib.port.state/no_devices";
  f.message =
      "no InfiniBand/RoCE devices in /sys/class/infiniband: NCCL will use TCP "
      "sockets (NET/Socket) on this node";
  return f;
}

// Fastest rate among used, up ports of each link layer: the "sibling" rate.
std::map<std::string, double> SiblingRates(const std::vector<IbPort>& ports,
                                           const nccl::PortSelection& sel) {
  std::map<std::string, double> best;
  for (const auto& p : ports) {
    if (sel.Uses(p) && p.IsUp() && p.rate_gbps > 0) {
      best[p.link_layer] = std::max(best[p.link_layer], p.rate_gbps);
    }
  }
  return best;
}

// A port whose state files say it is not ACTIVE/LinkUp: a fail when NCCL would use it.
void JudgeDownPort(Finding& f, const IbPort& p, const nccl::PortSelection& sel) {
  if (sel.Uses(p)) {
    f.outcome = Outcome::kFail;
    f.code = DownCode(p);
    f.message = StateText(p) + ", but NCCL would use this port (" + sel.Describe() +
                "); NCCL skips it silently and this node runs with one " + "rail less";
    f.next_step = DownFix(p);
  } else {
    f.outcome = Outcome::kSkip;
    f.code = "ib.port.state/down_not_used";
    f.message = StateText(p) + "; NCCL will not use this port (" + sel.WhyNot(p) + ")";
  }
}

// A used, up port: its rate against the required minimum and against its siblings.
void JudgeUpPort(Finding& f, const IbPort& p, double sibling, const Thresholds& th) {
  if (th.min_rate_gbps > 0 && p.rate_gbps < th.min_rate_gbps) {
    f.outcome = Outcome::kFail;
    f.code = "ib.port.state/rate_below_min";
    f.message = "runs at " + p.rate_text + ", below the required " + RateText(th.min_rate_gbps);
    f.next_step = "check the link width/speed with `mlxlink -d " + p.device +
                  " -m` (a degraded lane or a wrong cable), reseat or replace the cable";
  } else if (p.rate_gbps < sibling) {
    f.outcome = Outcome::kWarn;
    f.code = "ib.port.state/rate_below_siblings";
    f.message = "runs at " + p.rate_text + " while its siblings run at " + RateText(sibling) +
                ": collectives pace to the slowest rail";
    f.next_step = "a lane or cable is degraded: `mlxlink -d " + p.device +
                  " -m` shows width/speed and errors; reseat or replace the cable, check the "
                  "switch port speed setting";
  } else {
    f.outcome = Outcome::kPass;
    f.code = "ib.port.state/ok";
    f.message = StateText(p) + ", " + p.rate_text + ", " + p.link_layer;
  }
}

std::vector<Finding> CheckIbPortState(const CheckContext& ctx) {
  std::vector<Finding> out = IbDeviceErrorFindings(kId, ctx.facts);
  const auto& ports = ctx.facts.ib_ports;
  if (ports.empty()) {
    if (out.empty()) out.push_back(NoDevicesFinding());
    return out;
  }
  nccl::PortSelection sel(ctx.env);
  const std::map<std::string, double> best = SiblingRates(ports, sel);
  for (const auto& p : ports) {
    Finding f;
    f.check_id = kId;
    f.entity = p.Name();
    const std::vector<IbReadError> problems = IbStateReadErrors(p);
    AddStateEvidence(f, p);
    if (p.sysfs.rate.ok()) f.With(p.sysfs.rate.path, p.rate_text);
    if (p.sysfs.link_layer.ok()) f.With(p.sysfs.link_layer.path, p.link_layer);

    if (!p.state.empty() && !p.phys_state.empty() && !p.IsUp()) {
      JudgeDownPort(f, p, sel);
      for (const auto& pr : problems) f.With(pr.path, "unreadable: " + pr.message);
    } else if (!problems.empty()) {
      f = IbReadErrorFinding(kId, p, problems);
    } else if (!sel.Uses(p)) {
      f.outcome = Outcome::kSkip;
      f.code = "ib.port.state/not_used";
      f.message = StateText(p) + ", " + p.rate_text + ", " + p.link_layer +
                  "; NCCL will not use this port (" + sel.WhyNot(p) + ")";
    } else {
      auto it = best.find(p.link_layer);
      JudgeUpPort(f, p, it != best.end() ? it->second : p.rate_gbps, ctx.thresholds);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

extern const CheckInfo kIbPortStateCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kIbPortStateCheck = {
    "ib.port.state", "IB/RoCE ports NCCL would use are ACTIVE/LinkUp at matching rates",
    CheckIbPortState, kCodes};

}  // namespace sl::preflight
