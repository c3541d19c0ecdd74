// The stall detector's rules with literal times (watchdog/hang/stall_detector.h): no clock, no
// file, no process.
#include "watchdog/hang/stall_detector.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

using sl::diagnose::Trigger;
using sl::hang::HeartbeatTouchNs;
using sl::hang::StallDetector;
using sl::hang::StallObservations;
using namespace std::chrono_literals;

namespace {

using Clock = StallDetector::Clock;
const Clock::time_point kT0{std::chrono::hours(1)};
constexpr std::int64_t kWall0 = 1764594129LL * 1000000000LL;

StallObservations Quiet(std::chrono::milliseconds silent_for) {
  StallObservations o;
  o.last_output = kT0 - silent_for;
  o.wall_now_ns = kWall0;
  return o;
}

}  // namespace

TEST_CASE("output silent for less than the stall timeout fires nothing") {
  const auto d = StallDetector(5).On(Quiet(4999ms), kT0);
  CHECK(d.trigger == Trigger::kNone);
  CHECK(d.source == "output");
  CHECK(d.silent_s == Approx(4.999));
}

TEST_CASE("output silent for the stall timeout fires a stall, measured from the output") {
  const auto d = StallDetector(5).On(Quiet(5000ms), kT0);
  CHECK(d.trigger == Trigger::kStall);
  CHECK(d.source == "output");
  CHECK(d.silent_s == Approx(5.0));
}

TEST_CASE("a read stamped after the tick took its time counts as no silence") {
  const auto d = StallDetector(5).On(Quiet(-300ms), kT0);
  CHECK(d.trigger == Trigger::kNone);
  CHECK(d.silent_s == 0.0);
}

TEST_CASE("a hang signature fires at once and before any stall") {
  auto o = Quiet(10000ms);
  o.signature = true;
  o.peer_notice = true;
  const auto d = StallDetector(5).On(o, kT0);
  CHECK(d.trigger == Trigger::kSignature);
  CHECK(d.source.empty());  // the stall rule was not evaluated: the summary names no source
}

TEST_CASE("once the heartbeat was touched it alone counts, output or not") {
  auto o = Quiet(0ms);                        // printing all the time...
  o.heartbeat_ns = kWall0 - 6'000'000'000LL;  // ...but the training loop stopped touching
  auto d = StallDetector(5).On(o, kT0);
  CHECK(d.trigger == Trigger::kHeartbeat);
  CHECK(d.source == "heartbeat");
  CHECK(d.silent_s == Approx(6.0));

  o = Quiet(60000ms);  // silent a minute, but the heartbeat is fresh: not a hang
  o.heartbeat_ns = kWall0 - 1'000'000'000LL;
  d = StallDetector(5).On(o, kT0);
  CHECK(d.trigger == Trigger::kNone);
  CHECK(d.source == "heartbeat");
}

TEST_CASE("a stall timeout of 0 turns the stall and heartbeat rules off, not the others") {
  auto o = Quiet(3600000ms);
  o.heartbeat_ns = kWall0 - 3600'000'000'000LL;
  auto d = StallDetector(0).On(o, kT0);
  CHECK(d.trigger == Trigger::kNone);
  CHECK(d.source.empty());
  o.signature = true;
  CHECK(StallDetector(0).On(o, kT0).trigger == Trigger::kSignature);
}

TEST_CASE("another node's notice fires a peer hang only when nothing here fired first") {
  auto o = Quiet(1000ms);
  o.peer_notice = true;
  CHECK(StallDetector(5).On(o, kT0).trigger == Trigger::kPeerHang);
  o = Quiet(5000ms);
  o.peer_notice = true;
  CHECK(StallDetector(5).On(o, kT0).trigger == Trigger::kStall);  // its own stall is declared here
}

TEST_CASE("the heartbeat reader takes a touch since the job started, nothing older or missing") {
  char path[] = "/tmp/sl-heartbeat-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto t = HeartbeatTouchNs(path, now_ns - 60'000'000'000LL);
  REQUIRE(t);
  CHECK(*t <= now_ns + 1'000'000'000LL);
  CHECK_FALSE(HeartbeatTouchNs(path, now_ns + 3600'000'000'000LL));  // touched before the start
  std::remove(path);
  CHECK_FALSE(HeartbeatTouchNs(path, 0));
}
