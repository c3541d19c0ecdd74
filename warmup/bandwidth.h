#pragma once
// What bus bandwidth a healthy cross-node all_reduce should reach, from each node's facts, and
// how the measured sweep compares with it (doc/manual.md "Bandwidth"). Pure: facts and figures
// in, expectations and findings out.
//
// The model: NCCL's busbw of a ring all_reduce is the bandwidth of the ring's slowest link
// (nccl-tests doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n). Across nodes that link is a NIC,
// and NCCL runs one ring per NIC in parallel, so a node delivers
//   min(used active ports, GPUs on the node) x slowest used port's data rate x header efficiency
// where the data rate is the sysfs rate less line encoding (8b/10b up to QDR, 64b/66b for FDR;
// EDR and later report the data rate) and the header efficiency is MTU / (MTU + per-packet
// headers: 26 B on InfiniBand, 82 B for RoCE v2 on Ethernet). The job expects what its typical
// node delivers (the median over nodes), so a node with a slower port or one rail down is named
// rather than lowering the bar for everyone.
#include <cstdint>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "warmup/compare.h"
#include "warmup/protocol.h"

namespace sl::warmup {

/// What one node can deliver to a cross-node all_reduce.
struct NodeExpectation {
  int node_rank = 0;
  std::string label;      ///< "node 1 (gpu02)"
  std::string transport;  ///< "InfiniBand", "RoCE", "socket" (no usable RDMA port), "gloo"
  int ports = 0;          ///< active ports NCCL will use
  int rings = 0;          ///< min(ports, ranks on the node): NICs the rings run through
  double port_gbps = 0;   ///< the slowest used port's sysfs rate (Gb/s)
  double data_gbps = 0;   ///< its data rate after line encoding (Gb/s)
  int mtu = 0;            ///< payload bytes per packet used for the header efficiency
  bool gpus = false;      ///< the node has NVIDIA GPUs
  bool gdr = false;       ///< GPUDirect RDMA possible (nvidia_peermem, or the open module)
  double busbw_gbps = 0;  ///< expected busbw (GB/s); 0 when there is no model (socket, gloo)
  std::string model;      ///< "2 x 200 Gb/s InfiniBand x 0.994 (4096 B MTU) = 49.7 GB/s"
};

/// The expectation for one node from the facts it published, the ranks it runs and the backend
/// the warm-up used ("nccl" or "gloo").
NodeExpectation ExpectNode(const NodeReport& node, int ranks_per_node, const std::string& backend);

/// Thresholds of the comparison (recipe [thresholds]; common/thresholds.h has the defaults).
struct BandwidthLimits {
  double min_fraction = 0.7;              ///< warn below this x expected; fail below half of it
  std::uint64_t judge_bytes = 64u << 20;  ///< sizes below this are reported, never judged
};

/// One size of the sweep against the expectation.
struct SizeVerdict {
  std::uint64_t bytes = 0;
  double busbw_gbps = 0, expected_gbps = 0, ratio = 0;  ///< ratio 0 when nothing is expected
  bool judged = false;                                  ///< bytes >= judge_bytes
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SizeVerdict, bytes, busbw_gbps, expected_gbps,
                                                ratio, judged)

/// Everything the comparison decided, for the report and the findings.
struct BandwidthAssessment {
  std::vector<NodeExpectation> nodes;
  double expected_gbps = 0;  ///< the job's expectation (median of the nodes'), 0 = no model
  std::vector<SizeVerdict> sizes;
  double best_judged_ratio = 0;   ///< best measured/expected over the judged sizes (0 = none)
  bool below = false;             ///< best_judged_ratio < min_fraction
  std::vector<Finding> findings;  ///< "warmup.bandwidth.expected": one per job, one per suspect
};

/// Compares the job-wide sweep with the nodes' expectations: per size measured/expected, and a
/// warn (below min_fraction) or fail (below half of it) naming the nodes whose facts explain it
/// (a port at a lower rate, fewer active ports: a rail down, no usable RDMA port: socket
/// fallback, GPUDirect RDMA unavailable). Without a model (gloo, socket-only): a skip.
BandwidthAssessment AssessBandwidth(const std::vector<NodeReport>& nodes, int ranks_per_node,
                                    const std::string& backend,
                                    const std::vector<SweepPoint>& sweep,
                                    const BandwidthLimits& limits);

/// The assessment as the report's "bandwidth" object.
nlohmann::json AssessmentJson(const BandwidthAssessment& a);

}  // namespace sl::warmup
