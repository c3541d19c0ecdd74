#pragma once
// The job's own facts, joined across nodes: every node's preflight findings, the warm-up report's
// cross-node differences, the bundles' IB counter deltas. Each becomes a CauseClaim for the
// engine, with the node(s), port and the JSON file it came from; a fact seen on one node of
// several says so ("n2 only (1 of 4 nodes)"), one seen everywhere says "all 4 nodes".
// Parsing (JSON text -> facts) is pure; ReadJobFacts is the thin reader that finds the files.
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_reader.h"
#include "diagnose/engine.h"

namespace sl::diagnose {

/// One node's fact that points at a cause.
struct NodeFact {
  std::string source;  ///< "preflight", "warmup", "ib_counters"
  std::string rule;    ///< finding code, warm-up check id or counter: "ib.mtu/ib_mtu_mismatch"
  std::string category;
  double confidence = 0;
  std::string node;  ///< the node it was seen on (run directory leaf, bundle host)
  std::string port;  ///< "mlx5_0:1" where the fact concerns a port
  EvidenceLine evidence;
  std::string why;
};

/// A finding code's (or warm-up check's, or IB counter's) cause category, as data.
struct FactCategory {
  std::string_view key;  ///< finding code, warm-up check id, or counter name
  std::string_view category;
  double confidence;
  std::string_view why;
};
std::span<const FactCategory> PreflightCategories();
std::span<const FactCategory> WarmupCategories();
std::span<const FactCategory> CounterCategories();
/// The Flight Recorder analysis' cause codes ("fr.laggard").
std::span<const FactCategory> FlightRecorderCategories();
/// The cross-rank stacks analysis' rules ("stacks.main_thread_elsewhere").
std::span<const FactCategory> StacksCategories();
/// The row of `table` whose key is `key`, nullptr when none.
const FactCategory* FindFactCategory(std::span<const FactCategory> table, std::string_view key);

/// Fail and warn findings of a preflight.json (safe-launch.preflight/1) whose code maps to a
/// category. `file` is cited; `node` is where it ran. Malformed JSON gives no facts.
std::vector<NodeFact> PreflightFacts(std::string_view json_text, const std::string& file,
                                     const std::string& node);
/// The warm-up report's (warmup.json) cross-node differences and slow nodes, each on the odd
/// node(s) its entity names ("node 1 (n2)" -> n2). `*nnodes` gets the report's node count.
std::vector<NodeFact> WarmupFacts(std::string_view json_text, const std::string& file,
                                  int* nnodes = nullptr);
/// A bundle's node/ib_counters.json "error_deltas" (counters that grew during the job).
std::vector<NodeFact> CounterFacts(std::string_view json_text, const std::string& file,
                                   const std::string& node);

/// "n2" (a one-node job), "n2 only (1 of 4 nodes)", "n1, n3 (2 of 4 nodes)", "all 4 nodes".
std::string NodesText(const std::vector<std::string>& seen, std::size_t job_nodes);

/// One claim per source and rule: the nodes it was seen on against the job's `job_nodes` nodes, its
/// ports, the highest confidence, the first evidence of each node. Identical facts (a bundle's copy
/// of the run directory's preflight.json) count once.
std::vector<CauseClaim> JoinFacts(const std::vector<NodeFact>& facts, std::size_t job_nodes);

/// What ReadJobFacts found under the inputs.
struct JobFacts {
  std::vector<std::string> nodes;  ///< node names found, sorted
  std::size_t job_nodes = 0;       ///< the job's node count (the warm-up's, if larger)
  std::vector<NodeFact> facts;
  /// Directory (a node run directory or bundle, as given/joined from the input) -> node name,
  /// so lines of files under it (a bundle's node/kernel.log) name their node.
  std::map<std::string, std::string> node_of_dir;
  std::vector<CauseClaim> Claims() const;
};

/// Finds node run directories (holding status.json) and bundles (holding manifest.json) in the
/// directory inputs (a run root, a run directory, a bundle; 3 levels deep) and reads their
/// preflight.json, warmup.json and node/ib_counters.json. What cannot be read is left out.
JobFacts ReadJobFacts(const std::vector<std::string>& inputs, const FileReader& fs);

/// The node whose directory holds `file` ("" when none): the longest matching prefix.
std::string NodeOfFile(const std::map<std::string, std::string>& node_of_dir,
                       std::string_view file);

/// True when `dir` is a run root: a directory with at least one child directory that is a node
/// run directory (holds status.json).
bool IsRunRoot(const std::string& dir, const FileReader& fs);

}  // namespace sl::diagnose
