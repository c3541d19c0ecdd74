#include "watchdog/hang/stall_detector.h"

#include <sys/stat.h>

#include <algorithm>

namespace sl::hang {

StallDecision StallDetector::On(const StallObservations& o, Clock::time_point now) const {
  StallDecision d;
  if (o.signature) {
    d.trigger = diagnose::Trigger::kSignature;
    return d;
  }
  if (stall_timeout_s_ > 0) {
    // A pump may stamp a read after the tick took `now`: silence is never negative.
    d.source = "output";
    d.silent_s = std::max(0.0, std::chrono::duration<double>(now - o.last_output).count());
    if (o.heartbeat_ns) {
      d.source = "heartbeat";
      d.silent_s = std::max(0.0, (o.wall_now_ns - *o.heartbeat_ns) / 1e9);
    }
    if (d.silent_s >= stall_timeout_s_) {
      d.trigger = o.heartbeat_ns ? diagnose::Trigger::kHeartbeat : diagnose::Trigger::kStall;
      return d;
    }
  }
  if (o.peer_notice) d.trigger = diagnose::Trigger::kPeerHang;
  return d;
}

std::optional<std::int64_t> HeartbeatTouchNs(const std::string& path, std::int64_t not_before_ns) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  const std::int64_t mt =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (mt < not_before_ns) return std::nullopt;
  return mt;
}

}  // namespace sl::hang
