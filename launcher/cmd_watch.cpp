// `safe-launch watch [RUN_ROOT | --job SLURM_JOB_ID]`: a live view of a job across its nodes,
// from what every node's supervisor keeps in the job run root (status.json, live.json, events,
// bundles, diagnosis.json). A terminal gets the ncurses screen (refreshed every second); a dumb
// terminal plain rows each refresh; no terminal, --once or --json one snapshot.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "common/environment.h"
#include "common/exit_codes.h"
#include "launcher/commands.h"
#include "launcher/watch_screen.h"
#include "watchdog/watch/reader.h"
#include "watchdog/watch/render.h"
#include "watchdog/watch/snapshot.h"

namespace sl::launcher {
namespace {

struct WatchArgs {
  std::string root;
  std::string job;
  bool once = false;
  bool json = false;
  bool per_task = false;
  bool no_color = false;
  double interval = 1.0;
  double stale = 60;
};

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// RUN_ROOT, else the run root of --job (or $SLURM_JOB_ID) under the submit directory.
std::string ResolveRoot(const WatchArgs& a, const Environment& env, std::string* error) {
  if (!a.root.empty()) return a.root;
  std::string job = a.job.empty() ? Lookup(env, "SLURM_JOB_ID").value_or("") : a.job;
  if (job.empty()) {
    *error = "give the job run root (safe-launch-runs/<job>) or --job SLURM_JOB_ID";
    return "";
  }
  std::string base = Lookup(env, "SLURM_SUBMIT_DIR").value_or("");
  if (base.empty()) {
    char cwd[4096];
    base = ::getcwd(cwd, sizeof cwd) ? cwd : ".";
  }
  return watch::FindJobRoot(base + "/safe-launch-runs", job, error);
}

std::atomic<bool> g_stop{false};
void OnStop(int) { g_stop = true; }

// A dumb terminal: the plain snapshot each refresh, until Ctrl-C or "q" and Enter.
int RunPlainLoop(watch::RunRootReader& reader, const watch::WatchOptions& o, double interval) {
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  watch::ParseMemo memo;
  while (!g_stop) {
    auto snap = watch::BuildSnapshot(reader.Read(), NowUnix(), o, &memo);
    std::time_t t = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%H:%M:%S", std::localtime(&t));
    std::printf("--- %s (q Enter to quit)\n%s", stamp,
                watch::PlainText(watch::RenderSnapshot(snap, 0)).c_str());
    std::fflush(stdout);
    pollfd p{0, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(interval * 1000)) > 0) {
      char buf[64];
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n <= 0 || buf[0] == 'q') break;
    }
  }
  return exit_code::kOk;
}

bool DumbTerminal(const Environment& env) {
  const std::string term = Lookup(env, "TERM").value_or("");
  return term.empty() || term == "dumb" || term == "unknown";
}

int RunWatch(const WatchArgs& a) {
  const Environment env = ProcessEnvironment();
  std::string error;
  const std::string root = ResolveRoot(a, env, &error);
  if (root.empty()) {
    std::fprintf(stderr, "safe-launch watch: %s\n", error.c_str());
    return exit_code::kUsage;
  }
  watch::WatchOptions o{.per_task = a.per_task, .stale_after_s = a.stale};
  watch::RunRootReader reader(root);
  const bool tty = ::isatty(1) && ::isatty(0);
  if (a.json || a.once || !tty) {
    auto files = reader.Read();
    const bool unreadable = !files.problem.empty();
    auto snap = watch::BuildSnapshot(files, NowUnix(), o);
    std::fputs(a.json ? watch::SnapshotJson(snap).c_str()
                      : watch::PlainText(watch::RenderSnapshot(snap, 0)).c_str(),
               stdout);
    return unreadable ? exit_code::kUsage : exit_code::kOk;
  }
  if (DumbTerminal(env)) return RunPlainLoop(reader, o, a.interval);
  // NO_COLOR (https://no-color.org): set and not empty turns colour off.
  const bool color = !a.no_color && Lookup(env, "NO_COLOR").value_or("").empty();
  return RunScreen(reader, {.watch = o, .interval_s = a.interval, .color = color});
}

}  // namespace

void SetupWatch(CLI::App& sub, int* exit_code) {
  auto a = std::make_shared<WatchArgs>();
  sub.add_option("run_root", a->root,
                 "The job run root (safe-launch-runs/<job>), one directory per node below it");
  sub.add_option("--job", a->job,
                 "Slurm job id: its run root under ${SLURM_SUBMIT_DIR:-$PWD}/safe-launch-runs");
  sub.add_flag("--once", a->once, "Print one plain snapshot and exit (also without a terminal)");
  sub.add_flag("--json", a->json, "Print one snapshot as JSON (safe-launch.watch/1) and exit");
  sub.add_flag("--per-task", a->per_task, "One row per run directory (task), not per node");
  sub.add_flag("--no-color", a->no_color, "No colours (as NO_COLOR=1)");
  sub.add_option("--interval", a->interval, "Seconds between refreshes")
      ->check(CLI::Range(0.2, 60.0));
  sub.add_option("--stale", a->stale, "Seconds of silence that mark a running node stale")
      ->check(CLI::Range(1.0, 86400.0));
  sub.callback([a, exit_code] { *exit_code = RunWatch(*a); });
}

}  // namespace sl::launcher
