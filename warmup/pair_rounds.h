#pragma once
// The slow node named: a ring all_reduce runs at its slowest link, so one job-wide figure cannot
// say which node pulls it down. Bounded rounds of concurrent pair tests can: each round pairs
// every node with another (a perfect matching, the circle schedule: partners differ from round
// to round), all pairs at once, local rank l with local rank l (one rail per local rank). A node
// slow in every pair it is part of is named; a slow pair between two otherwise fast nodes names
// the link. Pure: the schedule and the analysis; warmup/torch/ runs the pairs.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/finding.h"

namespace sl::warmup {

/// `rounds` perfect matchings of `nnodes` nodes (at most nnodes-1, or nnodes when odd, where one
/// node sits out each round): round r lists its pairs (a < b).
std::vector<std::vector<std::pair<int, int>>> PairSchedule(int nnodes, int rounds);
/// This node's partner in one round of the schedule, -1 when it sits out.
int PartnerIn(const std::vector<std::pair<int, int>>& round, int node);

/// One rank's measurement in one round.
struct PairMeasure {
  int round = 0;
  int node = 0, partner = 0, local_rank = 0;
  std::uint64_t bytes = 0;
  double busbw_gbps = 0;  ///< 2-rank all_reduce: busbw = algbw
  bool ok = false;
  std::string error;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PairMeasure, round, node, partner, local_rank,
                                                bytes, busbw_gbps, ok, error)

/// One pair's figure: the slowest of its local ranks (a rail down shows), at the largest size.
struct PairFigure {
  int round = 0, a = 0, b = 0;
  double busbw_gbps = 0;
  bool slow = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PairFigure, round, a, b, busbw_gbps, slow)

struct PairAnalysis {
  std::vector<PairFigure> pairs;
  double reference_gbps = 0;    ///< what a healthy pair reaches (upper quartile of the pairs)
  std::vector<int> slow_nodes;  ///< slow in every pair (at least two) they are part of
  std::vector<std::pair<int, int>> slow_links;  ///< slow pairs not explained by a slow node
  /// node -> size -> median busbw over its pairs (the picture's per-node lines)
  std::map<int, std::map<std::uint64_t, double>> per_node;
  std::vector<Finding> findings;  ///< "warmup.bandwidth.pairs"
};

/// Decides over every rank's measurements: a pair is slow below `fraction` x the reference.
/// `labels` names nodes ("node 2 (gpu03)").
PairAnalysis AnalysePairs(const std::vector<PairMeasure>& measures,
                          const std::map<int, std::string>& labels, double fraction);

nlohmann::json PairAnalysisJson(const PairAnalysis& a);

}  // namespace sl::warmup
