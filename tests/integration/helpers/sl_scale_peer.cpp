// sl-scale-peer: one simulated node's side of coordinated capture, for bench/scale.sh. It opens
// the real PeerChannel on the shared `.events/` directory (the same options the hang monitor
// gives it) and, like the monitor's tick, looks for a peer's hang every --tick-ms; on the first
// one it starts this node's bundle (hang/bundle.h: <run-dir>/.<name>.partial). With --detect-at
// it is the detecting node instead: at that wall-clock time it posts the hang event and starts
// its own bundle. It runs --for seconds in all, then prints one JSON line:
//   {"node", "detected_unix"|"seen_unix", "bundle_started_unix", "event_time_unix", "cpu_s", ...}
// usage: sl-scale-peer --events DIR --run-dir DIR --node NAME --for S [--detect-at UNIX]
//                      [--poll-ms 500] [--tick-ms 100]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/environment.h"
#include "common/json_text.h"
#include "watchdog/hang/bundle.h"
#include "watchdog/hang/peer_events.h"

namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Args {
  std::string events, run_dir, node;
  double for_s = 0, detect_at = 0;
  int poll_ms = 500, tick_ms = 100;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--events")
      a->events = v;
    else if (k == "--run-dir")
      a->run_dir = v;
    else if (k == "--node")
      a->node = v;
    else if (k == "--for")
      a->for_s = std::atof(v.c_str());
    else if (k == "--detect-at")
      a->detect_at = std::atof(v.c_str());
    else if (k == "--poll-ms")
      a->poll_ms = std::atoi(v.c_str());
    else if (k == "--tick-ms")
      a->tick_ms = std::atoi(v.c_str());
    else
      return false;
  }
  return !a->events.empty() && !a->run_dir.empty() && !a->node.empty() && a->for_s > 0;
}

// Starts this node's bundle as the monitor does on a hang: the partial directory is the start.
std::string StartBundle(const Args& a, double* started) {
  auto bundle = sl::hang::Bundle::Create(a.run_dir, "hang-" + a.node + "-sim", nullptr);
  if (!bundle.ok()) return bundle.error().Describe();
  *started = WallSeconds();
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: sl-scale-peer --events DIR --run-dir DIR --node NAME --for S "
                 "[--detect-at UNIX] [--poll-ms 500] [--tick-ms 100]\n");
    return 2;
  }
  std::filesystem::create_directories(a.run_dir);
  const double start = WallSeconds();
  sl::hang::PeerChannel::Options o;
  o.dir = a.events;
  o.self_node = a.node;
  o.uid = ::geteuid();
  o.poll = std::chrono::milliseconds(a.poll_ms);
  o.not_before_unix = start - 60;
  o.launch = sl::hang::LaunchOf(sl::ProcessEnvironment());
  sl::hang::PeerChannel channel(std::move(o));
  nlohmann::json out = {{"node", a.node}};
  double started = 0;
  std::string error;
  while (WallSeconds() - start < a.for_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(a.tick_ms));
    if (started > 0) continue;
    if (a.detect_at > 0 && WallSeconds() >= a.detect_at) {
      sl::hang::PeerEvent e;
      e.kind = "hang";
      e.node = a.node;
      e.time_unix = WallSeconds();
      e.trigger = "stall";
      channel.Post(e);
      out["detected_unix"] = e.time_unix;
      error = StartBundle(a, &started);
    } else if (a.detect_at <= 0) {
      if (auto h = channel.First("hang")) {
        out["seen_unix"] = WallSeconds();
        out["event_time_unix"] = h->time_unix;
        out["from"] = h->node;
        error = StartBundle(a, &started);
      }
    }
    if (!error.empty()) break;
  }
  if (started > 0) out["bundle_started_unix"] = started;
  if (!error.empty()) out["error"] = error;
  if (!channel.LastError().empty()) out["channel_error"] = channel.LastError();
  out["cpu_s"] = CpuSeconds();
  out["ran_s"] = WallSeconds() - start;
  std::printf("%s\n", sl::JsonText(out, -1).c_str());
  std::fflush(stdout);
  return error.empty() ? 0 : 1;
}
