#pragma once
// The hang monitor's side of the coordination of a job's nodes (peer_events.h): it opens the
// channel at the job's start, remembers the rank failure torchrun reports while the job still
// runs (and tells the other nodes at once, named by global rank), posts "hang" when this node
// declares one and "failure" when its job fails, finds another node's hang notice to capture
// on, and gathers what a capture's verdict must say of the others (PeerNotes).
// Without an events directory only the rank-failure memory works (a hang that follows a rank
// failure of this node is that failure's consequence, peers or not).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "diagnose/signatures.h"
#include "diagnose/verdict.h"
#include "watchdog/hang/job_control.h"
#include "watchdog/hang/peer_events.h"
#include "watchdog/hang/peer_verdict.h"

namespace sl::hang {

struct PeerCoordinatorOptions {
  std::string events_dir;  ///< <job run root>/.events; "" = no coordination
  std::string node;        ///< this node's name in events (never "")
  std::chrono::milliseconds poll{500};
  Environment job_env;  ///< redaction of what leaves the node; the launch (LaunchOf)
  std::vector<std::string> job_argv;
  std::string proc_root = "/";  ///< root of /proc (tests)
};

class PeerCoordinator {
 public:
  /// The verdict of this node so far, quickly (no collectors), for an event.
  using QuickVerdict =
      std::function<diagnose::Verdict(diagnose::Trigger, std::optional<int> exit_status)>;
  PeerCoordinator(PeerCoordinatorOptions options, QuickVerdict verdict);
  ~PeerCoordinator();

  /// The job's control (may stay null in tests); set before Start.
  void SetControl(JobControl* control) { control_ = control; }
  /// At the job's start: opens the channel when there is an events directory. Events older
  /// than the job by more than a minute are an earlier job's.
  void Start(std::chrono::system_clock::time_point start_wall);
  /// The channel, null without coordination.
  PeerChannel* Channel() const { return peers_.get(); }

  /// Pump threads: a match of this node's output. torchrun's "failed (exitcode: ...)" before
  /// any hang signature or capture is remembered as this node's rank failure.
  void NoteMatch(const diagnose::Match& m, int stream, std::uint64_t line_no);
  /// Main thread, every tick until a capture: says once that the channel is stuck, keeps the
  /// pid -> rank map fresh, and tells the other nodes of this node's rank failure once.
  void OnTick(watchdog::Clock::time_point now, bool captured);

  /// Another node's hang notice waiting to be answered (a failure that was a hang there, a
  /// watchdog timeout that took its ranks down, is one too); std::nullopt when none.
  std::optional<PeerEvent> FirstNotice() const;
  /// The notice this node's capture answers (logged).
  void Answer(PeerEvent notice);
  const std::optional<PeerEvent>& Answered() const { return answered_; }

  /// A hang declared here: tells the other nodes (before the capture, so theirs run meanwhile).
  void PostHang(diagnose::Trigger trigger);
  /// This node's job failed on its own: tells the other nodes, unless already told.
  void PostJobFailure(std::optional<int> exit_status);
  /// The job ended with a failure before a notice was seen: one last bounded read; a hang
  /// posted before now is taken as the cause (Answered(), EndedOnNotice()). False otherwise,
  /// and when this node's own rank failed first.
  bool NoticeBeforeEnd();
  bool EndedOnNotice() const { return ended_on_notice_; }

  /// What a capture started at `at_unix` must say of the others and of this node's rank
  /// failure (peer_verdict.h).
  PeerNotes NotesAt(double at_unix) const;
  /// At the job's exit: waits a little for the last event to be written; logs what went wrong.
  void Finish();

 private:
  /// The rank failure torchrun reported while the job still runs, as an event.
  std::optional<PeerEvent> LocalFailure() const;
  /// Another node's root failure that a capture at `by_unix` follows from.
  std::optional<PeerEvent> CausingFailure(double by_unix) const;
  void RefreshRankPids(watchdog::Clock::time_point now);
  void Post(const char* kind, diagnose::Trigger trigger, std::optional<int> exit_status,
            const PeerEvent* rank_failure = nullptr);

  PeerCoordinatorOptions options_;
  QuickVerdict verdict_;
  JobControl* control_ = nullptr;
  std::unique_ptr<PeerChannel> peers_;
  // A rank failure seen in the output (torchrun's "failed (exitcode: ...)" line), pump threads.
  struct RankFailure {
    double time_unix = 0;
    int exitcode = 0;
    int local_rank = -1;
    pid_t pid = 0;
    std::string source;      // stdout / stderr
    std::uint64_t line = 0;  // its line number there
  };
  mutable std::mutex rank_failure_mu_;
  std::optional<RankFailure> rank_failure_;
  std::map<pid_t, int> rank_by_pid_;  // main thread
  watchdog::Clock::time_point rank_pids_at_{};
  bool failure_posted_ = false;
  bool stuck_logged_ = false;
  std::optional<PeerEvent> answered_;  // the notice being answered (main thread)
  bool ended_on_notice_ = false;
};

}  // namespace sl::hang
