#pragma once
// The warm-up as `safe-launch run` calls it on every node: starts one safe-launch-warmup per
// local rank, waits for them under a hard deadline (killing any that outlive it), and returns the
// verdict. Node 0's rank 0 compares all nodes and runs the collectives' bookkeeping; every node
// gets the job-wide report back through the store, or builds its own failure report from what
// its ranks saw when node 0 never answered.
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/install_layout.h"
#include "common/node_facts.h"
#include "warmup/protocol.h"
#include "warmup/store_auth.h"
#include "warmup/topology.h"

namespace sl::warmup {

struct WarmupOptions {
  Topology topology;
  NodeFacts facts;        ///< this node's facts (from the preflight when it ran)
  std::string node_name;  ///< label in messages; "" = facts.hostname
  Environment env;        ///< the environment the ranks (and later the job) get
  std::string run_dir;    ///< warmup.json goes here, rank logs in run_dir/warmup/;
                          ///< "" = a fresh directory under $TMPDIR
  std::chrono::milliseconds timeout{120000};
  std::string warmup_binary;               ///< "" = FindWarmupBinary(SelfLayout())
  std::string backend = "auto";            ///< auto | gloo | nccl
  std::vector<std::uint64_t> sweep_bytes;  ///< empty = kDefaultSweepBytes
  std::vector<std::string> waive;          ///< comparison ids whose mismatches do not fail
  /// The store's namespace and key; job_id "" = ResolveWarmupAuth(env, topology.warmup_port).
  WarmupAuth auth;
  /// Thresholds, baseline and pair rounds (recipe [thresholds], bench's flags).
  BandwidthPlan bandwidth;
  int iterations = 0;  ///< timed all_reduces per size; 0 = the plan's default
  /// What this node gives torchrun, published with its facts; node 0 compares every node's.
  RendezvousEndpoint rendezvous;
};

struct WarmupOutcome {
  bool passed = false;       ///< verdict pass or warn
  std::string verdict_line;  ///< the one line every node prints
  std::string details;       ///< node 0: findings, bandwidth, timings; other nodes: ""
  nlohmann::json report;     ///< what was written to warmup.json
  std::string json_path;     ///< "" when it could not be written
};

/// The warm-up helper of this installation: layout.libexec_dir/safe-launch-warmup, else
/// safe-launch-warmup beside the binary (build tree, device kit); "" when neither is executable.
std::string FindWarmupBinary(const InstallLayout& layout);

/// The local address the kernel would use to reach host:port (UDP connect + getsockname);
/// "" when the host does not resolve or has no route.
std::string SourceAddressFor(const std::string& host, int port);

/// Runs the warm-up for this node. Never hangs: returns within timeout + a few seconds, with
/// every warm-up process it started reaped. Failures are in the outcome, not an Error.
WarmupOutcome RunWarmup(const WarmupOptions& options);

}  // namespace sl::warmup
