#include "diagnose/job_facts.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/json_text.h"
#include "common/strings.h"

namespace sl::diagnose {

namespace {

// Preflight finding codes (the checks' own rows, preflight/checks/*.cpp) that point at a cause.
// A finding in the report of a job that was started anyway (--on-preflight-fail=warn, a waiver)
// is a standing condition, not proof it caused this failure: fail rows carry 0.5-0.7, warn rows
// less. Codes not listed (env.nccl, os.sysctl, ...) name no category of the vocabulary.
constexpr FactCategory kPreflight[] = {
    {"ib.port.state/disabled", "ib_port_down_or_link_flap", 0.7, "the port is disabled"},
    {"ib.port.state/no_link_partner", "ib_port_down_or_link_flap", 0.7,
     "the port has no link partner"},
    {"ib.port.state/no_subnet_manager", "ib_port_down_or_link_flap", 0.65,
     "no subnet manager activated the port"},
    {"ib.port.state/roce_link_down", "ib_port_down_or_link_flap", 0.7, "the RoCE port is down"},
    {"ib.port.state/link_training", "ib_port_down_or_link_flap", 0.6,
     "the port is training or recovering"},
    {"ib.port.state/rate_below_min", "ib_port_down_or_link_flap", 0.45,
     "the port runs below the required rate (degraded link)"},
    {"ib.port.state/rate_below_siblings", "ib_port_down_or_link_flap", 0.35,
     "the port runs slower than its siblings (degraded link)"},
    {"ib.port.errors/nonzero", "ib_port_down_or_link_flap", 0.3,
     "the port's error counters were non-zero at start"},
    {"ib.mtu/roce_mtu_mismatch", "mtu_mismatch", 0.65, "the RoCE netdev MTU is not the expected"},
    {"ib.mtu/roce_mtu_not_jumbo", "mtu_mismatch", 0.3, "the RoCE netdev MTU is below jumbo"},
    {"ib.mtu/ib_mtu_mismatch", "mtu_mismatch", 0.65, "the IB active MTU is not the expected"},
    {"ib.mtu/ib_mtu_below_min", "mtu_mismatch", 0.3, "the IB active MTU is below the minimum"},
    {"ib.mtu/mtus_disagree", "mtu_mismatch", 0.6, "the node's ports have different MTUs"},
    {"ib.gid/gid_index_wrong", "gid_index", 0.7, "NCCL_IB_GID_INDEX names an unusable GID"},
    {"ib.gid/gid_index_no_usable", "gid_index", 0.7, "no usable GID for NCCL_IB_GID_INDEX"},
    {"ib.gid/auto_choice_unusable", "gid_index", 0.65, "NCCL's own GID choice is unusable"},
    {"ib.gid/no_usable_gid", "gid_index", 0.6, "no usable RoCE GID on the port"},
    {"os.memlock/soft_below_min", "memlock", 0.7, "the memlock limit is below the minimum"},
    {"os.memlock/finite", "memlock", 0.2, "the memlock limit is finite"},
    {"os.shm/too_small", "shm_too_small", 0.65, "/dev/shm is below the minimum"},
    {"gpu.inventory/driver_not_loaded", "gpu_xid_or_driver", 0.7,
     "the NVIDIA driver is not loaded"},
    {"gpu.inventory/gpu_missing_from_driver", "gpu_xid_or_driver", 0.7,
     "a GPU on PCI is missing from the driver"},
    {"gpu.gdr/no_gdr_path", "gdr_peermem", 0.5, "IB/RoCE is active without a GPUDirect RDMA path"},
    {"pci.acs/acs_p2p_enabled", "acs_iommu_p2p", 0.4, "ACS is on on a PCIe bridge"},
    {"pci.acs/iommu_translating", "acs_iommu_p2p", 0.3, "the IOMMU translates DMA"},
    {"kernel.log/xid", "gpu_xid_or_driver", 0.6, "the kernel logged an NVIDIA Xid"},
    {"kernel.log/gpu_fell_off_bus", "gpu_xid_or_driver", 0.75, "a GPU fell off the bus"},
    {"kernel.log/link_flap", "ib_port_down_or_link_flap", 0.5, "the kernel saw the link go down"},
    {"kernel.log/mlx5_mr_failure", "memlock", 0.25, "RDMA memory registrations failed"},
    {"net.ifname/ifname_invalid", "socket_ifname_wrong", 0.6, "NCCL_SOCKET_IFNAME is invalid"},
    {"net.ifname/ifname_matches_none", "socket_ifname_wrong", 0.7,
     "NCCL_SOCKET_IFNAME matches no usable interface"},
    {"net.ifname/no_address", "socket_ifname_wrong", 0.6, "no interface has a usable address"},
    {"net.ifname/bootstrap_down", "socket_ifname_wrong", 0.65, "the bootstrap interface is down"},
    {"net.ifname/bootstrap_loopback", "socket_ifname_wrong", 0.7, "the bootstrap uses loopback"},
    {"net.ifname/bootstrap_container_bridge", "socket_ifname_wrong", 0.5,
     "the bootstrap uses a container bridge"},
};

// Warm-up finding codes (warmup/compare.cpp: "<comparison>/differs", the variable's name for
// the environment; warmup/pair_rounds.cpp): a difference names the odd node, which is what a
// job-wide hang does not.
constexpr FactCategory kWarmup[] = {
    {"warmup.consistency.nccl_version/differs", "version_mismatch", 0.8,
     "its NCCL version differs"},
    {"warmup.consistency.torch_version/differs", "version_mismatch", 0.5,
     "its torch version differs"},
    {"warmup.consistency.cuda_driver/differs", "version_mismatch", 0.4,
     "its NVIDIA driver differs"},
    {"warmup.consistency.gpu_count/differs", "gpu_xid_or_driver", 0.5,
     "it has a different GPU count"},
    {"warmup.consistency.hca_count/differs", "ib_port_down_or_link_flap", 0.45,
     "it has a different HCA count"},
    {"warmup.consistency.rate/differs", "ib_port_down_or_link_flap", 0.45, "a port's rate differs"},
    {"warmup.consistency.mtu/differs", "mtu_mismatch", 0.8, "a port's MTU differs"},
    {"warmup.consistency.gid/differs", "gid_index", 0.8, "the RoCE GID NCCL uses differs"},
    {"warmup.consistency.memlock/differs", "memlock", 0.45, "its memlock limit differs"},
    {"warmup.consistency.rendezvous/loopback_across_hosts", "socket_ifname_wrong", 0.5,
     "its rendezvous endpoint is loopback in a job across hosts"},
    {"warmup.bandwidth/slow_node", "ib_port_down_or_link_flap", 0.4,
     "its bus bandwidth was far below the other nodes'"},
    {"warmup.bandwidth.pairs/slow_node", "ib_port_down_or_link_flap", 0.45,
     "it was slow in the pair rounds"},
    {"warmup.consistency.env/NCCL_IB_GID_INDEX", "gid_index", 0.6,
     "NCCL_IB_GID_INDEX differs between nodes"},
    {"warmup.consistency.env/NCCL_IB_ROCE_VERSION_NUM", "gid_index", 0.55,
     "the RoCE version differs"},
    {"warmup.consistency.env/NCCL_IB_ADDR_FAMILY", "gid_index", 0.5,
     "the GID address family differs"},
    {"warmup.consistency.env/NCCL_SOCKET_IFNAME", "socket_ifname_wrong", 0.5,
     "NCCL_SOCKET_IFNAME differs"},
    {"warmup.consistency.env/NCCL_CROSS_NIC", "rail_topology_cross_nic", 0.4,
     "NCCL_CROSS_NIC differs"},
};

// Flight Recorder causes (diagnose/flight_recorder/report.cpp), by the analysis' code.
constexpr FactCategory kFlightRecorder[] = {
    {"fr.desync", "desync_collective_mismatch", 0.9,
     "ranks entered different collectives under one sequence number"},
    {"fr.laggard", "straggler_or_slow_rank", 0.8, "ranks never entered the collective"},
    {"fr.missing_dump", "oom_or_crash_other_rank", 0.6, "ranks wrote no dump while others wait"},
    {"fr.stuck_all", "retry_exceeded_network", 0.5,
     "every rank entered the collective and none completed it"},
    {"fr.one_rank_not_started", "straggler_or_slow_rank", 0.55,
     "a one-rank group's collective never started: its own stream is busy"},
    {"fr.one_rank_started_not_completed", "gpu_xid_or_driver", 0.45,
     "a one-rank group's collective started and never completed"},
    {"fr.one_rank_not_started_gpu", "gpu_xid_or_driver", 0.25,
     "a one-rank group's collective never started: the GPU may be stuck"},
    {"fr.not_started_on_some_gpus", "straggler_or_slow_rank", 0.7,
     "the collective never started on some ranks' GPUs"},
    {"fr.not_started_on_any_gpu", "gpu_xid_or_driver", 0.3,
     "the collective started on no rank's GPU"},
};

// The cross-rank Python stacks' rules (diagnose/stacks_analysis.cpp), for the fit's
// pseudo-observations: their claims name their category themselves.
constexpr FactCategory kStacks[] = {
    {"stacks.main_thread_elsewhere", "straggler_or_slow_rank", 0.75,
     "one rank's main thread is elsewhere than where the others wait"},
    {"stacks.different_collectives", "desync_collective_mismatch", 0.6,
     "ranks wait in different collectives"},
    {"stacks.all_wait_in_same_collective", "retry_exceeded_network", 0.4,
     "every rank waits in the same collective"},
    {"stacks.pasted_main_thread_busy", "straggler_or_slow_rank", 0.45,
     "a pasted stack's main thread is busy outside any collective"},
};

// IB port counters (kernel ib_core counters/ and mlx5 hw_counters/) that grew during the job.
// link_downed is the flap itself; physical-layer errors are the cable/transceiver; discards,
// retransmits and timeouts are packets lost in the fabric.
constexpr FactCategory kCounters[] = {
    {"link_downed", "ib_port_down_or_link_flap", 0.75, "the link went down during the job"},
    {"link_error_recovery", "ib_port_down_or_link_flap", 0.6, "the link retrained during the job"},
    {"symbol_error", "ib_port_down_or_link_flap", 0.5, "symbol errors grew (cable or transceiver)"},
    {"port_rcv_errors", "ib_port_down_or_link_flap", 0.45, "receive errors grew (bad packets)"},
    {"port_rcv_remote_physical_errors", "ib_port_down_or_link_flap", 0.45,
     "remote physical errors grew (a bad link upstream)"},
    {"local_link_integrity_errors", "ib_port_down_or_link_flap", 0.5,
     "link integrity errors grew (cable)"},
    {"excessive_buffer_overrun_errors", "ib_port_down_or_link_flap", 0.4,
     "buffer overruns grew (flow control on the link)"},
    {"port_xmit_discards", "retry_exceeded_network", 0.4, "transmit discards grew (congestion)"},
    {"port_rcv_switch_relay_errors", "retry_exceeded_network", 0.35,
     "switch relay errors grew (routing)"},
    {"local_ack_timeout_err", "retry_exceeded_network", 0.5,
     "ACK timeouts grew: RDMA packets were lost"},
    {"packet_seq_err", "retry_exceeded_network", 0.4, "packet sequence errors grew"},
    {"out_of_sequence", "retry_exceeded_network", 0.4, "out-of-sequence packets grew"},
    {"rnr_nak_retry_err", "retry_exceeded_network", 0.4, "RNR NAK retries exceeded"},
    {"implied_nak_seq_err", "retry_exceeded_network", 0.35, "implied NAKs grew"},
    {"roce_adp_retrans", "retry_exceeded_network", 0.35, "RoCE retransmissions grew"},
    {"out_of_buffer", "qp_or_resource_limit", 0.35, "the HCA ran out of receive buffers"},
};

// Reports come from other users' run roots: a field of the wrong type reads as absent instead of
// throwing (nlohmann's value() throws type_error on a type mismatch).
std::string Str(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}
std::uint64_t UInt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}
bool True(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

const FactCategory* Find(std::span<const FactCategory> table, std::string_view key) {
  for (const FactCategory& row : table) {
    if (row.key == key) return &row;
  }
  return nullptr;
}

// The 1-based line of `value` (as nlohmann writes the string) in `text`, 1 when not found: the
// reports are pretty-printed, so the finding's message sits on a line of its own.
std::uint64_t LineOf(std::string_view text, const std::string& value) {
  if (value.empty()) return 1;
  const std::string quoted = JsonText(nlohmann::json(value), -1);
  const std::size_t at = text.find(quoted);
  if (at == std::string_view::npos) return 1;
  return 1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + at, '\n'));
}

bool LooksLikePort(const std::string& s) { return s.find(':') != std::string::npos; }

// A finding's fact: cited with its JSON pointer and message.
NodeFact FindingFact(std::string_view text, const std::string& file, std::size_t index,
                     const nlohmann::json& f, const FactCategory& row, std::string source,
                     std::string rule) {
  const std::string message = Str(f, "message");
  NodeFact fact;
  fact.source = std::move(source);
  fact.rule = std::move(rule);
  fact.category = std::string(row.category);
  fact.confidence = Str(f, "outcome") == "fail" ? row.confidence : row.confidence * 0.75;
  fact.evidence = {file, LineOf(text, message),
                   fmt::format("/findings/{} {} {}: {}", index,
                               Str(f, "code").empty() ? Str(f, "check") : Str(f, "code"),
                               Str(f, "outcome"), message),
                   ""};
  fact.why = std::string(row.why);
  return fact;
}

std::optional<nlohmann::json> Parse(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// Findings that count: fail and warn, not waived by the user.
bool Counts(const nlohmann::json& f) {
  if (!f.is_object() || True(f, "waived")) return false;
  const std::string o = Str(f, "outcome");
  return o == "fail" || o == "warn";
}

// Node names in a warm-up entity: "node 1 (n2)" -> n2, "node 1" -> "node 1",
// "node 0 (a) <-> node 3 (b)" -> a, b; "job"/"pairs" -> none.
std::vector<std::string> WarmupNodes(const std::string& entity) {
  static const std::regex kNode(R"(node (\d+)(?: \(([^)]*)\))?)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(entity.begin(), entity.end(), kNode), end; it != end; ++it) {
    out.push_back((*it)[2].matched ? (*it)[2].str() : "node " + (*it)[1].str());
  }
  return out;
}

}  // namespace

std::span<const FactCategory> PreflightCategories() { return kPreflight; }
std::span<const FactCategory> WarmupCategories() { return kWarmup; }
std::span<const FactCategory> CounterCategories() { return kCounters; }
std::span<const FactCategory> FlightRecorderCategories() { return kFlightRecorder; }
std::span<const FactCategory> StacksCategories() { return kStacks; }

const FactCategory* FindFactCategory(std::span<const FactCategory> table, std::string_view key) {
  return Find(table, key);
}

std::vector<NodeFact> PreflightFacts(std::string_view text, const std::string& file,
                                     const std::string& node) {
  std::vector<NodeFact> out;
  auto j = Parse(text);
  if (!j || !j->contains("findings") || !(*j)["findings"].is_array()) return out;
  const auto& findings = (*j)["findings"];
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    if (!Counts(f)) continue;
    const std::string code = Str(f, "code");
    const FactCategory* row = Find(kPreflight, code);
    if (row == nullptr) continue;
    NodeFact fact = FindingFact(text, file, i, f, *row, "preflight", code);
    fact.node = node;
    if (const std::string e = Str(f, "entity"); LooksLikePort(e)) fact.port = e;
    out.push_back(std::move(fact));
  }
  return out;
}

std::vector<NodeFact> WarmupFacts(std::string_view text, const std::string& file, int* nnodes) {
  std::vector<NodeFact> out;
  auto j = Parse(text);
  if (!j) return out;
  if (nnodes != nullptr)
    *nnodes = static_cast<int>(std::min<std::uint64_t>(UInt(*j, "nnodes"), 1 << 20));
  if (!j->contains("findings") || !(*j)["findings"].is_array()) return out;
  const auto& findings = (*j)["findings"];
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    if (!Counts(f)) continue;
    // By code; a report from before the codes says only its check: "<check>/differs" for a
    // comparison of one attribute (the environment's need the variable, in the code).
    std::string key = Str(f, "code");
    const std::string check = Str(f, "check");
    if (key.empty() && check.rfind("warmup.consistency.", 0) == 0 &&
        check != "warmup.consistency.env") {
      key = check + "/differs";
    }
    const std::string message = Str(f, "message");
    const FactCategory* row = Find(kWarmup, key);
    if (row == nullptr) continue;
    // "the MTU of mlx5_0:1 is 1024 on ...": the port, when the comparison is per port.
    static const std::regex kPort(R"(of (\S+:\d+) is )");
    std::smatch pm;
    std::string port = std::regex_search(message, pm, kPort) ? pm[1].str() : "";
    for (const std::string& node : WarmupNodes(Str(f, "entity"))) {
      NodeFact fact = FindingFact(text, file, i, f, *row, "warmup", key);
      fact.node = node;
      fact.port = port;
      out.push_back(std::move(fact));
    }
  }
  return out;
}

std::vector<NodeFact> CounterFacts(std::string_view text, const std::string& file,
                                   const std::string& node) {
  std::vector<NodeFact> out;
  auto j = Parse(text);
  if (!j || !j->contains("error_deltas") || !(*j)["error_deltas"].is_array()) return out;
  const auto& deltas = (*j)["error_deltas"];
  for (std::size_t i = 0; i < deltas.size(); ++i) {
    const auto& d = deltas[i];
    if (!d.is_object()) continue;
    const std::string counter = Str(d, "counter");
    const FactCategory* row = Find(kCounters, counter);
    const std::uint64_t delta = UInt(d, "delta");
    if (row == nullptr || delta == 0) continue;
    NodeFact fact;
    fact.source = "ib_counters";
    fact.rule = counter;
    fact.category = std::string(row->category);
    fact.confidence = row->confidence;
    fact.node = node;
    fact.port = Str(d, "port");
    fact.evidence = {file, LineOf(text, counter),
                     fmt::format("/error_deltas/{} {} {} +{}", i, fact.port, counter, delta), ""};
    fact.why = std::string(row->why);
    out.push_back(std::move(fact));
  }
  return out;
}

std::string NodesText(const std::vector<std::string>& seen, std::size_t job_nodes) {
  std::set<std::string> uniq(seen.begin(), seen.end());
  job_nodes = std::max(job_nodes, uniq.size());
  if (job_nodes <= 1) return uniq.empty() ? "" : *uniq.begin();
  if (uniq.size() == job_nodes) return fmt::format("all {} nodes", job_nodes);
  std::string names;
  std::size_t k = 0;
  for (const std::string& n : uniq) {
    if (k++ == 4) {
      names += ", ...";
      break;
    }
    names += (names.empty() ? "" : ", ") + n;
  }
  return fmt::format("{}{} ({} of {} nodes)", names, uniq.size() == 1 ? " only" : "", uniq.size(),
                     job_nodes);
}

std::vector<CauseClaim> JoinFacts(const std::vector<NodeFact>& facts, std::size_t job_nodes) {
  struct Group {
    std::vector<const NodeFact*> facts;
    std::vector<std::string> nodes;
    std::set<std::string> ports, seen;
  };
  // By source and rule: the same fact on several nodes is one claim.
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  for (const NodeFact& f : facts) {
    const std::string key = f.source + ":" + f.rule;
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    Group& g = it->second;
    // A bundle's run/preflight.json repeats the run directory's: the same text on the same node.
    if (!g.seen.insert(f.node + "|" + f.port + "|" + f.evidence.text).second) continue;
    g.facts.push_back(&f);
    g.nodes.push_back(f.node);
    if (!f.port.empty()) g.ports.insert(f.port);
  }
  std::vector<CauseClaim> out;
  for (const std::string& key : order) {
    const Group& g = groups[key];
    CauseClaim c;
    c.source = g.facts.front()->source;
    c.rule = g.facts.front()->rule;
    c.category = g.facts.front()->category;
    std::set<std::string> cited_nodes;
    for (const NodeFact* f : g.facts) {
      c.confidence = std::max(c.confidence, f->confidence);
      if (c.evidence.size() < 12 && (cited_nodes.insert(f->node).second || g.nodes.size() == 1)) {
        c.evidence.push_back(f->evidence);
      }
    }
    c.entity.node = NodesText(g.nodes, job_nodes);
    for (const std::string& p : g.ports) c.entity.port += (c.entity.port.empty() ? "" : ", ") + p;
    c.why = fmt::format("{}: {} on {}.", c.source, g.facts.front()->why, c.entity.node);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CauseClaim> JobFacts::Claims() const { return JoinFacts(facts, job_nodes); }

namespace {

std::string JoinPath(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Reports are small; a few MiB bounds a corrupt or hostile file.
constexpr std::size_t kMaxReport = 8u << 20;

void ReadBundle(const std::string& dir, const std::string& node, const FileReader& fs,
                JobFacts* out) {
  out->node_of_dir[dir] = node;
  const std::string counters = JoinPath(dir, "node/ib_counters.json");
  if (auto t = fs.ReadFile(counters, kMaxReport); t.ok()) {
    for (auto& f : CounterFacts(*t, counters, node)) out->facts.push_back(std::move(f));
  }
  const std::string preflight = JoinPath(dir, "run/preflight.json");
  if (auto t = fs.ReadFile(preflight, kMaxReport); t.ok()) {
    for (auto& f : PreflightFacts(*t, preflight, node)) out->facts.push_back(std::move(f));
  }
}

std::string ManifestHost(const std::string& dir, const FileReader& fs) {
  auto t = fs.ReadFile(JoinPath(dir, "manifest.json"), kMaxReport);
  if (!t.ok()) return "";
  auto j = nlohmann::json::parse(*t, nullptr, false);
  if (!j.is_object() || !j.contains("host") || !j["host"].is_string()) return "";
  return j["host"].get<std::string>();
}

// A node run directory: its name is the node (one directory per host and step, see the
// manual's "Run directory"); its bundles are children holding manifest.json.
void ReadRunDir(const std::string& dir, const FileReader& fs, JobFacts* out, int* nnodes) {
  const std::string node = PathLeaf(dir);
  out->nodes.push_back(node);
  out->node_of_dir[dir] = node;
  const std::string preflight = JoinPath(dir, "preflight.json");
  if (auto t = fs.ReadFile(preflight, kMaxReport); t.ok()) {
    for (auto& f : PreflightFacts(*t, preflight, node)) out->facts.push_back(std::move(f));
  }
  const std::string warmup = JoinPath(dir, "warmup.json");
  if (auto t = fs.ReadFile(warmup, kMaxReport); t.ok()) {
    int n = 0;
    for (auto& f : WarmupFacts(*t, warmup, &n)) out->facts.push_back(std::move(f));
    *nnodes = std::max(*nnodes, n);
  }
  auto children = fs.ListDir(dir);
  if (!children.ok()) return;
  for (const std::string& c : *children) {
    const std::string sub = JoinPath(dir, c);
    if (c.empty() || c[0] == '.' || !fs.IsDir(sub) || !fs.Exists(JoinPath(sub, "manifest.json"))) {
      continue;
    }
    ReadBundle(sub, node, fs, out);
  }
}

void Walk(const std::string& dir, int depth, const FileReader& fs, JobFacts* out, int* nnodes) {
  if (fs.Exists(JoinPath(dir, "status.json"))) return ReadRunDir(dir, fs, out, nnodes);
  if (fs.Exists(JoinPath(dir, "manifest.json"))) {
    std::string host = ManifestHost(dir, fs);
    if (host.empty()) host = PathLeaf(dir);
    if (std::find(out->nodes.begin(), out->nodes.end(), host) == out->nodes.end()) {
      out->nodes.push_back(host);
    }
    return ReadBundle(dir, host, fs, out);
  }
  if (depth == 0) return;
  auto children = fs.ListDir(dir);
  if (!children.ok()) return;
  for (const std::string& c : *children) {
    const std::string sub = JoinPath(dir, c);
    if (!c.empty() && c[0] != '.' && fs.IsDir(sub)) Walk(sub, depth - 1, fs, out, nnodes);
  }
}

}  // namespace

JobFacts ReadJobFacts(const std::vector<std::string>& inputs, const FileReader& fs) {
  JobFacts out;
  int nnodes = 0;
  for (const std::string& in : inputs) {
    if (in != "-" && fs.IsDir(in)) Walk(in, 3, fs, &out, &nnodes);
  }
  // The warm-up's node count covers nodes whose run directories are not among the inputs.
  out.job_nodes = std::max(out.nodes.size(), static_cast<std::size_t>(std::max(nnodes, 0)));
  std::sort(out.nodes.begin(), out.nodes.end());
  return out;
}

std::string NodeOfFile(const std::map<std::string, std::string>& node_of_dir,
                       std::string_view file) {
  std::string best_dir, best;
  for (const auto& [dir, node] : node_of_dir) {
    if (file.size() > dir.size() && file.substr(0, dir.size()) == dir &&
        (dir.back() == '/' || file[dir.size()] == '/') && dir.size() > best_dir.size()) {
      best_dir = dir;
      best = node;
    }
  }
  return best;
}

bool IsRunRoot(const std::string& dir, const FileReader& fs) {
  auto children = fs.ListDir(dir);
  if (!children.ok() || fs.Exists(JoinPath(dir, "status.json"))) return false;
  for (const std::string& c : *children) {
    const std::string sub = JoinPath(dir, c);
    if (fs.IsDir(sub) && fs.Exists(JoinPath(sub, "status.json"))) return true;
  }
  return false;
}

}  // namespace sl::diagnose
