#pragma once
// live.json: what a running supervisor publishes for `safe-launch watch` (and people) in its run
// directory between status.json's start and end: its phase (running, capturing, stopping), when
// the job last wrote a line, its line counts, the last line the catalog recognised and the last
// few output lines (redacted) in live.tail beside it (a watcher over 1024 nodes parses live.json
// every refresh, the tail only for the one node it shows in detail). Written through the one atomic
// writer on a thread of its own, so a slow NFS never holds up the supervisor's tick; at most every
// 2 s while the job prints and every 15 s while it is silent (so a watcher can tell a silent job
// from a dead supervisor).
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sl::hang {

/// The published state (schema safe-launch.live/1; doc/manual.md "Watching a job").
struct LiveState {
  std::string phase = "running";  ///< running | capturing | stopping | ended
  double phase_since_unix = 0;
  double last_output_unix = 0;  ///< 0 = no output yet
  std::uint64_t stdout_lines = 0, stderr_lines = 0;
  std::string event_signature{}, event_category{}, event_severity{}, event_line{};
  double event_unix = 0;            ///< when that line was read; 0 = none recognised yet
  std::vector<std::string> tail{};  ///< last output lines (stdout then stderr), redacted
};

/// `state` as live.json text, stamped `updated_unix` (without the tail: see LiveTail).
std::string LiveJson(const LiveState& state, double updated_unix);
/// The tail as live.tail text, one line each.
std::string LiveTail(const LiveState& state);

inline constexpr auto kLiveBusyPeriod = std::chrono::seconds(2);
inline constexpr auto kLiveIdlePeriod = std::chrono::seconds(15);

/// Writes <run_dir>/live.json on its own thread; the newest content wins (coalesced).
class LiveWriter {
 public:
  explicit LiveWriter(std::string run_dir);
  /// Stops the thread; waits for it at most a second (a write stuck on a dead NFS is left
  /// behind, detached).
  ~LiveWriter();
  LiveWriter(const LiveWriter&) = delete;
  LiveWriter& operator=(const LiveWriter&) = delete;
  /// Queues live.json `content` and, when not empty, live.tail `tail`; returns at once.
  void Publish(std::string content, std::string tail = {});
  /// Waits until what was queued is written, at most `deadline`.
  bool Flush(std::chrono::milliseconds deadline);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sl::hang
