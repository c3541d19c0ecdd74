#pragma once
// The compact form a Flight Recorder dump is kept in once read: per entry only what the
// cross-rank analysis needs, strings (op names, shapes, dtypes, file names) interned once for the
// whole job. 4096 ranks x 2000 entries is 8M entries of 56 bytes: the pickles' generic trees are
// gone as soon as each file is read.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sl::diagnose::fr {

/// An entry's state as torch writes it. Gloo leaves every entry "scheduled" (see analysis.h).
enum class State : std::uint8_t { kScheduled, kStarted, kCompleted, kUnknown };
std::string_view StateName(State s);

/// One Flight Recorder entry (one collective or p2p op as one rank issued it).
struct Entry {
  std::int64_t seq = 0;  ///< collective_seq_id, or p2p_seq_id when is_p2p
  std::int64_t t_created = 0, t_started = 0, t_completed = 0;  ///< ns; 0 when null
  std::uint32_t pg = 0;                                        ///< process-group name (interned)
  std::uint32_t op = 0;      ///< profiling_name, e.g. "nccl:all_reduce" (interned)
  std::uint32_t shape = 0;   ///< "in_sizes|in_dtypes|out_sizes|out_dtypes" (interned)
  std::uint32_t frames = 0;  ///< index into Strings-backed stack table (0: none)
  std::uint32_t index = 0;   ///< position in the dump's entries list
  State state = State::kUnknown;
  bool is_p2p = false;
};

/// pg_status of one process group in one dump.
struct PgStatus {
  std::uint32_t pg = 0;
  std::int64_t enqueued = -1, started = -1, completed = -1;
};

/// A Python frame of an entry's stack.
struct Frame {
  std::uint32_t name = 0, file = 0;
  std::int64_t line = 0;
};

/// A read error for one dump: the file, the byte offset (-1 when not about a byte) and what.
struct DumpError {
  std::string file;
  std::int64_t offset = -1;
  std::string message;
};

/// One rank's dump, compacted.
struct RankDump {
  int rank = -1;
  std::string file;
  std::string version, comm_lib;
  std::string host;   ///< from the bundle holding the file, "" when unknown
  bool gloo = false;  ///< ops named "gloo:..." (states are not tracked, see analysis.h)
  std::vector<Entry> entries;
  std::vector<PgStatus> status;
};

/// Interned strings shared by every reader thread. Intern() locks; a thread keeps its own cache
/// in front (LocalStrings) so the lock is taken once per distinct string per thread.
class Strings {
 public:
  Strings();
  std::uint32_t Intern(std::string_view s);
  /// Valid for the table's lifetime (a deque never moves its elements).
  const std::string& at(std::uint32_t id) const { return all_[id]; }
  std::size_t size() const { return all_.size(); }

 private:
  std::mutex mu_;
  std::deque<std::string> all_;
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

/// A thread's cache in front of Strings.
class LocalStrings {
 public:
  explicit LocalStrings(Strings* global) : global_(global) {}
  std::uint32_t Get(std::string_view s);

 private:
  // Transparent: a lookup by string_view builds no std::string (C++20 heterogeneous find).
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Strings* global_;
  std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> cache_;
};

/// Stacks of frames, interned (most entries of a job share a handful of stacks).
class Stacks {
 public:
  Stacks();
  std::uint32_t Intern(const std::vector<Frame>& frames);
  const std::vector<Frame>& at(std::uint32_t id) const { return all_[id]; }

 private:
  std::mutex mu_;
  std::deque<std::vector<Frame>> all_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

/// A process group as the dumps' pg_config describe it.
struct PgInfo {
  std::string name, desc;
  std::vector<int> members;  ///< global ranks, from pg_config "ranks"
};

}  // namespace sl::diagnose::fr
