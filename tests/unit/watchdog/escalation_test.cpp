// The escalation rules on literal times: no process, no clock.
#include "watchdog/escalation.h"

#include <catch2/catch.hpp>

namespace sl::watchdog {
namespace {

using namespace std::chrono_literals;
using Kind = EscalationAction::Kind;
using Ev = EscalationEvent::Kind;
using T = Escalation::Clock::time_point;

const T t0{std::chrono::seconds(1000)};

Escalation Make() { return Escalation(EscalationTimes{30s, 2s, 500ms, 3}); }

std::vector<Kind> Kinds(const std::vector<EscalationAction>& a) {
  std::vector<Kind> k;
  for (const auto& x : a) k.push_back(x.kind);
  return k;
}

EscalationEvent Signal(const std::string& by = "SIGTERM from pid 7 (slurmstepd)") {
  return {.kind = Ev::kStopSignal, .by = by, .reason = "forwarded SIGTERM to the job"};
}
EscalationEvent Tick(std::size_t leftovers = 0) {
  EscalationEvent e{.kind = Ev::kTick};
  e.leftovers = leftovers;
  return e;
}
EscalationEvent Exited(std::size_t leftovers, std::string list = "") {
  EscalationEvent e{.kind = Ev::kJobExited};
  e.leftovers = leftovers;
  e.leftover_list = std::move(list);
  return e;
}

}  // namespace

TEST_CASE("a job that exits on its own with nothing left finishes without any stop") {
  auto e = Make();
  CHECK(e.On(Tick(), t0).empty());
  CHECK_FALSE(e.NextDeadline());
  CHECK(Kinds(e.On(Exited(0), t0 + 1s)) == std::vector{Kind::kFinish});
  CHECK(e.Finished());
  CHECK_FALSE(e.Stopping());
  CHECK(e.StoppedBy().empty());
}

TEST_CASE(
    "a stop signal starts the grace without sending anything more, the grace then escalates") {
  auto e = Make();
  CHECK(e.On(Signal(), t0).empty());  // the loop already forwarded the signal itself
  CHECK(e.Stopping());
  CHECK(e.StoppedBy() == "SIGTERM from pid 7 (slurmstepd)");
  CHECK(e.NextDeadline() == t0 + 30s);
  CHECK(e.On(Tick(), t0 + 29s).empty());
  auto a = e.On(Tick(), t0 + 30s);
  REQUIRE(Kinds(a) == std::vector{Kind::kTermAll});
  CHECK(a[0].text + "4" + a[0].tail ==
        "grace ran out: sent SIGTERM to the job and 4 descendant(s); SIGKILL follows in 2000 ms");
  CHECK(e.Escalated());
  CHECK(e.NextDeadline() == t0 + 32s);
  CHECK(e.On(Tick(), t0 + 31s).empty());
  CHECK(Kinds(e.On(Tick(), t0 + 32s)) == std::vector{Kind::kKillAll});
  // Repeated every kill_retry while anything survives.
  CHECK(e.NextDeadline() == t0 + 32500ms);
  CHECK(Kinds(e.On(Tick(), t0 + 32500ms)) == std::vector{Kind::kKillAll});
}

TEST_CASE("a second stop signal skips the rest of the grace, a third changes nothing") {
  auto e = Make();
  CHECK(e.On(Signal(), t0).empty());
  auto a = e.On(Signal("SIGINT from the terminal/kernel"), t0 + 1s);
  REQUIRE(a.size() == 1);
  CHECK(a[0] ==
        EscalationAction{.kind = Kind::kLog,
                         .text = "second SIGINT from the terminal/kernel: skipping the rest of the "
                                 "grace"});
  CHECK(e.NextDeadline() == t0 + 1s);
  CHECK(Kinds(e.On(Tick(), t0 + 1s)) == std::vector{Kind::kTermAll});
  CHECK(e.On(Signal(), t0 + 1200ms).empty());  // already escalated
  // The first stop's sender stays the one reported.
  CHECK(e.StoppedBy() == "SIGTERM from pid 7 (slurmstepd)");
}

TEST_CASE("a stop request TERMs the job once and keeps the first requester") {
  auto e = Make();
  auto a =
      e.On({.kind = Ev::kStopRequest, .by = "hang detector", .reason = "hang detected: stall"}, t0);
  REQUIRE(Kinds(a) == std::vector{Kind::kTermJob});
  CHECK(a[0].text + "42" + a[0].tail ==
        "stop (hang detector: hang detected: stall): sent SIGTERM to the job (pid 42), "
        "descendants get TERM/KILL in 30 s");
  CHECK(e.On({.kind = Ev::kStopRequest, .by = "someone", .reason = "again"}, t0 + 1s).empty());
  // A signal after the request neither restarts the grace nor takes over the report.
  CHECK(e.On(Signal(), t0 + 5s).empty());
  CHECK(e.NextDeadline() == t0 + 30s);
  CHECK(e.StoppedBy() == "hang detector");
  CHECK(e.StopReason() == "hang detected: stall");
}

TEST_CASE(
    "leftovers after the job exits get TERM, then KILL after the sweep grace, then we give up") {
  auto e = Make();
  auto a = e.On(Exited(2, " 10(a) 11(b)"), t0);
  REQUIRE(Kinds(a) == std::vector{Kind::kTermAll});
  CHECK(a[0].text + "2" + a[0].tail ==
        "the job exited; sent SIGTERM to 2 leftover process(es): 10(a) 11(b)");
  CHECK(e.NextDeadline() == t0 + 2s);
  CHECK(e.On(Tick(2), t0 + 1s).empty());
  CHECK(Kinds(e.On(Tick(1), t0 + 2s)) == std::vector{Kind::kKillAll});
  CHECK(Kinds(e.On(Tick(1), t0 + 2500ms)) == std::vector{Kind::kKillAll});
  CHECK(Kinds(e.On(Tick(1), t0 + 3s)) == std::vector{Kind::kKillAll});
  // max_kill_rounds = 3: the fourth round gives up (a process in D state cannot die).
  auto last = e.On(Tick(1), t0 + 3500ms);
  CHECK(Kinds(last) == std::vector{Kind::kKillAll, Kind::kFinish});
  CHECK(last[1].text.find("survived SIGKILL") != std::string::npos);
  CHECK(e.Finished());
  CHECK(e.On(Tick(1), t0 + 4s).empty());
}

TEST_CASE("the sweep ends as soon as nothing is left, and stops are ignored once the job exited") {
  auto e = Make();
  CHECK(e.On(Signal(), t0).empty());
  CHECK(Kinds(e.On(Exited(1), t0 + 1s)) == std::vector{Kind::kTermAll});
  // The grace deadline no longer applies: only the sweep's.
  CHECK(e.NextDeadline() == t0 + 3s);
  CHECK(e.On(Signal(), t0 + 1500ms).empty());
  CHECK(e.On({.kind = Ev::kStopRequest, .by = "x", .reason = "y"}, t0 + 1500ms).empty());
  CHECK(Kinds(e.On(Tick(0), t0 + 1600ms)) == std::vector{Kind::kFinish});
  CHECK_FALSE(e.Escalated());
}

TEST_CASE("a zero grace escalates on the next tick") {
  Escalation e(EscalationTimes{0ms, 0ms, 500ms, 10});
  CHECK(e.On(Signal(), t0).empty());
  CHECK(Kinds(e.On(Tick(), t0)) == std::vector{Kind::kTermAll, Kind::kKillAll});
}

}  // namespace sl::watchdog

namespace sl::watchdog {

TEST_CASE("a burst of stop signals from one sender counts once and keeps the grace") {
  auto e = Make();
  auto first = Signal();
  first.sender = 7;
  CHECK(e.On(first, t0).empty());
  // slurmstepd's second SIGTERM of the same stop, 20 ms later: logged, the grace goes on.
  auto a = e.On(first, t0 + 20ms);
  REQUIRE(Kinds(a) == std::vector{Kind::kLog});
  CHECK(a[0].text.find("the same stop") != std::string::npos);
  CHECK(e.NextDeadline() == t0 + 30s);
  CHECK(e.On(Tick(), t0 + 1s).empty());
  // The same sender again later, or another sender at once, is a second stop.
  CHECK(Kinds(e.On(first, t0 + 2s)) == std::vector{Kind::kLog});
  CHECK(e.NextDeadline() == t0 + 2s);
  auto other = Make();
  CHECK(other.On(first, t0).empty());
  auto by_other = Signal("SIGTERM from pid 8 (bash)");
  by_other.sender = 8;
  CHECK(Kinds(other.On(by_other, t0 + 10ms)) == std::vector{Kind::kLog});
  CHECK(other.NextDeadline() == t0 + 10ms);
  // An unknown sender is never taken for a burst.
  auto unknown = Make();
  CHECK(unknown.On(Signal(), t0).empty());
  CHECK(Kinds(unknown.On(Signal(), t0 + 10ms)) == std::vector{Kind::kLog});
  CHECK(unknown.NextDeadline() == t0 + 10ms);
}

}  // namespace sl::watchdog
