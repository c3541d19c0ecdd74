#include "watchdog/hang/post_mortem.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/spawn.h"

namespace sl::hang {
namespace {

using Clock = std::chrono::steady_clock;

// Waits up to `o.wait` for the other nodes' bundles (complete ones, as many as expected), on
// the channel's worker when there is one. Returns what was seen; `in_time` false when the run
// root did not answer within the wait.
PeerBundles AwaitPeerBundles(const PostMortemOptions& o, PeerChannel* peers, bool* in_time) {
  const auto wait = o.wait;
  const std::string root = o.job_root;
  const std::string self_dir = o.self_dir;
  const int expected_peers = std::max(0, o.expected_nodes - 1);
  // Shared with the worker, which may still write it after the wait gave up on it.
  struct Seen {
    std::mutex mu;
    PeerBundles bundles;
  };
  auto seen = std::make_shared<Seen>();
  auto scan = [=] {
    const auto end = Clock::now() + wait;
    for (;;) {
      PeerBundles b = ScanPeerBundles(root, self_dir, ::geteuid());
      bool all =
          b.complete.size() == b.nodes.size() && b.nodes.size() >= std::size_t(expected_peers);
      {
        std::lock_guard lock(seen->mu);
        seen->bundles = b;
      }
      if (all || Clock::now() >= end) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  };
  // On the channel's worker: a dead file system holds that thread, not this one past `wait`.
  *in_time = !peers || peers->RunOnWorker(scan, wait + std::chrono::seconds(2));
  std::lock_guard lock(seen->mu);
  return seen->bundles;
}

// Whether `path` exists, asked on the channel's worker when there is one (2 s at most).
bool Exists(const std::string& path, PeerChannel* peers) {
  auto written = std::make_shared<bool>(false);
  auto check = [path, written] {
    struct stat st {};
    *written = ::lstat(path.c_str(), &st) == 0;
  };
  if (!peers) {
    check();
    return *written;
  }
  return peers->RunOnWorker(check, std::chrono::seconds(2)) && *written;
}

}  // namespace

std::string RunPostMortem(const PostMortemOptions& o, PeerChannel* peers) {
  if (o.job_root.empty() || o.wait.count() <= 0) return "";
  const std::string& root = o.job_root;
  const auto started = Clock::now();
  bool in_time = true;
  const PeerBundles got = AwaitPeerBundles(o, peers, &in_time);
  log::Info("post-mortem: {} of {} other node(s) bundled after {:.1f} s{}", got.complete.size(),
            std::max<std::size_t>(got.nodes.size(), std::max(0, o.expected_nodes - 1)),
            std::chrono::duration<double>(Clock::now() - started).count(),
            in_time ? "" : " (the run root did not answer in time)");
  if (!o.diagnose) return "";
  // In a child: the job's exit waits for the deadline at most. The wait owns SIGTERM/SIGINT
  // (the supervisor's loop is over). A stop (srun TERMs the whole step when the first task
  // exits, scancel) leaves the diagnosis `stop_leaves` more: it takes a second or two, and
  // Slurm's KILL comes KillWait (30 s by default) after its TERM.
  DiagnoseRoot diagnose = o.diagnose;
  auto r = RunCallInChild([&] { return diagnose(root); }, o.diagnose_deadline,
                          WaitPolicy{.stop_leaves = o.stop_leaves});
  if (!r.ok()) {
    log::Warn("post-mortem: could not run diagnose: {}", r.error().Describe());
    return "";
  }
  if (r->timed_out) {
    log::Warn("post-mortem: diagnose {} ran past {} s and was stopped", root,
              o.diagnose_deadline.count() / 1000);
    return "";
  }
  if (r->stopped) {
    log::Warn(
        "post-mortem: diagnose {} was still running {} s after a stop signal and was ended; run "
        "`safe-launch diagnose {}`",
        root, o.stop_leaves.count() / 1000, root);
    return "";
  }
  const std::string json = root + "/diagnosis.json";
  if (Exists(json, peers)) {
    log::Warn("post-mortem: diagnose exited {}; diagnosis in {}/diagnosis.md (.json, .html)",
              r->exit_status, root);
  } else {
    log::Warn("post-mortem: diagnose {} exited {} and wrote no {}", root, r->exit_status, json);
  }
  return root;
}

}  // namespace sl::hang
