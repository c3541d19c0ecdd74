#include "watchdog/process_tree.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>

using sl::MemFileReader;
using namespace sl::watchdog;

namespace {
std::string Stat(int pid, const std::string& comm, char state, int ppid, int pgrp, int sid) {
  return std::to_string(pid) + " (" + comm + ") " + state + " " + std::to_string(ppid) + " " +
         std::to_string(pgrp) + " " + std::to_string(sid) +
         " 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 100 18446744073709551615\n";
}
}  // namespace

TEST_CASE("a stat line is parsed up to the last parenthesis of comm") {
  auto st = ParseProcStat(Stat(42, "pt_main_thread", 'S', 7, 42, 42));
  REQUIRE(st.ok());
  CHECK(st->pid == 42);
  CHECK(st->comm == "pt_main_thread");
  CHECK(st->state == 'S');
  CHECK(st->ppid == 7);
  CHECK(st->pgrp == 42);
  CHECK(st->session == 42);
  CHECK(st->start_time == 123456);

  auto odd = ParseProcStat(Stat(9, "a) R 1 (b", 'Z', 3, 9, 9));
  REQUIRE(odd.ok());
  CHECK(odd->comm == "a) R 1 (b");
  CHECK(odd->state == 'Z');
  CHECK(odd->ppid == 3);
}

TEST_CASE("malformed stat lines are errors naming the file") {
  for (const char* bad : {"", "12 no-parens S 1", "x (a) S 1 1 1", "12 (a) S 1 1"}) {
    auto st = ParseProcStat(bad, "/proc/12/stat");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().where == "/proc/12/stat");
  }
}

TEST_CASE("descendants are found through ppid, across setsid'd sessions, minus excluded subtrees") {
  MemFileReader proc;
  proc.AddDir("/proc");
  proc.AddFile("/proc/1/stat", Stat(1, "init", 'S', 0, 1, 1));
  proc.AddFile("/proc/100/stat", Stat(100, "safe-launch", 'S', 1, 100, 100));
  proc.AddFile("/proc/101/stat", Stat(101, "torchrun", 'S', 100, 101, 100));
  proc.AddFile("/proc/102/stat", Stat(102, "python", 'S', 101, 102, 102));  // setsid worker
  proc.AddFile("/proc/103/stat", Stat(103, "python", 'S', 101, 103, 103));
  proc.AddFile("/proc/104/stat", Stat(104, "pt_data_worker", 'S', 102, 102, 102));
  proc.AddFile("/proc/105/stat", Stat(105, "orphan", 'S', 100, 105, 105));  // re-parented to us
  proc.AddFile("/proc/106/stat", Stat(106, "py-spy", 'S', 100, 100, 100));  // a helper
  proc.AddFile("/proc/107/stat", Stat(107, "helper-child", 'S', 106, 100, 100));
  proc.AddFile("/proc/200/stat", Stat(200, "bash", 'S', 1, 200, 200));  // not ours
  proc.AddFile("/proc/self/stat", Stat(100, "safe-launch", 'S', 1, 100, 100));
  proc.AddFile("/proc/300/status", "not a stat file");  // no stat: skipped

  auto procs = ListProcesses(proc, "/proc");
  CHECK(procs.size() == 10);
  auto d = DescendantsOf(procs, 100, {106});
  CHECK(d == std::vector<pid_t>{101, 105, 102, 103, 104});
  CHECK(DescendantsOf(procs, 102).size() == 1);
  CHECK(DescendantsOf(procs, 999).empty());
}

TEST_CASE("the live process table shows our own forked child as a descendant") {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto d = LiveDescendants(getpid());
  CHECK(std::find(d.begin(), d.end(), child) != d.end());
  kill(child, SIGKILL);
  int st;
  waitpid(child, &st, 0);
  d = LiveDescendants(getpid());
  CHECK(std::find(d.begin(), d.end(), child) == d.end());
}
