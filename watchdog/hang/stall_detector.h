#pragma once
// The hang monitor's decision of a tick as a pure function: observations in (a hang signature
// seen in the output, when the job was last heard from, the heartbeat file's last touch, a
// notice from another node), the trigger out. It makes no system call and reads no clock, so
// every rule is unit tested with literal times; HangMonitor::OnTick gathers the observations
// (the heartbeat's stat() included) and carries out the capture.
//
// The rules (doc/manual.md, "Hang detection"), first that holds wins:
//   * a hang signature in the output (NCCL watchdog timeout, ...) fires kSignature at once;
//   * with stall_timeout_s > 0: once the job touched the heartbeat file (since it started) the
//     heartbeat alone counts -- kHeartbeat when its last touch is stall_timeout_s old, output or
//     not; before that, kStall when nothing was heard from the job for stall_timeout_s;
//   * another node's hang notice fires kPeerHang (this node captures while its ranks are in it).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "diagnose/verdict.h"

namespace sl::hang {

/// What the monitor saw by the tick.
struct StallObservations {
  using Clock = std::chrono::steady_clock;
  bool signature = false;           ///< a hang signature was matched in the output
  Clock::time_point last_output{};  ///< when the job was last heard from (steady clock)
  /// Wall-clock nanoseconds of the heartbeat file's last touch since the job started; nullopt
  /// while it was never touched (or there is none).
  std::optional<std::int64_t> heartbeat_ns;
  std::int64_t wall_now_ns = 0;  ///< the wall clock at the tick (for heartbeat_ns)
  bool peer_notice = false;      ///< another node's hang notice is waiting
};

/// The tick's decision.
struct StallDecision {
  diagnose::Trigger trigger = diagnose::Trigger::kNone;
  /// "output" or "heartbeat": what the stall rule measured (the summary's stall_source); "" when
  /// it was not evaluated (a signature fired first, or the stall timeout is off).
  std::string source;
  double silent_s = 0;  ///< how long that source has been silent, never negative
};

class StallDetector {
 public:
  using Clock = StallObservations::Clock;
  /// `stall_timeout_s` <= 0 turns the stall and heartbeat rules off.
  explicit StallDetector(double stall_timeout_s) : stall_timeout_s_(stall_timeout_s) {}

  /// Decides on the observations of the tick at `now`.
  StallDecision On(const StallObservations& observations, Clock::time_point now) const;

  double StallTimeout() const { return stall_timeout_s_; }

 private:
  double stall_timeout_s_;
};

/// The thin reader beside it: the heartbeat file's mtime (wall-clock ns) when it was touched at
/// or after `not_before_ns` (the job's start); std::nullopt when older, missing or unreadable.
std::optional<std::int64_t> HeartbeatTouchNs(const std::string& path, std::int64_t not_before_ns);

}  // namespace sl::hang
