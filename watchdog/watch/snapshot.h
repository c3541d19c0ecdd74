#pragma once
// `safe-launch watch`: the model. What the reader fetched from a job's run root (RunRootFiles:
// bytes, modification times and the problems met) goes in, one Snapshot comes out: a row per
// node (or per task) with its phase, ages, last recognised event, exit status and verdict, and a
// header with the job's state, the slowest and stalest nodes and the hang/failure events. Pure:
// tests feed literal strings; the reader (reader.h) and the screen (launcher/) stay thin.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sl::watch {

/// One file as the reader found it: read (text, capped), missing, or not read with the problem
/// named ("a symbolic link, not followed", "a FIFO, not read", "permission denied").
struct FileRead {
  enum class State { kMissing, kOk, kProblem };
  State state = State::kMissing;
  std::string name{};      ///< file name (events: the event file's name)
  std::string text{};      ///< what was read (at most the reader's cap)
  bool truncated = false;  ///< the file was longer than the cap (a tail read keeps its end)
  double mtime_unix = 0;   ///< modification time, seconds since the epoch
  std::string problem{};   ///< why it was not read (kProblem)
  bool ok() const { return state == State::kOk; }
};

/// A bundle directory in a run directory: `hang-*`/`failure-*` (complete) or
/// `.hang-*.partial` (still being written, or left incomplete).
struct BundleEntry {
  std::string name{};
  bool complete = false;
  double mtime_unix = 0;
  FileRead summary{};  ///< its summary.json (complete bundles only)
};

/// One run directory (a node, or a task with --per-task) of the job run root.
struct NodeFiles {
  std::string name{};     ///< the run directory's name (gpu01, gpu01-rank3)
  std::string problem{};  ///< the directory itself could not be read ("" = fine)
  double dir_mtime_unix = 0;
  FileRead status{}, live{}, env_plan{}, preflight{}, heartbeat{};  ///< heartbeat: mtime only
  std::vector<BundleEntry> bundles{};
  /// Parse memo key: changes whenever anything above does (the reader numbers each new read of
  /// a node; "" = no memo).
  std::string signature{};
};

/// The run directories of one refresh, each shared with the reader's cache: a node whose files
/// did not change is handed out again, not copied (1024 nodes' texts each second). Read-only
/// once built; iterates as NodeFiles.
class NodeList {
 public:
  using Ptr = std::shared_ptr<const NodeFiles>;
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = NodeFiles;
    using difference_type = std::ptrdiff_t;
    using pointer = const NodeFiles*;
    using reference = const NodeFiles&;
    explicit Iterator(std::vector<Ptr>::const_iterator it) : it_(it) {}
    const NodeFiles& operator*() const { return **it_; }
    const NodeFiles* operator->() const { return it_->get(); }
    Iterator& operator++() {
      ++it_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return it_ == o.it_; }
    bool operator!=(const Iterator& o) const { return it_ != o.it_; }

   private:
    std::vector<Ptr>::const_iterator it_;
  };
  NodeList() = default;
  NodeList(std::initializer_list<NodeFiles> nodes) {
    for (const auto& n : nodes) push_back(n);
  }
  void push_back(NodeFiles n) { items_.push_back(std::make_shared<const NodeFiles>(std::move(n))); }
  void Add(Ptr n) { items_.push_back(std::move(n)); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const NodeFiles& operator[](std::size_t i) const { return *items_[i]; }
  const NodeFiles& at(std::size_t i) const { return *items_.at(i); }
  const NodeFiles& front() const { return *items_.front(); }
  Iterator begin() const { return Iterator(items_.begin()); }
  Iterator end() const { return Iterator(items_.end()); }
  /// The shared entries themselves (the reader builds and reorders them).
  std::vector<Ptr>& items() { return items_; }

 private:
  std::vector<Ptr> items_;
};

/// Everything one refresh read from a job run root.
struct RunRootFiles {
  std::string root{};
  std::string problem{};  ///< the run root itself ("" = fine)
  NodeList nodes{};
  std::vector<FileRead> events{};       ///< .events/*.json, trusted files only
  std::vector<std::string> rejected{};  ///< "name: why" for event files not trusted/parsed
  FileRead diagnosis{};                 ///< diagnosis.json of the run root
  std::size_t nodes_left_out = 0;       ///< run directories over the reader's node cap
};

enum class Phase { kPreflight, kWarmup, kRunning, kStopping, kCapturing, kEnded, kUnknown };
/// "preflight", "warm-up", "running", "stopping", "capturing", "ended", "unknown".
const char* PhaseName(Phase phase);

/// A hang or failure event one node posted for the others (.events/).
struct JobEvent {
  std::string kind{};  ///< hang | failure
  std::string node{};
  double time_unix = 0;
  std::string time_utc{};
  std::string trigger{};
  std::string headline{};
  std::string file{};
};

/// One row of the view.
struct Row {
  std::string name{};  ///< run directory name (or the node name when tasks are grouped)
  std::string dir{};   ///< the run directory's name (the worst task's when grouped)
  int tasks = 1;       ///< run directories this row stands for (tasks grouped by node)
  Phase phase = Phase::kUnknown;
  double in_phase_s = -1;        ///< -1 = unknown
  double output_age_s = -1;      ///< since the job's last output line (-1 = none seen)
  double heartbeat_age_s = -1;   ///< since the job's last heartbeat touch (-1 = never)
  double supervisor_age_s = -1;  ///< since the supervisor last published live.json
  std::string last_event{};      ///< last recognised log line: "signature (category)"
  std::optional<int> exit_status{};
  std::string verdict{};  ///< "ok", "exit 1", a bundle's category: headline
  std::string bundle{};   ///< newest bundle directory name
  bool stale = false;     ///< silent longer than the stale limit, or the supervisor is silent
  bool posted_hang = false;
  std::vector<std::string> problems{};  ///< files that could not be read, with why
  int badness = 0;                      ///< sort key: higher is worse
  std::string bundle_summary{};         ///< newest bundle's headline and fix
};

struct Snapshot {
  std::string root{};
  double now_unix = 0;
  std::string state{};  ///< starting | running | hang | failed | ended | empty | unreadable
  int nodes = 0;
  std::string slowest{}, stalest{};  ///< "B (warm-up for 40s)", "A (silent 12s)"
  std::vector<JobEvent> events{};
  std::vector<std::string> problems{};  ///< of the run root and its .events/
  std::string diagnosis{};              ///< diagnosis.json's first cause, when written
  double stale_after_s = 60;
  std::vector<Row> rows{};  ///< worst first
};

struct WatchOptions {
  bool per_task = false;            ///< one row per run directory instead of per node
  double stale_after_s = 60;        ///< silence that marks a running row stale
  double supervisor_silent_s = 90;  ///< live.json older than this while running: stale
};

/// Parsed per-node state, before ages are taken against `now` (a memo keeps it while the
/// node's files do not change: parsing 1024 status.json each second would cost a core).
struct NodeState {
  Row row{};  ///< fields that do not depend on now
  double phase_since_unix = 0, last_output_unix = 0, heartbeat_unix = 0, live_unix = 0;
};
/// What the memo keeps per node: the state for the node's stat signature, and the part parsed
/// from status.json alone (a changed live.json, every 2 s on a printing job, then costs the
/// small live.json's parse, not the status.json's too).
struct MemoEntry {
  std::string signature{};  ///< the node's stat signature when `state` was parsed
  NodeState state{};
  bool status_valid = false;  ///< `after_status` holds the parse of `status_text`
  std::string status_text{};
  double status_mtime = 0;
  NodeState after_status{};
};
using ParseMemo = std::map<std::string, MemoEntry>;

/// Parses one run directory's files (pure).
NodeState ParseNode(const NodeFiles& node);

/// The view of `files` at `now_unix`. `memo` (optional) keeps ParseNode results between
/// refreshes, keyed by the node's stat signature.
Snapshot BuildSnapshot(const RunRootFiles& files, double now_unix, const WatchOptions& options = {},
                       ParseMemo* memo = nullptr);

/// The snapshot as JSON (schema safe-launch.watch/1, doc/manual.md "Watching a job").
std::string SnapshotJson(const Snapshot& snapshot);

/// "12s", "3m04s", "2h10m", "3d4h"; "-" for a negative age.
std::string FormatAge(double seconds);

}  // namespace sl::watch
