// Spawn, RunChild and WaitChildren on real processes (/bin/sh, sleep): exec errors, deadlines
// and a stop signal ending a wait within one tick.
#include "common/spawn.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

SpawnSpec Sh(const std::string& script) {
  SpawnSpec s;
  s.argv = {"/bin/sh", "-c", script};
  s.env = {{"PATH", "/usr/bin:/bin"}};
  return s;
}

int Reap(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return st;
}

// Sends `sig` to this process after `delay` from another thread (the signal is blocked, so it
// queues for the wait to take).
std::thread SignalSelfLater(int sig, std::chrono::milliseconds delay) {
  return std::thread([sig, delay] {
    std::this_thread::sleep_for(delay);
    ::kill(::getpid(), sig);
  });
}

}  // namespace

TEST_CASE("ExecCandidates searches PATH in order and an empty element means the cwd") {
  std::string searched;
  auto c = ExecCandidates("tool", {{"PATH", "/a::/b"}}, &searched);
  CHECK(searched == "/a::/b");
  CHECK(c == std::vector<std::string>{"/a/tool", "tool", "/b/tool"});
  CHECK(ExecCandidates("./x/tool", {{"PATH", "/a"}}, &searched) ==
        std::vector<std::string>{"./x/tool"});
  CHECK(searched.empty());
}

TEST_CASE("Spawn reports a missing command as 127 and a non-executable file as 126") {
  SpawnSpec missing;
  missing.argv = {"sl-no-such-command-xyz"};
  missing.env = {{"PATH", "/nonexistent:/also-not"}};
  auto a = Spawn(missing);
  REQUIRE(a.ok());
  CHECK(a->exec_errno == ENOENT);
  CHECK(a->ExecExitCode() == 127);
  CHECK(a->path_searched == "/nonexistent:/also-not");
  int st = Reap(a->pid);
  CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 127));

  char tmpl[] = "/tmp/sl-spawn-test-XXXXXX";
  int fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  ::close(fd);
  ::chmod(tmpl, 0644);
  SpawnSpec noexec;
  noexec.argv = {tmpl};
  auto b = Spawn(noexec);
  ::unlink(tmpl);
  REQUIRE(b.ok());
  CHECK(b->exec_errno == EACCES);
  CHECK(b->ExecExitCode() == 126);
  Reap(b->pid);
}

TEST_CASE("Spawn gives the child exactly the environment asked for and its own process group") {
  SpawnSpec s = Sh("echo \"$SL_SPAWN_X:$HOME\"; cut -d' ' -f5 /proc/$$/stat; echo $$");
  s.env["SL_SPAWN_X"] = "42";
  s.own_process_group = true;
  auto r = RunChild(s, std::chrono::seconds(10));
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  auto lines = r->output;
  REQUIRE(lines.find('\n') != std::string::npos);
  CHECK(lines.substr(0, lines.find('\n')) == "42:");
  // The process group id equals the child's pid.
  auto rest = lines.substr(lines.find('\n') + 1);
  auto pgid = rest.substr(0, rest.find('\n'));
  auto pid = rest.substr(rest.find('\n') + 1);
  pid.erase(pid.find_last_not_of('\n') + 1);
  CHECK(pgid == pid);
}

TEST_CASE("RunChild returns the exit status and the output, and kills at the deadline") {
  auto ok = RunChild(Sh("echo hello; exit 3"), std::chrono::seconds(10));
  REQUIRE(ok.ok());
  CHECK(ok->output == "hello\n");
  CHECK(ok->exit_status == 3);
  CHECK_FALSE(ok->timed_out);

  const auto start = Clock::now();
  auto slow = RunChild(Sh("exec sleep 30"), std::chrono::milliseconds(300));
  REQUIRE(slow.ok());
  CHECK(slow->timed_out);
  CHECK(slow->exit_status == -1);
  CHECK(SecondsSince(start) < 2.0);
}

TEST_CASE("RunChild does not wait for a grandchild that keeps its stdout open") {
  const auto start = Clock::now();
  // The shell exits 4 at once; the background sleep holds the pipe open for 3 s more.
  auto r = RunChild(Sh("sleep 3 & echo started; exit 4"), std::chrono::seconds(20));
  REQUIRE(r.ok());
  CHECK(r->output == "started\n");
  CHECK(r->exit_status == 4);
  CHECK_FALSE(r->timed_out);
  CHECK(SecondsSince(start) < 2.0);
}

TEST_CASE("a SIGTERM during RunChild ends it within a tick and is latched with its sender") {
  BlockLoopSignals({SIGTERM, SIGINT, SIGCHLD});
  ClearStopSignal();
  const auto start = Clock::now();
  auto sender = SignalSelfLater(SIGTERM, std::chrono::milliseconds(200));
  auto r = RunChild(Sh("exec sleep 30"), std::chrono::seconds(60));
  sender.join();
  REQUIRE(r.ok());
  REQUIRE(r->stopped);
  CHECK(r->stopped->signal == SIGTERM);
  CHECK(r->stopped->from_pid == ::getpid());
  CHECK(SecondsSince(start) < 1.5);
  REQUIRE(StopSignalSeen());
  CHECK(StopSignalSeen()->signal == SIGTERM);
  ClearStopSignal();
}

TEST_CASE("a SIGINT during WaitChildren stops every child: TERM first, KILL after the grace") {
  BlockLoopSignals({SIGTERM, SIGINT, SIGCHLD});
  ClearStopSignal();
  auto a = Spawn(Sh("exec sleep 30"));
  auto b = Spawn(Sh("trap '' TERM; while :; do sleep 0.05; done"));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the trap be set
  const auto start = Clock::now();
  auto sender = SignalSelfLater(SIGINT, std::chrono::milliseconds(100));
  auto w = WaitChildren({a->pid, b->pid}, Clock::now() + std::chrono::seconds(60),
                        std::chrono::milliseconds(100), std::chrono::milliseconds(500));
  sender.join();
  REQUIRE(w.stopped);
  CHECK(w.stopped->signal == SIGINT);
  CHECK_FALSE(w.deadline_passed);
  REQUIRE(w.ends.size() == 2);
  CHECK(WIFSIGNALED(w.ends[0].wait_status));
  CHECK(WTERMSIG(w.ends[0].wait_status) == SIGTERM);
  CHECK_FALSE(w.ends[0].killed);
  CHECK(w.ends[1].killed);
  CHECK(WTERMSIG(w.ends[1].wait_status) == SIGKILL);
  CHECK(SecondsSince(start) < 2.0);
  ClearStopSignal();
}

TEST_CASE("WaitChildren kills what is left at the deadline and wakes on SIGCHLD, not the tick") {
  BlockLoopSignals({SIGTERM, SIGINT, SIGCHLD});
  ClearStopSignal();
  auto quick = Spawn(Sh("exit 5"));
  REQUIRE(quick.ok());
  auto start = Clock::now();
  auto w =
      WaitChildren({quick->pid}, Clock::now() + std::chrono::seconds(10), std::chrono::seconds(5));
  CHECK(WEXITSTATUS(w.ends[0].wait_status) == 5);
  CHECK(SecondsSince(start) < 2.0);  // a 5 s tick: only SIGCHLD can have woken it

  auto slow = Spawn(Sh("exec sleep 30"));
  REQUIRE(slow.ok());
  start = Clock::now();
  w = WaitChildren({slow->pid}, Clock::now() + std::chrono::milliseconds(300));
  CHECK(w.deadline_passed);
  CHECK(w.ends[0].killed);
  CHECK(SecondsSince(start) < 2.0);
}

TEST_CASE("a SIGTERM interrupts a WaitChildren with no deadline near: TERM, then reaped") {
  BlockLoopSignals({SIGTERM, SIGINT, SIGCHLD});
  ClearStopSignal();
  auto child = Spawn(Sh("exec sleep 30"));
  REQUIRE(child.ok());
  const auto start = Clock::now();
  auto sender = SignalSelfLater(SIGTERM, std::chrono::milliseconds(150));
  // A year away: the way `bench --nccl-tests` waits for all_reduce_perf.
  auto w = WaitChildren({child->pid}, Clock::now() + std::chrono::hours(24 * 365),
                        WaitPolicy{.tick = std::chrono::seconds(5)});
  sender.join();
  REQUIRE(w.stopped);
  CHECK(w.stopped->signal == SIGTERM);
  CHECK(w.stopped->from_pid == ::getpid());
  CHECK_FALSE(w.deadline_passed);
  CHECK(WIFSIGNALED(w.ends[0].wait_status));
  CHECK(WTERMSIG(w.ends[0].wait_status) == SIGTERM);
  CHECK(SecondsSince(start) < 2.0);  // a 5 s tick: the signal itself woke it
  ClearStopSignal();
}

// The post-mortem's policy: srun TERMs the step when the first task exits, and the diagnosis,
// a second or two of work, is still worth finishing.
TEST_CASE("with stop_leaves a stop lets a child finish in the time left, then ends a slow one") {
  BlockLoopSignals({SIGTERM, SIGINT, SIGCHLD});
  ClearStopSignal();
  auto sender = SignalSelfLater(SIGTERM, std::chrono::milliseconds(100));
  auto r = RunCallInChild(
      [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        return 7;
      },
      std::chrono::seconds(30), WaitPolicy{.stop_leaves = std::chrono::seconds(5)});
  sender.join();
  REQUIRE(r.ok());
  CHECK_FALSE(r->stopped);  // it finished within the time the stop left
  CHECK_FALSE(r->timed_out);
  CHECK(r->exit_status == 7);
  REQUIRE(StopSignalSeen());  // still latched for the supervisor's exit status
  ClearStopSignal();

  const auto start = Clock::now();
  sender = SignalSelfLater(SIGTERM, std::chrono::milliseconds(100));
  r = RunCallInChild(
      [] {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return 0;
      },
      std::chrono::seconds(60), WaitPolicy{.stop_leaves = std::chrono::milliseconds(400)});
  sender.join();
  REQUIRE(r.ok());
  REQUIRE(r->stopped);
  CHECK(r->stopped->signal == SIGTERM);
  CHECK_FALSE(r->timed_out);
  CHECK(r->exit_status == -1);  // killed
  CHECK(SecondsSince(start) >= 0.45);
  CHECK(SecondsSince(start) < 3.0);
  ClearStopSignal();
}

TEST_CASE("a wait that leaves signals to another reaper uses its reap and takes no SIGTERM") {
  BlockLoopSignals({SIGTERM, SIGINT, SIGCHLD});
  ClearStopSignal();
  auto child = Spawn(Sh("exit 3"));
  REQUIRE(child.ok());
  // Another reaper (the supervisor's loop) got the child first and left its status.
  const int left_status = Reap(child->pid);
  int asked = 0;
  ::kill(::getpid(), SIGTERM);  // queued: it belongs to that reaper's signalfd, not this wait
  auto w = WaitChildren({child->pid}, Clock::now() + std::chrono::seconds(10),
                        WaitPolicy{.tick = std::chrono::milliseconds(10),
                                   .take_signals = false,
                                   .reap = [&](pid_t p) -> std::optional<int> {
                                     ++asked;
                                     if (p == child->pid && asked >= 3) return left_status;
                                     return std::nullopt;
                                   }});
  CHECK(asked == 3);
  CHECK_FALSE(w.stopped);
  CHECK(WEXITSTATUS(w.ends[0].wait_status) == 3);
  // The SIGTERM is still queued for its owner.
  auto taken = TakeStopSignal();
  REQUIRE(taken);
  CHECK(taken->signal == SIGTERM);
  ClearStopSignal();
}

TEST_CASE("TryReap reaps an ended child once and says when there is none") {
  auto child = Spawn(Sh("exit 7"));
  REQUIRE(child.ok());
  std::optional<Reaped> r;
  for (int i = 0; i < 500 && !(r = TryReap(child->pid)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(r);
  CHECK(r->pid == child->pid);
  CHECK(WEXITSTATUS(r->wait_status) == 7);
  bool none = false;
  CHECK_FALSE(TryReap(child->pid, &none));
  CHECK(none);
}

}  // namespace sl

namespace sl {
namespace {

bool Gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    // "pid (comm) S ...": a zombie waiting for init is dead too.
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t PidIn(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream f(path);
    pid_t pid = 0;
    if (f >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

}  // namespace

TEST_CASE("RunChild's deadline kills the helper's whole process group, its children too") {
  char tmpl[] = "/tmp/sl-spawn-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", "sleep 30 & echo $! > " + dir + "/kid; wait"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  auto r = RunChild(spec, std::chrono::milliseconds(500));
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  const pid_t kid = PidIn(dir + "/kid");
  REQUIRE(kid > 0);
  CHECK(Gone(kid));
  ::kill(kid, SIGKILL);
  ::waitpid(kid, nullptr, WNOHANG);  // ours only when this process is a subreaper
}

TEST_CASE("a helper dies with a SIGKILLed safe-launch (PR_SET_PDEATHSIG)") {
  char tmpl[] = "/tmp/sl-spawn-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const pid_t middle = ::fork();
  if (middle == 0) {
    // Stands for safe-launch running a probe; it is SIGKILLed below.
    SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", "echo $$ > " + dir + "/helper; exec sleep 30"};
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    (void)RunChild(spec, std::chrono::seconds(30));
    _exit(0);
  }
  const pid_t helper = PidIn(dir + "/helper");
  REQUIRE(helper > 0);
  ::kill(middle, SIGKILL);
  ::waitpid(middle, nullptr, 0);
  CHECK(Gone(helper));
  ::kill(helper, SIGKILL);
}

}  // namespace sl
