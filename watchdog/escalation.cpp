#include "watchdog/escalation.h"

#include <fmt/format.h>

#include <algorithm>

namespace sl::watchdog {
namespace {

using Kind = EscalationAction::Kind;

std::string Seconds(std::chrono::milliseconds d) {
  return fmt::format("{:g}", static_cast<double>(d.count()) / 1000.0);
}

}  // namespace

void Escalation::StartStop(const EscalationEvent& e, Clock::time_point now) {
  stop_ = true;
  by_ = e.by;
  reason_ = e.reason;
  grace_deadline_ = now + times_.kill_grace;
}

std::vector<EscalationAction> Escalation::On(const EscalationEvent& e, Clock::time_point now) {
  if (finished_) return {};
  switch (e.kind) {
    case EscalationEvent::Kind::kStopSignal:
      return OnStopSignal(e, now);
    case EscalationEvent::Kind::kStopRequest:
      if (stop_ || job_exited_) return {};
      StartStop(e, now);
      return {{.kind = Kind::kTermJob,
               .text = "stop (" + e.by + ": " + e.reason + "): sent SIGTERM to the job (pid ",
               .tail = "), descendants get TERM/KILL in " + Seconds(times_.kill_grace) + " s"}};
    case EscalationEvent::Kind::kTick:
      return job_exited_ ? OnTickExited(e, now) : OnTickRunning(now);
    case EscalationEvent::Kind::kJobExited:
      job_exited_ = true;
      if (e.leftovers == 0) {
        finished_ = true;
        return {{.kind = Kind::kFinish}};
      }
      sweep_kill_at_ = now + times_.sweep_grace;
      return {{.kind = Kind::kTermAll,
               .text = "the job exited; sent SIGTERM to ",
               .tail = " leftover process(es):" + e.leftover_list}};
  }
  return {};
}

std::vector<EscalationAction> Escalation::OnStopSignal(const EscalationEvent& e,
                                                       Clock::time_point now) {
  if (job_exited_) return {};
  // One stop from one sender may arrive as a burst (slurmstepd: two SIGTERMs ~20 ms apart);
  // counted once, else a time limit or scancel would skip the grace it is meant to give.
  const bool same_burst = e.sender >= 0 && e.sender == last_sender_ && last_signal_ &&
                          now - *last_signal_ < times_.stop_burst;
  last_sender_ = e.sender;
  last_signal_ = now;
  if (same_burst)
    return {{.kind = Kind::kLog,
             .text = e.by + " again within " + Seconds(times_.stop_burst) +
                     " s: the same stop, the grace goes on"}};
  // The signal itself was already forwarded to the job by the loop: nothing more to send now.
  if (++stop_signals_ == 1) {
    if (!stop_) StartStop(e, now);
    return {};
  }
  if (escalated_) return {};
  // A second SIGINT/SIGTERM: the user (or Slurm) is out of patience -- skip the grace.
  grace_deadline_ = now;
  return {{.kind = Kind::kLog, .text = "second " + e.by + ": skipping the rest of the grace"}};
}

std::vector<EscalationAction> Escalation::OnTickRunning(Clock::time_point now) {
  std::vector<EscalationAction> out;
  if (grace_deadline_ && !escalated_ && now >= *grace_deadline_) {
    escalated_ = true;
    out.push_back({.kind = Kind::kTermAll,
                   .text = "grace ran out: sent SIGTERM to the job and ",
                   .tail = " descendant(s); SIGKILL follows in " +
                           std::to_string(times_.sweep_grace.count()) + " ms"});
    kill_deadline_ = now + times_.sweep_grace;
  }
  if (kill_deadline_ && now >= *kill_deadline_) {
    out.push_back(
        {.kind = Kind::kKillAll, .text = "sent SIGKILL to ", .tail = " remaining process(es)"});
    kill_deadline_ = now + times_.kill_retry;  // again if one survived
  }
  return out;
}

std::vector<EscalationAction> Escalation::OnTickExited(const EscalationEvent& e,
                                                       Clock::time_point now) {
  if (e.leftovers == 0) {
    finished_ = true;
    return {{.kind = Kind::kFinish}};
  }
  if (!sweep_kill_at_ || now < *sweep_kill_at_) return {};
  std::vector<EscalationAction> out{
      {.kind = Kind::kKillAll, .text = "sent SIGKILL to ", .tail = " leftover process(es)"}};
  sweep_kill_at_ = now + times_.kill_retry;
  if (++kill_rounds_ > times_.max_kill_rounds) {
    finished_ = true;
    out.push_back({.kind = Kind::kFinish,
                   .text = std::to_string(e.leftovers) +
                           " process(es) survived SIGKILL (uninterruptible sleep?); "
                           "giving up"});
  }
  return out;
}

std::optional<Escalation::Clock::time_point> Escalation::NextDeadline() const {
  if (job_exited_) return sweep_kill_at_;  // the grace and its kill no longer apply
  std::optional<Clock::time_point> next = escalated_ ? std::nullopt : grace_deadline_;
  if (kill_deadline_ && (!next || *kill_deadline_ < *next)) next = kill_deadline_;
  return next;
}

}  // namespace sl::watchdog
