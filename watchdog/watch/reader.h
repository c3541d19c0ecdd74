#pragma once
// `safe-launch watch`: the thin reader. Fetches a job run root's files for the model
// (snapshot.h) with bounded work per refresh, for run roots on NFS (polls, no inotify):
//   * every name is looked at with fstatat(AT_SYMLINK_NOFOLLOW) relative to its directory's
//     O_NOFOLLOW descriptor; a link is named, never followed; only regular files are opened, with
//     O_NONBLOCK (a FIFO planted after the check does not block the open) and checked again on
//     the open file;
//   * a file is read again only when its inode, size, mtime or ctime changed, and at most a cap
//     (JSON files 256 KiB, tails the last 16 KiB); a directory is listed again only when its
//     mtime did; a node whose files did not change is handed out as the same shared NodeFiles
//     (no copy, no allocation);
//   * event files are trusted as the supervisors trust them (peer_events.h): regular, of our own
//     user, at most 64 KiB, no dot names; the others are listed with why;
//   * a refresh reads on a worker thread and waits for it at most read_deadline_ms: a stat or
//     read stuck on a dead NFS server (uninterruptible: no signal or poll ends it) never freezes
//     the screen. The node it is stuck on is shown "unreadable for Ns" and skipped by the next
//     refreshes until that read returns; the stuck worker is abandoned with the cache it held
//     (the next one starts a fresh cache), at most kMaxStuckWorkers of them.
#include <sys/types.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "watchdog/watch/snapshot.h"

namespace sl::watch {

struct ReaderLimits {
  std::size_t json_cap = 256 * 1024;
  std::size_t event_cap = 64 * 1024;
  std::size_t tail_cap = 16 * 1024;
  std::size_t max_nodes = 4096;
  std::size_t max_events = 256;
  std::size_t max_bundles = 64;  ///< bundle directories looked at per node
  int read_deadline_ms = 2000;   ///< how long a refresh waits for its worker
  /// Test seam: called on the worker before each run directory is read (a hook that blocks
  /// stands in for a hung file system).
  std::function<void(const std::string& node)> before_node;
};

/// Workers abandoned in a read that has not returned; beyond it the last refresh is shown.
inline constexpr int kMaxStuckWorkers = 8;

class RunRootReader {
 public:
  explicit RunRootReader(std::string root, ReaderLimits limits = {});
  ~RunRootReader();
  RunRootReader(const RunRootReader&) = delete;
  RunRootReader& operator=(const RunRootReader&) = delete;

  /// One refresh; the reference stays valid until the next Read (no copy of every node's text
  /// per refresh).
  const RunRootFiles& Read();
  /// The detail view of one run directory when its supervisor published no tail (it ended):
  /// the last lines of stdout.tail and stderr.tail, at most tail_cap bytes each.
  std::vector<std::string> EndTail(const std::string& node, std::size_t lines);
  /// The detail view of a running node: the last lines its supervisor published (live.tail),
  /// else EndTail.
  std::vector<std::string> Tail(const std::string& node, std::size_t lines);

  struct Cache;
  struct Shared;
  struct Job;

 private:
  std::vector<std::string> TailOf(const std::string& node, std::initializer_list<const char*> files,
                                  std::size_t lines);
  const RunRootFiles& Stale(double now);
  std::string root_;
  ReaderLimits limits_;
  std::unique_ptr<Cache> cache_;
  std::shared_ptr<Shared> shared_;  ///< with the workers: what is stuck, since when
  RunRootFiles last_;               ///< the last complete refresh
  RunRootFiles stale_;              ///< last_ with what is stuck now said on it
};

/// The job run root of Slurm job `job_id` under `base`
/// (${SLURM_SUBMIT_DIR:-$PWD}/safe-launch-runs): the directory named `job_id`, else the only
/// `job_id.<step>`, else the newest of them. Error text when none exists.
std::string FindJobRoot(const std::string& base, const std::string& job_id, std::string* error);

}  // namespace sl::watch
