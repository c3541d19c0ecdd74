#pragma once
// Peer events: how the supervisors of one job (one per node) tell each other "I declared a hang"
// or "my job failed", so that the others capture their own bundle at once (while their ranks are
// still alive) and so that the first failure, not the hang it causes elsewhere, is the verdict.
//
// The channel is a directory in the job's run root, `<job run root>/.events/`, which every node
// sees when the run root is on a shared file system (the default, under $SLURM_SUBMIT_DIR). Not a
// store key: the warm-up's store lives only for the warm-up (it is gone when the job runs), and a
// store of our own on node 0 would die with node 0 -- the node most worth hearing from. A file
// also stays behind for `safe-launch diagnose RUN_ROOT` to read as evidence.
//
// One event per file, `<kind>-<node>-<16 random hex>.json`, written under a dot name through
// common/file_writer (O_CREAT|O_EXCL|O_NOFOLLOW relative to the directory's O_NOFOLLOW
// descriptor) and renamed into place, so a reader never sees half an event. Readers skip dot
// names, links, non-regular files, files over 64 KiB and files not owned by our own user (the
// run root may be group-writable: nobody else can make us capture or change our verdict).
//
// All file-system work (posting, polling) runs on the channel's own worker thread: a slow or dead
// NFS stalls that thread only, never the supervisor's tick or the output pumps. Callers that need
// a post written (an event posted just before exiting) wait for it with a deadline.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/result.h"

namespace sl::hang {

/// Which launch of which job an event belongs to. A Slurm requeue, a second srun step or a re-run
/// into the same run root is another launch: its supervisors must not take this one's hang.
struct Launch {
  std::string job_id;     ///< SLURM_JOB_ID (else PBS_JOBID, LSB_JOBID, FLUX_JOB_ID), "" if none
  int restart = 0;        ///< SLURM_RESTART_COUNT: a requeued job keeps its id
  std::string launch_id;  ///< SAFE_LAUNCH_LAUNCH_ID, else the step and rendezvous of this launch
  bool operator==(const Launch&) const = default;
};

/// The launch as every node of it sees it in its job environment: the same on all nodes of one
/// launch (the scheduler's ids, torchrun's rendezvous id and endpoint), another on a requeue, a
/// new srun step or a new rendezvous. SAFE_LAUNCH_LAUNCH_ID, when set, is the launch id.
Launch LaunchOf(const Environment& env);
/// "job 812 restart 1 launch 812.0/rdzv-1" for messages.
std::string LaunchText(const Launch& launch);

/// One event a node's supervisor posts for the other nodes of its job.
struct PeerEvent {
  std::string kind;         ///< "hang" (a hang was declared there) or "failure" (its job failed)
  std::string node;         ///< the posting node's name (--node-name, else the host name)
  double time_unix = 0;     ///< wall clock, seconds: when the hang was declared / the job failed
  std::string time_utc;     ///< the same, ISO 8601 UTC, for people
  std::string trigger;      ///< what fired there: signature, stall, heartbeat, job_failed
  std::string category;     ///< that node's verdict category ("" when not decided yet)
  std::string severity;     ///< that verdict's severity: "hang" for a failure that was a hang there
  std::string headline;     ///< that node's verdict headline
  std::optional<int> rank;  ///< the failed rank, when known (failure)
  std::optional<int> exit_status;  ///< the job's exit status there (failure)
  std::string first_error;         ///< the first error line of the failed rank (failure)
  Launch launch;                   ///< the launch it was posted by (the channel stamps it)
  std::string file;                ///< where it was read from (set by the reader)
};

/// The event as one JSON object (schema safe-launch.peer-event/1).
std::string EventJson(const PeerEvent& event);
/// Parses EventJson's output; an error for anything else (wrong schema, kind, missing fields).
Result<PeerEvent> ParseEvent(std::string_view text);

/// The longest event file read (anything longer is not ours).
inline constexpr std::size_t kMaxEventBytes = 64 * 1024;

// ---- blocking file-system calls: PeerChannel runs them on its worker thread ----

/// Creates `dir` (0700) when missing; it must then be a directory (not a link) owned by `uid`.
Status EnsureEventsDir(const std::string& dir, uid_t uid);
/// Writes one event file into `dir` (see the top of this file). Returns its path.
Result<std::string> WriteEvent(const std::string& dir, const PeerEvent& event);
/// Every event in `dir` whose file is trusted (regular, owned by `uid`, at most kMaxEventBytes,
/// not a dot name) and parses; `rejected` (optional) gets "name: why" for the others. Names in
/// `known` (optional) are not opened, and every name looked at is added to it: a poll that
/// passes the same set reads only the files that are new since the last one.
std::vector<PeerEvent> ReadEvents(const std::string& dir, uid_t uid,
                                  std::vector<std::string>* rejected = nullptr,
                                  std::set<std::string>* known = nullptr);

/// What a failed job's output says of its first failure: torchrun's failure table names the
/// rank ("rank      : 1 (local_rank: 0)"); the error is the first Python exception line
/// ("RuntimeError: ...") that is not torchrun's own ChildFailedError, else the last line.
struct FailureFacts {
  std::optional<int> rank;
  std::string first_error;
};
FailureFacts FailureFromOutput(const std::vector<std::string>& lines);

/// Whether a failure event reports a root failure there (not a hang that ended in a failure,
/// e.g. a watchdog timeout that aborted the ranks: that is the other nodes' hang, not a cause).
bool IsRootFailure(const PeerEvent& event);

/// The node that declared the hang and what it said, for bundles captured on its notice:
/// "hang detected on node A at 2026-12-01T13:02:11Z (stall); captured here on peer notice".
std::string PeerHangHeadline(const PeerEvent& event);
/// "node B rank 1 failed first (exit 1 at 2026-12-01T13:02:09Z): RuntimeError: ..."
std::string PeerFailureHeadline(const PeerEvent& event);

/// Sibling run directories of `self_dir` in the job run root (one per node), and which of them
/// hold a complete bundle (a `hang-*` or `failure-*` directory under its final name).
struct PeerBundles {
  std::vector<std::string> nodes;     ///< sibling run directory names, self excluded
  std::vector<std::string> complete;  ///< those with a complete bundle
};
PeerBundles ScanPeerBundles(const std::string& job_root, const std::string& self_dir, uid_t uid);

/// The channel of one supervisor: a worker thread that posts this node's events and polls the
/// directory for the others'. Every public call returns at once or within its deadline.
class PeerChannel {
 public:
  struct Options {
    std::string dir;        ///< <job run root>/.events
    std::string self_node;  ///< events from this node are ignored
    /// This supervisor's launch: posts carry it, and events of another launch are ignored
    /// (counted in OtherLaunches()). An event without one is another launch's unless ours is
    /// empty too.
    Launch launch;
    uid_t uid = 0;  ///< only files of this user are trusted
    std::chrono::milliseconds poll{500};
    /// Events older than this (wall clock, seconds) are ignored: left over from an earlier job
    /// that used the same run root. 0 = take all.
    double not_before_unix = 0;
    /// A poll or post still running after this long is reported (once) as a stuck file system.
    std::chrono::milliseconds stuck_after{5000};
  };
  explicit PeerChannel(Options options);
  /// Stops the worker; waits for it at most a second (a worker stuck on a dead NFS is left
  /// behind, detached, and dies with the process).
  ~PeerChannel();
  PeerChannel(const PeerChannel&) = delete;
  PeerChannel& operator=(const PeerChannel&) = delete;

  /// Queues `event` to be written (before the next poll). Returns at once.
  void Post(PeerEvent event);
  /// Waits until every queued post was written (or failed), at most `deadline`. False on timeout.
  bool Flush(std::chrono::milliseconds deadline);
  /// Runs `task` on the worker (after queued posts) and waits for it at most `deadline`; false
  /// when it did not finish in time (it still runs to its end, later, on the worker).
  bool RunOnWorker(std::function<void()> task, std::chrono::milliseconds deadline);
  /// Polls the directory now, on the worker (after queued posts), and waits for it at most
  /// `deadline`; false when it did not finish in time. Events() then has what it found.
  bool PollNow(std::chrono::milliseconds deadline);
  /// The events seen so far from other nodes, oldest first.
  std::vector<PeerEvent> Events() const;
  /// The oldest event of `kind` from another node, if any.
  std::optional<PeerEvent> First(std::string_view kind) const;
  /// Events seen from other launches of the job (ignored), for a log line.
  std::size_t OtherLaunches() const;
  /// Describes a poll/post that has run longer than stuck_after ("" when none); for a log line.
  std::string Stuck() const;
  /// Where events are written, and the last error writing one ("" = none).
  const std::string& dir() const;
  std::string LastError() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sl::hang
