#pragma once
// The warm-up's data: the plan the launcher hands each warm-up rank, what each rank reports
// back, and rank 0's job-wide report -- plus the pure decisions over them (who never arrived,
// bandwidth per node, verdict text). Shared by the launcher's phase (warmup_phase.h) and the
// libtorch warm-up binary (warmup/torch/); no libtorch here.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/finding.h"
#include "warmup/compare.h"
#include "warmup/store_auth.h"
#include "warmup/topology.h"

namespace sl::warmup {

/// Sizes of the bandwidth sweep (bytes) when the plan gives none: small enough to finish in a
/// fraction of a second on loopback Gloo, big enough to leave the latency-bound regime on IB.
inline const std::vector<std::uint64_t> kDefaultSweepBytes = {1u << 16, 1u << 20, 8u << 20};

/// One point of the bandwidth sweep, as nccl-tests defines it for all_reduce:
/// algbw = bytes / time, busbw = algbw * 2(n-1)/n.
struct SweepPoint {
  std::uint64_t bytes = 0;
  double seconds = 0;
  double algbw_gbps = 0;  ///< GB/s (1e9 bytes per second)
  double busbw_gbps = 0;
};
SweepPoint MakeSweepPoint(std::uint64_t bytes, double seconds, int world);
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SweepPoint, bytes, seconds, algbw_gbps, busbw_gbps)

/// How rank 0 judges the sweep and when the pair rounds run (warmup/bandwidth.h,
/// warmup/pair_rounds.h); the recipe's [thresholds] and `bench`'s flags fill it.
struct BandwidthPlan {
  double min_fraction = 0.7;                ///< min_busbw_fraction
  std::uint64_t judge_bytes = 64ull << 20;  ///< busbw_judge_bytes
  double max_drop = 0.1;                    ///< max_busbw_drop, against `baseline`
  std::vector<SweepPoint> baseline;         ///< expected busbw per size (--baseline), may be empty
  std::string pair_rounds =
      "auto";          ///< auto (sweep below the line or the baseline) | always | never
  int rounds = 3;      ///< pair rounds at most
  int pair_sizes = 2;  ///< the largest N sizes of the sweep are measured in pairs
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BandwidthPlan, min_fraction, judge_bytes, max_drop,
                                                baseline, pair_rounds, rounds, pair_sizes)

/// Written by the launcher, read by every local warm-up rank (one JSON file per node).
struct WarmupPlan {
  int nnodes = 1, node_rank = 0, nproc_per_node = 1;
  std::string store_host;  ///< node 0's address; global rank 0 hosts the store there
  int store_port = 0;
  std::string local_address;       ///< this node's address towards store_host
  std::vector<std::string> hosts;  ///< expected host per node rank (Slurm), may be empty
  double deadline_unix_ms = 0;     ///< hard deadline for this node's warm-up
  double spawn_unix_ms = 0;        ///< when the launcher started the ranks (for timings)
  std::string backend = "auto";    ///< auto | gloo | nccl
  std::vector<std::uint64_t> sweep_bytes = kDefaultSweepBytes;
  int iterations = 5;
  std::uint64_t verify_count = 1u << 14;  ///< floats in the verified all_reduce
  /// Comparison ids (or groups) whose mismatches do not fail the warm-up (run --waive);
  /// node 0's rank 0 applies them in CompareNodes.
  std::vector<std::string> waive;
  NodeReport node;  ///< this node's published facts (versions filled by rank)
  WarmupAuth auth;  ///< namespace and HMAC key of every store key (plan.json is 0600)
  BandwidthPlan bandwidth;
  /// false: rank 0's verdict never starts the collectives (the scale simulator,
  /// safe-launch-warmup-sim, which has none); `run` always plans them.
  bool collectives = true;
  /// What rank 0 hands the other nodes under "report": "nodes" (default, NodesReport: the
  /// verdict, the findings naming the odd nodes, bounded in size) or "full" (node 0's whole
  /// report, which grows with the node count: N nodes fetching it cost N^2 bytes; kept so that
  /// bench/scale.sh measures both designs in one run).
  std::string report_to_nodes = "nodes";

  int World() const { return nnodes * nproc_per_node; }
  int NodeOfRank(int rank) const { return nproc_per_node > 0 ? rank / nproc_per_node : 0; }
};
void to_json(nlohmann::json& j, const WarmupPlan& p);
void from_json(const nlohmann::json& j, WarmupPlan& p);

/// Unix-epoch milliseconds of each stage on one rank (0 = not reached).
struct RankTimings {
  double spawn = 0, start = 0, store = 0, arrived = 0, verdict = 0, group = 0, verified = 0,
         swept = 0, end = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RankTimings, spawn, start, store, arrived, verdict,
                                                group, verified, swept, end)

/// What one rank publishes after its collectives (store key "result/<rank>").
struct RankResult {
  int rank = 0, node_rank = 0, local_rank = 0;
  std::string host;
  bool ok = false;
  std::string error;  ///< why it failed, "" when ok
  std::string backend;
  std::vector<SweepPoint> sweep;
  RankTimings timings;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RankResult, rank, node_rank, local_rank, host, ok,
                                                error, backend, sweep, timings)

/// What each process writes on arriving, under "arrive/<rank>/<n>" where n is its claim number
/// (counter "claims/<rank>"): a second process with the same rank gets n = 2 and is seen, instead
/// of overwriting the first.
struct ArrivalRecord {
  int rank = 0, node_rank = 0, local_rank = 0, nnodes = 0, nproc_per_node = 0;
  std::string host;     ///< published node name
  std::string address;  ///< the address it reaches the store from
  int pid = 0;
  double t_ms = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ArrivalRecord, rank, node_rank, local_rank, nnodes,
                                                nproc_per_node, host, address, pid, t_ms)

/// Every claim on one rank: the valid ones, and why the others were refused.
struct RankClaims {
  std::vector<ArrivalRecord> valid;
  std::vector<std::string> refused;  ///< VerifyValue's reasons
};

/// A node's own view of the job's layout (its plan), published with its facts.
struct NodeLayout {
  int node_rank = 0, nnodes = 0, nproc_per_node = 0;
  std::string host;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NodeLayout, node_rank, nnodes, nproc_per_node, host)

/// Nodes whose node count or ranks per node differ from node 0's plan: one fail per node,
/// "warmup.layout", named before any collective (a mismatch would otherwise hang the group
/// creation until the timeout).
std::vector<Finding> LayoutFindings(const WarmupPlan& plan,
                                    const std::map<int, NodeLayout>& layouts);

/// Ranks claimed by two or more processes holding the job's key, one fail per node
/// ("two processes claim node 1: hosts A and B"), "warmup.duplicate"; and claims refused for a
/// bad tag, "warmup.auth" (fail when the rank has no valid claim, else warn).
std::vector<Finding> ClaimFindings(const WarmupPlan& plan, const std::map<int, RankClaims>& claims);

/// A rank's result that does not fit the layout: published under another rank or node, or an ok
/// result missing a size of the sweep. Fail findings, "warmup.collective".
std::vector<Finding> ResultShapeFindings(const WarmupPlan& plan, int rank, const RankResult& r);

/// Names ranks that did not reach `stage` ("arrive at the rendezvous", "finish the
/// collectives"), grouped per node with the host when known (published facts, else the Slurm
/// node list): one fail finding per node, check id `check_id`.
std::vector<Finding> MissingRankFindings(const WarmupPlan& plan, const std::set<int>& present,
                                         const std::map<int, std::string>& node_names,
                                         const std::string& stage, const std::string& check_id,
                                         double waited_s);

/// Mean bus bandwidth per node at the largest swept size, labelled "node N (host)".
std::vector<NodeBandwidth> BandwidthPerNode(const std::vector<RankResult>& results,
                                            const std::map<int, std::string>& node_names);

/// How much of what grows with the node count NodesReport keeps: evidence entries per finding,
/// and entries of each per-node list (findings, nodes that never arrived, failed ranks).
inline constexpr std::size_t kNodesReportEvidence = 8;
inline constexpr std::size_t kNodesReportList = 64;

/// The report rank 0 hands every other node: node 0's job-wide report without the parts that
/// grow with the node count -- the arrivals (the last one is kept), the node list (those that
/// never arrived are kept), every rank's result (the failed ones are kept), bandwidth per node
/// and the pair rounds' per-node points -- and with each finding's evidence cut to
/// kNodesReportEvidence entries (a comparison carries one per node). The verdict, every
/// finding's check, code, entity (the odd nodes), message and fix stay, so VerdictLine and
/// `diagnose` read it as they read the full one. `scope` says what was left out and that node
/// 0's warmup.json holds it all.
nlohmann::json NodesReport(const nlohmann::json& full);
/// Findings (JSON array) as NodesReport keeps them: at most kNodesReportList, each with at most
/// kNodesReportEvidence evidence entries (the rest counted in a last entry).
nlohmann::json NodesFindings(const nlohmann::json& findings, std::size_t* omitted = nullptr);

/// One line for every node's log: "warm-up passed: ..." / "warm-up FAILED: <first failure>".
std::string VerdictLine(const nlohmann::json& report);
/// Node 0's details: findings, bandwidth table, arrival skew, stage timings.
std::string RenderWarmupReport(const nlohmann::json& report);

}  // namespace sl::warmup
