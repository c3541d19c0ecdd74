#include "warmup/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/strings.h"
#include "nccl/gid.h"
#include "nccl/registry.h"

namespace sl::warmup {
namespace {

// How a difference is judged: the outcome, whether values are ordered (a tie then names the
// lower side as the degraded one) and the next step.
struct Attribute {
  std::string check_id;
  std::string what;  // "MTU of mlx5_0:1"
  Outcome outcome;
  bool ordered;  // values are numbers where lower is worse
  std::string next_step;
  std::string code = {};  // the finding's code; "" = "<check_id>/differs"
};

// node index -> value; nullopt: the node has no such thing (e.g. a port it lacks) -> not compared.
using Values = std::vector<std::optional<std::string>>;

std::string Plural(std::size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

double NumericPrefix(const std::string& s) {
  if (s == "unlimited") return HUGE_VAL;
  try {
    return std::stod(s);
  } catch (...) {
    return 0;
  }
}

void Compare(const std::vector<NodeReport>& nodes, const Attribute& a, const Values& values,
             std::vector<Finding>* out) {
  std::map<std::string, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (values[i]) groups[*values[i]].push_back(i);
  if (groups.size() < 2) return;
  // Reference = the majority; among equal-sized groups the better value (ordered attributes)
  // or the group holding the lowest node rank.
  auto better = [&](const auto& x, const auto& y) {  // is x a better reference than y?
    if (x.second.size() != y.second.size()) return x.second.size() > y.second.size();
    if (a.ordered) {
      double vx = NumericPrefix(x.first), vy = NumericPrefix(y.first);
      if (vx != vy) return vx > vy;
    }
    return nodes[x.second.front()].node_rank < nodes[y.second.front()].node_rank;
  };
  auto ref = groups.begin();
  for (auto it = groups.begin(); it != groups.end(); ++it)
    if (better(*it, *ref)) ref = it;
  std::string ref_labels;
  for (std::size_t k = 0; k < ref->second.size() && k < 3; ++k)
    ref_labels += (k ? ", " : "") + nodes[ref->second[k]].Label();
  if (ref->second.size() > 3) ref_labels += ", ...";
  for (const auto& [value, members] : groups) {
    if (&value == &ref->first) continue;
    std::string labels;
    for (std::size_t k = 0; k < members.size(); ++k)
      labels += (k ? ", " : "") + nodes[members[k]].Label();
    Finding f;
    f.check_id = a.check_id;
    // The code the diagnosis maps to a cause (diagnose/job_facts.cpp), never the message.
    f.code = a.code.empty() ? a.check_id + "/differs" : a.code;
    f.entity = labels;
    f.outcome = a.outcome;
    f.message = fmt::format("{} is {} on {} but {} on {} ({})", a.what, value, labels, ref->first,
                            Plural(ref->second.size(), "other node"), ref_labels);
    f.next_step = a.next_step;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (values[i]) f.With(nodes[i].Label(), *values[i]);
    out->push_back(std::move(f));
  }
}

std::string LimitText(std::uint64_t v) {
  if (v == kUnlimited) return "unlimited";
  return std::to_string(v);
}

std::string GpuModels(const NodeFacts& f) {
  std::set<std::string> models;
  for (const auto& g : f.gpus) models.insert(g.model.empty() ? "device " + g.device_id : g.model);
  std::string s;
  for (const auto& m : models) s += (s.empty() ? "" : " + ") + m;
  return s.empty() ? "(none)" : s;
}

// Index NCCL will use on a RoCE port: NCCL_IB_GID_INDEX when set, else its own choice.
std::string GidChoice(const IbPort& port, const Environment& env) {
  const nccl::GidChoice forced = nccl::SimulateGidIndex(port, env);
  std::optional<int> index =
      forced.from_env ? std::optional<int>(forced.index) : nccl::SelectGidIndex(port, env);
  if (!index) return "none usable";
  std::string type = "?";
  for (const auto& g : port.gids)
    if (g.index == *index) type = g.type.empty() ? "unknown type" : g.type;
  return std::to_string(*index) + " (" + type + ")";
}

}  // namespace

std::string NodeReport::Label() const {
  std::string l = "node " + std::to_string(node_rank);
  if (!node_name.empty()) l += " (" + node_name + ")";
  return l;
}

void to_json(nlohmann::json& j, const NodeReport& r) {
  j = nlohmann::json{
      {"node_rank", r.node_rank},         {"node_name", r.node_name},       {"facts", r.facts},
      {"torch_version", r.torch_version}, {"nccl_version", r.nccl_version}, {"env", r.env}};
  if (!r.rendezvous.source.empty())
    j["rendezvous"] = {{"host", r.rendezvous.host},
                       {"port", r.rendezvous.port},
                       {"source", r.rendezvous.source},
                       {"addresses", r.rendezvous.addresses}};
}

void from_json(const nlohmann::json& j, NodeReport& r) {
  r.node_rank = j.value("node_rank", 0);
  r.node_name = j.value("node_name", "");
  if (j.contains("facts")) r.facts = j.at("facts").get<NodeFacts>();
  r.torch_version = j.value("torch_version", "");
  r.nccl_version = j.value("nccl_version", "");
  r.env.clear();
  if (j.contains("env") && j.at("env").is_object())
    for (const auto& [k, v] : j.at("env").items())
      if (v.is_string()) r.env[k] = v.get<std::string>();
  r.rendezvous = {};
  if (j.contains("rendezvous") && j.at("rendezvous").is_object()) {
    const auto& e = j.at("rendezvous");
    r.rendezvous.host = e.value("host", "");
    r.rendezvous.port = e.value("port", 0);
    r.rendezvous.source = e.value("source", "");
    if (e.contains("addresses") && e.at("addresses").is_array())
      for (const auto& a : e.at("addresses"))
        if (a.is_string()) r.rendezvous.addresses.push_back(a.get<std::string>());
  }
}

Environment ComparableEnvironment(const Environment& env) {
  Environment out;
  for (const auto& [k, v] : env) {
    if (!StartsWith(k, "NCCL_") && !StartsWith(k, "TORCH_")) continue;
    if (nccl::VariableScope(k) == nccl::Scope::kPerHost) continue;
    out[k] = v;
  }
  return out;
}

namespace {

// Applies `value_of` to every node: the values one comparison sees.
template <typename Fn>
Values Each(const std::vector<NodeReport>& nodes, Fn value_of) {
  Values v(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) v[i] = value_of(nodes[i]);
  return v;
}

const char kSameSoftware[] =
    "install the same software on every node (same container image / module set) and rerun";

void CompareNcclVersion(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(
      nodes,
      {"warmup.consistency.nccl_version", "the NCCL version the job will load", Outcome::kFail,
       false,
       std::string("nodes with different NCCL versions can disagree on the wire protocol and "
                   "hang: ") +
           kSameSoftware},
      Each(nodes,
           [](const NodeReport& r) {
             return std::optional<std::string>(r.nccl_version.empty() ? "(none)" : r.nccl_version);
           }),
      out);
}

void CompareTorchVersion(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(nodes,
          {"warmup.consistency.torch_version", "the torch version", Outcome::kWarn, false,
           kSameSoftware},
          Each(nodes,
               [](const NodeReport& r) {
                 return std::optional<std::string>(r.torch_version.empty() ? "(unknown)"
                                                                           : r.torch_version);
               }),
          out);
}

void CompareCudaDriver(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(nodes,
          {"warmup.consistency.cuda_driver", "the NVIDIA driver", Outcome::kWarn, false,
           "install the same NVIDIA driver on every node (drain the odd node until it matches)"},
          Each(nodes,
               [](const NodeReport& r) {
                 return std::optional<std::string>(
                     r.facts.nvidia_driver.empty() ? "(none)" : r.facts.nvidia_driver);
               }),
          out);
}

void CompareGpuModel(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(nodes,
          {"warmup.consistency.gpu_model", "the GPU model", Outcome::kFail, false,
           "schedule the job on identical nodes (Slurm --constraint / partition)"},
          Each(nodes,
               [](const NodeReport& r) { return std::optional<std::string>(GpuModels(r.facts)); }),
          out);
}

void CompareGpuCount(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(nodes,
          {"warmup.consistency.gpu_count", "the GPU count", Outcome::kFail, true,
           "a GPU is missing or fell off the bus on the odd node: check nvidia-smi and dmesg "
           "there, drain it"},
          Each(nodes,
               [](const NodeReport& r) {
                 return std::optional<std::string>(std::to_string(r.facts.gpus.size()));
               }),
          out);
}

void CompareHcaCount(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(nodes,
          {"warmup.consistency.hca_count", "the HCA count", Outcome::kFail, true,
           "an HCA is missing on the odd node (driver not loaded, card failed): check "
           "ibv_devinfo and dmesg there, or drain it"},
          Each(nodes,
               [](const NodeReport& r) {
                 std::set<std::string> devices;
                 for (const auto& p : r.facts.ib_ports) devices.insert(p.device);
                 return std::optional<std::string>(std::to_string(devices.size()));
               }),
          out);
}

const IbPort* PortOf(const NodeReport& r, const std::string& name) {
  for (const auto& p : r.facts.ib_ports)
    if (p.Name() == name) return &p;
  return nullptr;
}

// Ports are compared by name ("mlx5_0:1") over the nodes that have them: `value_of(port, node)`
// gives the value, nullopt where the node lacks the port or the value.
template <typename Fn>
void ComparePorts(const std::vector<NodeReport>& nodes, const std::string& check_id,
                  const std::string& what, Outcome outcome, bool ordered,
                  const std::string& next_step, Fn value_of, std::vector<Finding>* out) {
  std::set<std::string> port_names;
  for (const auto& r : nodes)
    for (const auto& p : r.facts.ib_ports) port_names.insert(p.Name());
  for (const auto& name : port_names) {
    Compare(nodes, {check_id, what + name, outcome, ordered, next_step},
            Each(nodes,
                 [&](const NodeReport& r) -> std::optional<std::string> {
                   const IbPort* p = PortOf(r, name);
                   if (!p) return std::nullopt;
                   return value_of(*p, r);
                 }),
            out);
  }
}

void CompareLinkLayer(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  ComparePorts(
      nodes, "warmup.consistency.link_layer", "the link layer of ", Outcome::kFail, false,
      "all nodes must use the same fabric type (InfiniBand or RoCE) on this port: fix the "
      "port's mode (mlxconfig LINK_TYPE_P1) or exclude it with NCCL_IB_HCA",
      [](const IbPort& p, const NodeReport&) -> std::optional<std::string> {
        if (p.link_layer.empty()) return std::nullopt;
        return p.link_layer;
      },
      out);
}

void CompareRate(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  ComparePorts(
      nodes, "warmup.consistency.rate", "the link rate (Gb/s) of ", Outcome::kWarn, true,
      "the slow port limits every collective: reseat/replace the cable or transceiver, or "
      "check the switch port speed",
      [](const IbPort& p, const NodeReport&) -> std::optional<std::string> {
        if (p.rate_gbps <= 0) return std::nullopt;
        return fmt::format("{:g}", p.rate_gbps);
      },
      out);
}

void CompareMtu(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  ComparePorts(
      nodes, "warmup.consistency.mtu", "the MTU of ", Outcome::kFail, true,
      "set the same MTU on every node's interface (RoCE: ip link set dev <netdev> mtu "
      "9000, and on the switch ports); a mismatch drops large packets and hangs NCCL",
      [](const IbPort& p, const NodeReport&) -> std::optional<std::string> {
        int mtu = p.IsRoce() ? p.netdev_mtu : p.active_mtu;
        if (mtu <= 0) return std::nullopt;
        return std::to_string(mtu);
      },
      out);
}

void CompareGid(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  ComparePorts(
      nodes, "warmup.consistency.gid", "the RoCE GID index NCCL will use on ", Outcome::kFail,
      false,
      "nodes must use the same GID type (RoCE v2) and address family: check show_gids on "
      "the odd node (address missing on the netdev?) or set NCCL_IB_GID_INDEX",
      [](const IbPort& p, const NodeReport& r) -> std::optional<std::string> {
        if (!p.IsRoce()) return std::nullopt;
        return GidChoice(p, r.env);
      },
      out);
}

void CompareMemlock(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(nodes,
          {"warmup.consistency.memlock", "the memlock limit (bytes, soft)", Outcome::kWarn, true,
           "set 'memlock unlimited' for the job on every node (slurm.conf PropagateResourceLimits, "
           "/etc/security/limits.d)"},
          Each(nodes,
               [](const NodeReport& r) {
                 return std::optional<std::string>(LimitText(r.facts.MemlockSoft()));
               }),
          out);
}

void CompareNofile(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  Compare(nodes,
          {"warmup.consistency.nofile", "the open-files limit (soft)", Outcome::kWarn, true,
           "set the same nofile limit on every node (ulimit -n / limits.d)"},
          Each(nodes,
               [](const NodeReport& r) {
                 return std::optional<std::string>(LimitText(r.facts.NofileSoft()));
               }),
          out);
}

// A variable set on some nodes only counts as "(unset)" on the others.
void CompareEnv(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  std::vector<Environment> envs;
  std::set<std::string> names;
  for (const auto& r : nodes) {
    envs.push_back(ComparableEnvironment(r.env));
    for (const auto& [k, v] : envs.back()) names.insert(k);
  }
  for (const auto& name : names) {
    Values v(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      auto it = envs[i].find(name);
      v[i] = it == envs[i].end() ? std::string("(unset)") : "'" + it->second + "'";
    }
    // A must-match difference makes nodes speak different protocols or transports.
    bool must = nccl::VariableScope(name) == nccl::Scope::kMustMatch;
    Compare(nodes,
            {"warmup.consistency.env", name, must ? Outcome::kFail : Outcome::kWarn, false,
             "export the same " + name +
                 " on every node (set it in the job script, not in a node's profile)",
             "warmup.consistency.env/" + name},
            v, out);
  }
}

bool IsLoopbackAddress(const std::string& a) {
  return StartsWith(a, "127.") || a == "::1" || StartsWith(a, "::ffff:127.");
}

// "'gpu01:29400' (from torchrun --rdzv-endpoint, resolves to 10.0.0.1)".
std::string EndpointText(const RendezvousEndpoint& e) {
  if (e.host.empty()) return "no endpoint (no --rdzv-endpoint, --master-addr or MASTER_ADDR)";
  std::string addrs;
  for (const auto& a : e.addresses) addrs += (addrs.empty() ? "" : ", ") + a;
  const bool v6 = e.host.find(':') != std::string::npos;
  return fmt::format("'{}{}{}:{}' (from {}{})", v6 ? "[" : "", e.host, v6 ? "]" : "", e.port,
                     e.source, addrs.empty() ? "" : ", resolves to " + addrs);
}

// Same endpoint: same port, and the same place (a common address, or the same unresolved text).
bool SameEndpoint(const RendezvousEndpoint& a, const RendezvousEndpoint& b) {
  if (a.host.empty() || b.host.empty()) return a.host.empty() && b.host.empty();
  if (a.port != b.port) return false;
  if (a.addresses.empty() || b.addresses.empty()) return a.host == b.host;
  return std::any_of(a.addresses.begin(), a.addresses.end(), [&](const std::string& x) {
    return std::find(b.addresses.begin(), b.addresses.end(), x) != b.addresses.end();
  });
}

// Loopback is right only when every node runs on one host: otherwise each node's torchrun meets
// only itself (Debian's /etc/hosts maps the host name to 127.0.1.1).
void CompareRendezvousLoopback(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  std::set<std::string> hosts;
  std::string loop;
  for (const auto& n : nodes) {
    hosts.insert(n.facts.hostname);
    const auto& a = n.rendezvous.addresses;
    if (!a.empty() && std::all_of(a.begin(), a.end(), IsLoopbackAddress))
      loop += (loop.empty() ? "" : ", ") + n.Label();
  }
  if (loop.empty() || hosts.size() < 2) return;
  Finding f;
  f.check_id = "warmup.consistency.rendezvous";
  f.code = "warmup.consistency.rendezvous/loopback_across_hosts";
  f.entity = loop;
  f.outcome = Outcome::kFail;
  f.message = fmt::format(
      "the rendezvous endpoint is loopback on {} in a job on {} hosts: each node's torchrun would "
      "wait for a rendezvous of its own",
      loop, hosts.size());
  f.next_step =
      "give torchrun node 0's address or a name that resolves to it on the network "
      "(--rdzv-endpoint / MASTER_ADDR), not localhost or a name /etc/hosts maps to 127.0.1.1";
  for (const auto& n : nodes) f.With(n.Label(), EndpointText(n.rendezvous));
  out->push_back(std::move(f));
}

// Every node's endpoint against node 0's (it hosts torchrun's store): a node whose endpoint is
// elsewhere waits for a rendezvous nobody hosts, and torchrun says so only at its timeout.
void CompareRendezvous(const std::vector<NodeReport>& nodes, std::vector<Finding>* out) {
  auto ref = std::min_element(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    return a.node_rank < b.node_rank;
  });
  if (ref == nodes.end() || ref->rendezvous.source.empty()) return;
  const RendezvousEndpoint& r = ref->rendezvous;
  for (const auto& n : nodes) {
    const RendezvousEndpoint& e = n.rendezvous;
    if (&n == &*ref || e.source.empty() || SameEndpoint(e, r)) continue;
    Finding f;
    f.check_id = "warmup.consistency.rendezvous";
    f.code = "warmup.consistency.rendezvous/endpoint_differs";
    f.entity = n.Label();
    f.outcome = Outcome::kFail;
    if (e.host == r.host && e.port == r.port) {
      f.message =
          fmt::format("the rendezvous endpoint resolves elsewhere on {}: {} there, {} on {}",
                      n.Label(), EndpointText(e), EndpointText(r), ref->Label());
      f.next_step = fmt::format(
          "make '{}' resolve to node 0's address on {} (DNS, /etc/hosts), or give torchrun node "
          "0's address",
          e.host, n.Label());
    } else {
      f.message = fmt::format(
          "{} gives torchrun the rendezvous endpoint {} but {} gives {}: its ranks would wait "
          "for a rendezvous nobody hosts",
          n.Label(), EndpointText(e), ref->Label(), EndpointText(r));
      f.next_step =
          "give every node node 0's endpoint: compute it once for the job (e.g. MASTER_ADDR="
          "$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)), not per node "
          "($(hostname)), and the same --rdzv-endpoint/--master-port everywhere";
    }
    f.With(ref->Label(), EndpointText(r)).With(n.Label(), EndpointText(e));
    out->push_back(std::move(f));
  }
  CompareRendezvousLoopback(nodes, out);
}

// The comparisons, in the order they run and print; ids are stable (--waive, --list, JSON).
constexpr ComparisonInfo kComparisons[] = {
    {"warmup.consistency.nccl_version", "every node loads the same NCCL version",
     CompareNcclVersion},
    {"warmup.consistency.torch_version", "every node runs the same torch version",
     CompareTorchVersion},
    {"warmup.consistency.cuda_driver", "every node has the same NVIDIA driver", CompareCudaDriver},
    {"warmup.consistency.gpu_model", "every node has the same GPU model", CompareGpuModel},
    {"warmup.consistency.gpu_count", "every node has the same number of GPUs", CompareGpuCount},
    {"warmup.consistency.hca_count", "every node has the same number of HCAs", CompareHcaCount},
    {"warmup.consistency.link_layer", "each port has the same link layer (IB/RoCE) everywhere",
     CompareLinkLayer},
    {"warmup.consistency.rate", "each port has the same link rate everywhere", CompareRate},
    {"warmup.consistency.mtu", "each port has the same MTU everywhere", CompareMtu},
    {"warmup.consistency.gid", "NCCL picks the same RoCE GID type on each port everywhere",
     CompareGid},
    {"warmup.consistency.memlock", "every node has the same memlock limit", CompareMemlock},
    {"warmup.consistency.nofile", "every node has the same open-files limit", CompareNofile},
    {"warmup.consistency.env", "NCCL_*/TORCH_* variables agree across nodes", CompareEnv},
    {"warmup.consistency.rendezvous",
     "every node gives torchrun node 0's rendezvous endpoint, not loopback across hosts",
     CompareRendezvous},
};

}  // namespace

std::span<const ComparisonInfo> Comparisons() { return kComparisons; }

std::vector<Finding> CompareNodes(const std::vector<NodeReport>& nodes,
                                  const std::vector<std::string>& waive) {
  if (nodes.size() < 2) {
    Finding f;
    f.check_id = "warmup.consistency";
    f.entity = "job";
    f.outcome = Outcome::kSkip;
    f.message = "single-node job: nothing to compare across nodes";
    return {f};
  }
  std::vector<Finding> out;
  for (const auto& c : kComparisons) {
    const std::size_t first = out.size();
    c.run(nodes, &out);
    const bool waived =
        std::any_of(waive.begin(), waive.end(), [&](const auto& w) { return IdSelects(w, c.id); });
    for (std::size_t i = first; i < out.size(); ++i)
      out[i].waived = waived && out[i].outcome != Outcome::kPass;
  }
  if (out.empty()) {
    Finding f;
    f.check_id = "warmup.consistency";
    f.entity = "job";
    f.outcome = Outcome::kPass;
    f.message = fmt::format(
        "{} nodes agree on NCCL/torch versions, driver, GPUs, HCAs, ports, GIDs, limits, "
        "NCCL_*/TORCH_* environment and rendezvous endpoint",
        nodes.size());
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> CompareBandwidth(const std::vector<NodeBandwidth>& nodes, double ratio) {
  std::vector<Finding> out;
  if (nodes.size() < 2) return out;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<double> others;
    for (std::size_t k = 0; k < nodes.size(); ++k)
      if (k != i) others.push_back(nodes[k].busbw_gbps);
    double ref = median(others);
    if (ref > 0 && nodes[i].busbw_gbps < ratio * ref) {
      Finding f;
      f.check_id = "warmup.bandwidth";
      f.code = "warmup.bandwidth/slow_node";
      f.entity = nodes[i].label;
      f.outcome = Outcome::kWarn;
      f.message = fmt::format(
          "{} reached {:.2f} GB/s bus bandwidth, {:.0f}% of the other nodes' median {:.2f} GB/s",
          nodes[i].label, nodes[i].busbw_gbps, 100.0 * nodes[i].busbw_gbps / ref, ref);
      f.next_step =
          "check that node's port rate, PCIe link (lspci -vv LnkSta), error counters and "
          "NCCL_IB_HCA; run `safe-launch preflight` there";
      for (const auto& nb : nodes) f.With(nb.label, fmt::format("{:.2f} GB/s", nb.busbw_gbps));
      out.push_back(std::move(f));
    }
  }
  if (out.empty()) {
    Finding f;
    f.check_id = "warmup.bandwidth";
    f.entity = "job";
    f.outcome = Outcome::kPass;
    f.message = fmt::format("no node below {:.0f}% of the others' bus bandwidth", ratio * 100);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace sl::warmup
