#pragma once
// The job-level post-mortem after a hang declared on this node: wait (bounded) for the other
// nodes' bundles in the job run root, then diagnose the root in-process (the `diagnose`
// library, composed by the launcher and handed in as a callback), in a forked child with a
// deadline: a diagnosis stuck on a dead file system is killed there, and never holds the job's
// exit (a thread could not be killed, and would run on while the process exits).
#include <chrono>
#include <functional>
#include <string>

#include "watchdog/hang/peer_events.h"

namespace sl::hang {

/// Diagnoses the job run root (writes diagnosis.{json,md,html} there); returns diagnose's exit
/// status (0: a cause named, 1: only symptoms). Runs in a forked child: it must not need a lock
/// another thread of safe-launch may hold.
using DiagnoseRoot = std::function<int(const std::string& job_root)>;

struct PostMortemOptions {
  std::string job_root;                   ///< "" = no post-mortem
  std::string self_dir;                   ///< this node's run directory's name under job_root
  int expected_nodes = 0;                 ///< nodes of the job when known, else 0
  std::chrono::milliseconds wait{30000};  ///< for the other nodes' bundles; 0 = no post-mortem
  DiagnoseRoot diagnose;                  ///< empty = wait only
  std::chrono::milliseconds diagnose_deadline{120000};
  /// After a stop signal, the diagnosis still gets this long (then it is ended).
  std::chrono::milliseconds stop_leaves{10000};
};

/// Runs the post-mortem; `peers` (may be null) does the run root's file system work on its
/// worker, so a dead file system holds that thread, not this one. Returns the root when the
/// diagnosis ran there ("" otherwise). Logs what it found.
std::string RunPostMortem(const PostMortemOptions& options, PeerChannel* peers);

}  // namespace sl::hang
