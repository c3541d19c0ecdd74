#pragma once
// The stop/escalation/sweep rules of the supervisor loop as a pure state machine: events in
// (a stop signal, a stop request, a tick, the job's exit), actions out (TERM the job, TERM or
// KILL every descendant, finish). It makes no system call and reads no clock, so every rule is
// unit tested with literal times; Supervisor::Run feeds it and carries out its actions.
//
// The rules (doc/manual.md, "Stopping a job"):
//   * the first stop (a forwarded SIGTERM/SIGINT, or RequestStop which also TERMs the job)
//     starts the grace (kill_grace); a second SIGTERM/SIGINT skips the rest of it, unless it is
//     part of the same burst (same sender within stop_burst: slurmstepd signals the job step
//     twice, ~20 ms apart, for one stop -- that is not a user out of patience);
//   * when the grace runs out, every descendant gets TERM, and KILL sweep_grace later, repeated
//     every kill_retry while any survives;
//   * once the job exited, leftovers get TERM, then KILL after sweep_grace, repeated every
//     kill_retry; after max_kill_rounds the loop gives up (processes in D state cannot die).
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sl::watchdog {

/// What the loop saw.
struct EscalationEvent {
  enum class Kind { kStopSignal, kStopRequest, kTick, kJobExited };
  Kind kind = Kind::kTick;
  std::string by{};      ///< kStopSignal: "SIGTERM from pid 812 (slurmstepd)"; kStopRequest: who
  std::string reason{};  ///< kStopSignal/kStopRequest: why
  /// kTick after the job exited and kJobExited: live descendants left (0 = none).
  std::size_t leftovers = 0;
  std::string leftover_list{};  ///< kJobExited: " 812(python) 813(python)" for the log
  /// kStopSignal: the sender's pid (0 = the terminal/kernel, -1 = unknown: never one burst).
  long sender = -1;
};

/// What the loop must do, in order. The event-log line is `text`, then (kTermJob, kTermAll,
/// kKillAll) a number only the loop knows -- the job's pid, or how many processes it signalled
/// -- then `tail`.
struct EscalationAction {
  enum class Kind { kTermJob, kTermAll, kKillAll, kLog, kFinish };
  Kind kind = Kind::kLog;
  std::string text{};  ///< kFinish: a warning to log, or "" when nothing is left
  std::string tail{};
  bool operator==(const EscalationAction&) const = default;
};

struct EscalationTimes {
  std::chrono::milliseconds kill_grace{30000};
  std::chrono::milliseconds sweep_grace{2000};
  std::chrono::milliseconds kill_retry{500};
  int max_kill_rounds = 10;
  /// Stop signals from one sender this close together are one stop (see the rules above).
  std::chrono::milliseconds stop_burst{200};
};

class Escalation {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Escalation(EscalationTimes times) : times_(times) {}

  /// Feeds one event observed at `now`; returns the actions to take.
  std::vector<EscalationAction> On(const EscalationEvent& event, Clock::time_point now);
  /// The earliest time a kTick is due for a pending deadline (the loop's poll timeout).
  std::optional<Clock::time_point> NextDeadline() const;

  bool Stopping() const { return stop_; }
  bool Escalated() const { return escalated_; }
  bool JobExited() const { return job_exited_; }
  bool Finished() const { return finished_; }
  /// The first stop's requester and reason ("" when the job ended on its own).
  const std::string& StoppedBy() const { return by_; }
  const std::string& StopReason() const { return reason_; }

 private:
  std::vector<EscalationAction> OnStopSignal(const EscalationEvent& e, Clock::time_point now);
  std::vector<EscalationAction> OnTickRunning(Clock::time_point now);
  std::vector<EscalationAction> OnTickExited(const EscalationEvent& e, Clock::time_point now);
  void StartStop(const EscalationEvent& e, Clock::time_point now);

  EscalationTimes times_;
  bool stop_ = false;
  bool escalated_ = false;
  bool job_exited_ = false;
  bool finished_ = false;
  int stop_signals_ = 0;
  int kill_rounds_ = 0;
  std::string by_, reason_;
  std::optional<Clock::time_point> grace_deadline_, kill_deadline_, sweep_kill_at_;
  long last_sender_ = -1;                         // the previous stop signal's sender
  std::optional<Clock::time_point> last_signal_;  // and when it came
};

}  // namespace sl::watchdog
