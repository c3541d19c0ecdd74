#pragma once
// The cross-node comparison behind the warm-up: every node publishes what it is (NodeFacts,
// versions, the NCCL_*/TORCH_* environment the job will see) and rank 0 compares them. Each
// difference becomes one Finding naming the odd node(s) against the majority. Pure: no libtorch,
// no I/O, so it is tested with literal facts.
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/finding.h"
#include "common/node_facts.h"

namespace sl::warmup {

/// The rendezvous endpoint one node gives the job's torch (torchrun's --rdzv-endpoint /
/// --master-addr, or MASTER_ADDR/MASTER_PORT): every node must give the same one.
struct RendezvousEndpoint {
  std::string host;  ///< as written; "" = the job is given none
  int port = 0;
  std::string source;                  ///< "torchrun --rdzv-endpoint", ...; "" = not published
  std::vector<std::string> addresses;  ///< what `host` resolved to on that node
};

/// What one node publishes to the warm-up store.
struct NodeReport {
  int node_rank = 0;
  std::string node_name;  ///< host name (from the facts) or --node-name
  NodeFacts facts;
  std::string torch_version;      ///< as the warm-up binary's libtorch reports it
  std::string nccl_version;       ///< NCCL the job will load ("" for a CPU-only torch)
  Environment env;                ///< resolved NCCL_* / TORCH_* variables (per-rank ones dropped)
  RendezvousEndpoint rendezvous;  ///< what this node gives torchrun

  /// "node 1 (gpu02)".
  std::string Label() const;
};

void to_json(nlohmann::json& j, const NodeReport& r);
void from_json(const nlohmann::json& j, NodeReport& r);

/// Keeps the NCCL_* and TORCH_* variables that must agree across nodes: drops per-rank and
/// per-host ones (NCCL_DEBUG_FILE, NCCL_HOSTID, dump file names, anything naming a RANK).
Environment ComparableEnvironment(const Environment& env);

/// One comparison of the cross-node table: appends one finding per minority group on its
/// attribute (nothing when all nodes agree).
using ComparisonFn = void (*)(const std::vector<NodeReport>& nodes, std::vector<Finding>* out);

struct ComparisonInfo {
  const char* id;       ///< stable "warmup.consistency.<name>": --waive, --list, JSON, docs
  const char* summary;  ///< one line for --list
  ComparisonFn run;
};

/// The comparisons CompareNodes runs (kComparisons[]), in the order they run and print.
std::span<const ComparisonInfo> Comparisons();

/// Runs every comparison of Comparisons(): one finding per attribute on which the nodes disagree
/// (check ids "warmup.consistency.*"), naming the minority node(s); a single pass finding when
/// all agree. With one node: a skip. When two groups are the same size, the degraded side is
/// named where values are ordered (lower MTU, fewer HCAs, lower rate or limits), otherwise the
/// side without node 0. Findings of a comparison selected by `waive` are marked waived (they no
/// longer count for the verdict), as preflight does for waived checks.
std::vector<Finding> CompareNodes(const std::vector<NodeReport>& nodes,
                                  const std::vector<std::string>& waive = {});

/// Bandwidth measured by one node's ranks in the warm-up sweep (largest size).
struct NodeBandwidth {
  int node_rank = 0;
  std::string label;      ///< "node 1 (gpu02)"
  double busbw_gbps = 0;  ///< mean over the node's ranks, GB/s as nccl-tests prints
};

/// A node whose bus bandwidth is below `ratio` x the median of the other nodes is a warn with
/// the figures (check id "warmup.bandwidth"); otherwise one pass. Needs at least 2 nodes.
std::vector<Finding> CompareBandwidth(const std::vector<NodeBandwidth>& nodes, double ratio = 0.5);

}  // namespace sl::warmup
