#pragma once
// From verdict to action (`--on-node-fault=report|drain|requeue`): when the job-level diagnosis
// (diagnosis.json in the job run root) names one node as the first cause, with a node-local
// category and a probability at or above the threshold, drain that node (`scontrol update
// state=drain`, the reason "safe-launch: <cause>: <node>[: <entity>]: <evidence>") and requeue
// the job without it (`scontrol requeue`, then ExcNodeList while it is pending: Slurm 22.05
// refuses ExcNodeList on a running job). Bounded: --max-requeues across the job's attempts,
// max(1, 10%) of its nodes drained, never a node already out of service, never a requeue that
// the partition cannot place. Reading (diagnosis.json, scontrol's records) is apart from
// deciding (Decide, pure) and from doing (Execute, bounded scontrol calls); remediation.json
// in the run root records all three.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/result.h"
#include "launcher/config.h"
#include "launcher/slurm_health.h"
#include "recipes/recipe.h"

namespace sl::launcher {

enum class OnNodeFault { kReport, kDrain, kRequeue };
/// "report" / "drain" / "requeue"; the error names the value and the accepted ones.
Result<OnNodeFault> ParseOnNodeFault(std::string_view text);
std::string_view OnNodeFaultName(OnNodeFault mode);

/// The settings, from the flags, SAFE_LAUNCH_ON_NODE_FAULT / SAFE_LAUNCH_FAULT_THRESHOLD /
/// SAFE_LAUNCH_MAX_REQUEUES, a recipe's [slurm] table, in that order of precedence.
struct RemediationPolicy {
  OnNodeFault mode = OnNodeFault::kReport;
  double threshold = 0.8;  ///< the first cause's probability must be at least this
  int max_requeues = 2;    ///< per job, over all its attempts
  bool dry_run = false;    ///< print the scontrol commands, run none
  std::string source;      ///< where `mode` came from: "--on-node-fault", "SAFE_LAUNCH_...", ...
};

/// The policy: each setting from the flag, else SAFE_LAUNCH_ON_NODE_FAULT /
/// SAFE_LAUNCH_FAULT_THRESHOLD / SAFE_LAUNCH_MAX_REQUEUES, else the recipe's [slurm], else the
/// default. A malformed variable is an error naming it (not silently the default).
Result<RemediationPolicy> ResolveRemediationPolicy(const RemediationFlags& flags,
                                                   const Environment& env,
                                                   const recipes::SlurmSettings& recipe);

/// The first cause of a diagnosis, as remediation reads it.
struct FaultCause {
  std::string category;     ///< "ib_port_down_or_link_flap", ... ("unknown" when none)
  double probability = 0;   ///< `probability` when the document has it, else `confidence`
  std::string entity_node;  ///< as written: "n07", "n07 only (1 of 16 nodes)", "all 4 nodes"
  std::string port, gpu, rank;
  std::vector<std::string> evidence;  ///< "file:line: text", the first few
  std::vector<std::string> rules;
};

/// The first cause of a safe-launch.diagnosis/1 document (error when it has none or is not one).
Result<FaultCause> FirstCause(const nlohmann::json& diagnosis);

/// Categories local to one node (port down/flapping, MTU/GID of that node, Xid or a GPU fallen
/// off the bus, memlock, /dev/shm, the slow node of the pair rounds, an epilog finding).
bool IsNodeLocalCategory(std::string_view category);

/// The one node an entity names ("n07", "n07 only (1 of 16 nodes)"), else "" ("all 4 nodes",
/// "n1, n3 (2 of 4 nodes)", ""). The name is the node's run directory leaf.
std::string SingleNode(std::string_view entity_node);

/// The Slurm node name of a node run directory's leaf: "<host>_<slurm node>" when several slurmd
/// serve one host (host names hold no '_'), "<host>" otherwise; ".N" (a second run directory)
/// and "-rankR" (--per-task) come off.
std::string SlurmNodeOfRunDir(std::string_view leaf);

/// What Decide sees of Slurm.
struct SlurmView {
  std::string job_id;
  std::vector<std::string> job_nodes;  ///< the job's nodes (NodeList, expanded)
  int job_num_nodes = 0;               ///< NumNodes it asked for
  std::string partition;
  std::vector<std::string> excluded;  ///< its ExcNodeList already (expanded)
  /// The partition's nodes and their states (the job's own among them).
  std::map<std::string, SlurmNode> partition_nodes;
  bool requeue_allowed = true;  ///< scontrol's Requeue=1 (sbatch --requeue or JobRequeue=1)
};

/// What earlier attempts of the job did (their remediation.json files).
struct RemediationHistory {
  int requeues = 0;                  ///< requeues done by safe-launch
  std::vector<std::string> drained;  ///< nodes safe-launch drained for this job
};

/// The requeues and drains recorded in the remediation.json of the other attempts of the job
/// whose attempt run root is `run_root` (siblings "<job>.<step>[.requeue<N>]"). A requeue that
/// was asked but whose answer was never written (the requeue ends this step: slurmstepd may kill
/// the acting process before scontrol returns) counts as done.
RemediationHistory ReadHistory(const std::string& run_root);

/// One scontrol call to make.
struct PlannedAction {
  std::string kind;               ///< "drain", "requeue", "exclude"
  std::string node;               ///< the node drained / excluded ("" for requeue)
  std::vector<std::string> argv;  ///< scontrol's arguments (without "scontrol")
};

struct Decision {
  std::string decision;  ///< "report", "drain", "requeue" (drain + requeue)
  bool node_local = false;
  std::string node;          ///< the Slurm node the cause names ("" when none)
  std::string drain_reason;  ///< when a drain is planned
  std::vector<PlannedAction> actions;
  std::vector<std::string> notes;  ///< why not (more), one sentence each
};

/// Pure: the first cause, the policy, Slurm's view and the job's history -> what to do.
/// `boosted_probability` (a preflight that refused the job on the node the cause names: it
/// would refuse it again) replaces the cause's probability when set.
Decision Decide(const FaultCause& cause, const RemediationPolicy& policy, const SlurmView& slurm,
                const RemediationHistory& history,
                std::optional<double> boosted_probability = std::nullopt);

/// "safe-launch: <cause>: <node>[: <entity>]: <short evidence>", cleaned and cut as DrainReason.
std::string RemediationReason(const FaultCause& cause, const std::string& node);

/// `scontrol -o show job` -> the job's NodeList, NumNodes, Partition, ExcNodeList, Requeue.
SlurmView ParseSlurmJob(std::string_view scontrol_output);
/// `scontrol -o show node` (all nodes, one a line) -> the nodes in `partition`.
std::map<std::string, SlurmNode> ParsePartitionNodes(std::string_view scontrol_output,
                                                     const std::string& partition);

/// The result of one action, for remediation.json and the job's output.
struct ActionResult {
  PlannedAction action;
  bool ran = false;  ///< false in a dry run or when skipped
  bool ok = false;
  std::string output;  ///< scontrol's output, or what went wrong
  double seconds = 0;
};

/// What `safe-launch run` (or `safe-launch remediate`) knows besides the run root.
struct RemediationInput {
  std::string run_root;   ///< the job run root holding diagnosis.json
  std::string job_id;     ///< SLURM_JOB_ID
  std::string self_node;  ///< SLURMD_NODENAME of the node acting ("" = any)
  /// What refused to start the job ("" = nothing: a post-mortem): "preflight" (this node's
  /// failed: the cause counts with probability 1 when it names this node, and only this node
  /// acts on it) or "warmup" (node 0's comparisons: probability 1 for a warm-up cause naming
  /// one node).
  std::string refused_by;
  double declared_unix = 0;  ///< when the fault/hang was declared (0 = unknown)
  Environment env;           ///< for scontrol (SLURM_CONF, PATH)
  int timeout_ms = 10000;    ///< each scontrol call
};

/// Reads diagnosis.json and Slurm's records, decides, acts (or prints in a dry run), writes
/// remediation.json and the remediation section of diagnosis.{md,html}; one log line per
/// action. Returns the remediation.json document.
nlohmann::json Remediate(const RemediationInput& input, const RemediationPolicy& policy);

/// The "Remediation" section of diagnosis.md / diagnosis.html for a remediation.json document.
std::string RemediationMarkdown(const nlohmann::json& remediation);
std::string RemediationHtml(const nlohmann::json& remediation);
/// `md`/`html` with the remediation section put in (replacing an earlier one).
std::string WithRemediationMarkdown(std::string md, const nlohmann::json& remediation);
std::string WithRemediationHtml(std::string html, const nlohmann::json& remediation);

}  // namespace sl::launcher
