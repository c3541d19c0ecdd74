// JSON form of NodeFacts: what each node publishes to the warm-up store and writes to reports.
#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "common/node_facts.h"

namespace sl {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GidEntry, index, gid, type, ndev, ipv4)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(IbProblem, device, port, attribute, path, message)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(IbPort, device, port, state, phys_state, rate_text,
                                                rate_gbps, link_layer, netdev, netdev_mtu,
                                                active_mtu, gids, state_code, phys_state_code,
                                                gid_table_len, fw_ver, hca_type, board_id)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuInfo, pci_address, device_id, model)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NetInterface, name, operstate, mtu, addresses,
                                                ifindex, flags)

// Limits: kUnlimited is written as the string "unlimited" (as /proc/self/limits does).
namespace {
nlohmann::json LimitJson(std::uint64_t v) {
  return v == kUnlimited ? nlohmann::json("unlimited") : nlohmann::json(v);
}
std::uint64_t LimitFrom(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return 0;
  const auto& v = j.at(key);
  if (v.is_string()) return kUnlimited;
  return v.is_number_unsigned() ? v.get<std::uint64_t>() : 0;
}
Fact<ProcLimit> LimitFact(const nlohmann::json& j, const char* name, const char* soft,
                          const char* hard) {
  ProcLimit row;
  row.name = name;
  row.soft = LimitFrom(j, soft);
  row.hard = LimitFrom(j, hard);
  return Fact<ProcLimit>::Of(row, "/proc/self/limits", "");
}

// A peer's "ib_problems" row put back on the fact it was derived from (IbProblems), so that
// recipe choice and the ib.* checks see a peer's unread files as they see their own, and the
// facts write the same rows again. The message is kept as the error's whole text (where ""). A
// row naming no published port, or a file IbProblems does not derive, is left out.
void AttachIbProblem(const IbProblem& p, NodeFacts* v) {
  const Error e = MakeError(p.message);
  if (p.attribute == "devices") {
    v->ib_class = Fact<std::vector<std::string>>::Unreadable(p.path, e);
    return;
  }
  auto dev = std::find_if(v->ib_devices.begin(), v->ib_devices.end(),
                          [&](const IbDeviceFacts& d) { return d.name == p.device; });
  if (dev == v->ib_devices.end()) {
    dev = v->ib_devices.insert(v->ib_devices.end(), IbDeviceFacts{});
    dev->name = p.device;
  }
  if (p.attribute == "ports") {
    dev->ports = Fact<std::vector<int>>::Unreadable(p.path, e);
    return;
  }
  auto port = std::find_if(v->ib_ports.begin(), v->ib_ports.end(), [&](const IbPort& q) {
    return q.device == p.device && q.port == p.port;
  });
  if (port == v->ib_ports.end()) return;
  IbPortFacts& f = port->sysfs;
  const std::string& a = p.attribute;
  if (a == "state") f.state = Fact<SysfsCodeName>::Unreadable(p.path, e);
  if (a == "phys_state") f.phys_state = Fact<SysfsCodeName>::Unreadable(p.path, e);
  if (a == "rate") f.rate = Fact<double>::Unreadable(p.path, e);
  if (a == "link_layer") f.link_layer = Fact<std::string>::Unreadable(p.path, e);
  if (a == "gids") f.gid_indices = Fact<std::vector<int>>::Unreadable(p.path, e);
  if (a == "netdev_mtu") f.netdev_mtu = Fact<int>::Unreadable(p.path, e);
  if (a.rfind("gids/", 0) == 0) {
    int index = 0;
    auto [end, ec] = std::from_chars(a.data() + 5, a.data() + a.size(), index);
    if (ec == std::errc() && end == a.data() + a.size()) {
      f.gids[index] = Fact<std::string>::Unreadable(p.path, e);
    }
  }
}

// The IB facts of a peer: its devices (those its ports name, and those its rows name first, in
// the order of the rows) and the read errors its "ib_problems" rows carry.
void IbFactsFrom(const nlohmann::json& j, NodeFacts* v) {
  v->ib_class = {};
  v->ib_devices.clear();
  for (const IbProblem& p : j.value("ib_problems", std::vector<IbProblem>{})) AttachIbProblem(p, v);
  for (const IbPort& p : v->ib_ports) {
    auto seen = std::find_if(v->ib_devices.begin(), v->ib_devices.end(),
                             [&](const IbDeviceFacts& d) { return d.name == p.device; });
    if (seen == v->ib_devices.end()) {
      seen = v->ib_devices.insert(v->ib_devices.end(), IbDeviceFacts{});
      seen->name = p.device;
    }
  }
}
}  // namespace

void to_json(nlohmann::json& j, const NodeFacts& v) {
  j = nlohmann::json{{"hostname", v.hostname},
                     {"ib_ports", v.ib_ports},
                     {"gpus", v.gpus},
                     {"nvidia_driver", v.nvidia_driver},
                     {"memlock_soft", LimitJson(v.MemlockSoft())},
                     {"memlock_hard", LimitJson(v.MemlockHard())},
                     {"nofile_soft", LimitJson(v.NofileSoft())},
                     {"nofile_hard", LimitJson(v.NofileHard())},
                     {"shm_bytes", v.ShmBytes() ? nlohmann::json(*v.ShmBytes()) : nlohmann::json()},
                     {"peermem_loaded", v.PeermemLoaded()},
                     {"peermem_module", v.PeermemModule()},
                     {"nvidia_open_kernel", v.nvidia_open_kernel},
                     {"interfaces", v.interfaces}};
  auto problems = nlohmann::json::array();
  for (const auto& p : v.problems) problems.push_back({{"where", p.where}, {"message", p.message}});
  j["problems"] = std::move(problems);
  j["ib_problems"] = IbProblems(v);
}

void from_json(const nlohmann::json& j, NodeFacts& v) {
  v.hostname = j.value("hostname", "");
  v.ib_ports = j.value("ib_ports", std::vector<IbPort>{});
  v.gpus = j.value("gpus", std::vector<GpuInfo>{});
  v.nvidia_driver = j.value("nvidia_driver", "");
  // A peer's facts carry values only: its evidence stayed on its node.
  v.host.memlock = LimitFact(j, "Max locked memory", "memlock_soft", "memlock_hard");
  v.host.nofile = LimitFact(j, "Max open files", "nofile_soft", "nofile_hard");
  if (j.contains("shm_bytes") && j["shm_bytes"].is_number_unsigned()) {
    ShmSize shm;
    shm.bytes = j["shm_bytes"].get<std::uint64_t>();
    v.host.shm = Fact<ShmSize>::Of(shm, "/proc/mounts", "");
  }
  const bool peermem = j.value("peermem_loaded", false);
  v.host.peermem =
      Fact<std::string>::Of(peermem ? j.value("peermem_module", "") : "", "/proc/modules", "");
  v.nvidia_open_kernel = j.value("nvidia_open_kernel", false);
  v.interfaces = j.value("interfaces", std::vector<NetInterface>{});
  v.problems.clear();
  if (j.contains("problems") && j["problems"].is_array()) {
    for (const auto& p : j["problems"]) {
      v.problems.push_back(MakeError(p.value("message", ""), p.value("where", "")));
    }
  }
  IbFactsFrom(j, &v);
}

}  // namespace sl
