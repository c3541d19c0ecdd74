#include "warmup/bandwidth.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "nccl/ports.h"

namespace sl::warmup {

namespace {

// Data bits per signalled bit: the kernel's rate string names the signalling rate up to FDR
// ("40 Gb/sec (4X QDR)" carries 32 Gb/s of data with 8b/10b; FDR 56 with 64b/66b); from EDR on
// it names the data rate. Ethernet speeds are data rates.
double EncodingEfficiency(const IbPort& p) {
  if (p.IsRoce()) return 1.0;
  const std::string& t = p.rate_text;
  for (const char* old : {"SDR", "DDR", "QDR"})
    if (t.find(old) != std::string::npos) return 0.8;
  if (t.find("FDR") != std::string::npos) return 64.0 / 66.0;
  return 1.0;
}

// Payload bytes per packet: the active MTU when known; for RoCE the largest IB MTU that fits
// the netdev MTU less the RoCE v2 headers (9000 -> 4096, 1500 -> 1024).
int PayloadMtu(const IbPort& p) {
  if (p.active_mtu > 0) return p.active_mtu;
  if (!p.IsRoce() || p.netdev_mtu <= 0) return 4096;
  for (int m : {4096, 2048, 1024, 512, 256})
    if (m <= p.netdev_mtu - 58) return m;
  return 256;
}

// Per-packet bytes on the wire beside the payload: InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2;
// RoCE v2 Ethernet 14 + FCS 4 + preamble/gap 20 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4.
constexpr int kIbHeaderBytes = 26;
constexpr int kRoceHeaderBytes = 82;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string RateText(double gbps) { return fmt::format("{:g} Gb/s", gbps); }

}  // namespace

NodeExpectation ExpectNode(const NodeReport& node, int ranks_per_node, const std::string& backend) {
  NodeExpectation e;
  e.node_rank = node.node_rank;
  e.label = node.Label();
  e.gpus = !node.facts.gpus.empty();
  e.gdr = node.facts.PeermemLoaded() || node.facts.nvidia_open_kernel;
  if (backend == "gloo") {
    e.transport = "gloo";
    e.model = "gloo runs over TCP sockets: no line-rate model";
    return e;
  }
  nccl::PortSelection selection(node.env);
  std::vector<const IbPort*> used;
  for (const auto& p : node.facts.ib_ports)
    if (p.IsUp() && selection.Uses(p)) used.push_back(&p);
  e.ports = static_cast<int>(used.size());
  if (used.empty()) {
    e.transport = "socket";
    e.model = "no active RDMA port NCCL will use (" + selection.Describe() +
              "): NCCL falls back to sockets";
    return e;
  }
  const IbPort* slowest = *std::min_element(used.begin(), used.end(), [](auto* a, auto* b) {
    return a->rate_gbps * EncodingEfficiency(*a) < b->rate_gbps * EncodingEfficiency(*b);
  });
  e.transport = slowest->IsRoce() ? "RoCE" : "InfiniBand";
  e.rings = std::max(1, std::min(e.ports, std::max(ranks_per_node, 1)));
  e.port_gbps = slowest->rate_gbps;
  e.data_gbps = slowest->rate_gbps * EncodingEfficiency(*slowest);
  e.mtu = PayloadMtu(*slowest);
  const int headers = slowest->IsRoce() ? kRoceHeaderBytes : kIbHeaderBytes;
  const double efficiency = static_cast<double>(e.mtu) / (e.mtu + headers);
  e.busbw_gbps = e.rings * e.data_gbps / 8.0 * efficiency;
  e.model = fmt::format("{} x {} {} (data {}) x {:.3f} ({} B MTU headers) = {:.1f} GB/s", e.rings,
                        RateText(e.port_gbps), e.transport, RateText(e.data_gbps), efficiency,
                        e.mtu, e.busbw_gbps);
  return e;
}

namespace {

// Why this node falls short of the job's typical node, from its facts; "" when nothing does.
std::string SuspectCause(const NodeExpectation& e, const std::vector<NodeExpectation>& all,
                         double expected) {
  std::vector<int> rings;
  std::vector<double> rates;
  int with_gdr = 0, with_gpus = 0;
  for (const auto& o : all) {
    if (o.busbw_gbps > 0) rings.push_back(o.rings), rates.push_back(o.data_gbps);
    with_gdr += o.gpus && o.gdr;
    with_gpus += o.gpus;
  }
  std::vector<std::string> causes;
  if (e.transport == "socket") causes.push_back(e.model);
  if (e.busbw_gbps > 0 && !rings.empty()) {
    int typical = *std::max_element(rings.begin(), rings.end());
    double rate = Median(rates);
    if (e.rings < typical)
      causes.push_back(
          fmt::format("{} active port(s) NCCL uses where other nodes have {}: a rail "
                      "is down",
                      e.rings, typical));
    if (e.data_gbps < rate * 0.95)
      causes.push_back(fmt::format("its slowest port runs at {} where the others run {}",
                                   RateText(e.port_gbps), RateText(rate)));
  }
  if (e.gpus && !e.gdr && with_gdr * 2 >= with_gpus && with_gdr > 0)
    causes.push_back(
        "no GPUDirect RDMA (nvidia_peermem not loaded, no open kernel module): "
        "traffic bounces through host memory");
  else if (e.gpus && !e.gdr && with_gdr == 0 && expected > 0)
    causes.push_back("no GPUDirect RDMA on any node: every transfer bounces through host memory");
  return Join(causes, "; ");
}

Finding BandwidthFinding(std::string entity, Outcome o, std::string message, std::string fix) {
  return MakeFinding("warmup.bandwidth.expected", std::move(entity), o, std::move(message),
                     std::move(fix));
}

std::string Size(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return HumanBytes(bytes);
}

}  // namespace

BandwidthAssessment AssessBandwidth(const std::vector<NodeReport>& nodes, int ranks_per_node,
                                    const std::string& backend,
                                    const std::vector<SweepPoint>& sweep,
                                    const BandwidthLimits& limits) {
  BandwidthAssessment a;
  std::vector<double> modelled;
  for (const auto& n : nodes) {
    a.nodes.push_back(ExpectNode(n, ranks_per_node, backend));
    if (a.nodes.back().busbw_gbps > 0) modelled.push_back(a.nodes.back().busbw_gbps);
  }
  a.expected_gbps = Median(modelled);
  const SweepPoint* best = nullptr;
  for (const auto& p : sweep) {
    SizeVerdict v{p.bytes, p.busbw_gbps, a.expected_gbps, 0, p.bytes >= limits.judge_bytes};
    if (a.expected_gbps > 0) v.ratio = p.busbw_gbps / a.expected_gbps;
    if (v.judged && a.expected_gbps > 0 && v.ratio > a.best_judged_ratio) {
      a.best_judged_ratio = v.ratio;
      best = &p;
    }
    a.sizes.push_back(v);
  }
  if (a.expected_gbps <= 0) {
    a.findings.push_back(BandwidthFinding("job", Outcome::kSkip,
                                          "no line-rate model for this run (" +
                                              (a.nodes.empty() ? backend : a.nodes[0].model) +
                                              "): the measured busbw stands alone",
                                          ""));
    return a;
  }
  if (best == nullptr) {
    a.findings.push_back(BandwidthFinding(
        "job", Outcome::kSkip,
        fmt::format("expected busbw {:.1f} GB/s; no swept size reaches {} where NCCL's busbw "
                    "levels off, so measured/expected is reported, not judged",
                    a.expected_gbps, Size(limits.judge_bytes)),
        ""));
    return a;
  }
  const double ratio = a.best_judged_ratio;
  a.below = ratio < limits.min_fraction;
  std::string figures = fmt::format(
      "busbw {:.2f} GB/s at {} is {:.2f} of the expected {:.1f} GB/s ({})", best->busbw_gbps,
      Size(best->bytes), ratio, a.expected_gbps, a.nodes.empty() ? "" : a.nodes[0].model);
  if (!a.below) {
    a.findings.push_back(BandwidthFinding("job", Outcome::kPass, figures, ""));
    return a;
  }
  const Outcome o = ratio < limits.min_fraction / 2 ? Outcome::kFail : Outcome::kWarn;
  std::vector<std::string> named;
  std::vector<Finding> per_node;
  for (const auto& e : a.nodes) {
    std::string cause = SuspectCause(e, a.nodes, a.expected_gbps);
    if (cause.empty()) continue;
    named.push_back(e.label + ": " + cause);
    per_node.push_back(BandwidthFinding(
        e.label, Outcome::kWarn, e.label + " likely pulls the ring down: " + cause,
        "run `safe-launch preflight` on " + e.label + " (ib.port.*, gpu.gdr), fix or drain it"));
  }
  std::string why = named.empty()
                        ? "no node's facts explain it (a slow cable, switch port or congestion): "
                          "the pair rounds name the slow node"
                        : "likely cause: " + Join(named, "; ");
  a.findings.push_back(BandwidthFinding(
      "job", o,
      fmt::format("{}, below the {:.2f} threshold; {}", figures, limits.min_fraction, why),
      "compare with `safe-launch bench` after each change; min_busbw_fraction in the recipe's "
      "[thresholds] sets the bar"));
  for (auto& f : per_node) a.findings.push_back(std::move(f));
  return a;
}

nlohmann::json AssessmentJson(const BandwidthAssessment& a) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& e : a.nodes)
    nodes.push_back({{"node_rank", e.node_rank},
                     {"label", e.label},
                     {"transport", e.transport},
                     {"ports", e.ports},
                     {"rings", e.rings},
                     {"port_gbps", e.port_gbps},
                     {"mtu", e.mtu},
                     {"gdr", e.gdr},
                     {"expected_busbw_gbps", e.busbw_gbps},
                     {"model", e.model}});
  return {{"expected_busbw_gbps", a.expected_gbps},
          {"best_judged_ratio", a.best_judged_ratio},
          {"below", a.below},
          {"sizes", a.sizes},
          {"nodes", nodes}};
}

}  // namespace sl::warmup
