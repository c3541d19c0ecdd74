// The supervisor in-process, with hooks, against the sl-test-child program.
#include "watchdog/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/timed_read.h"
#include "tests/unit/test_paths.h"

#define SL_TEST_CHILD (::sl::test::BuildDir() + "/" SL_TEST_CHILD_REL)

using namespace sl::watchdog;
using namespace std::chrono_literals;

namespace {
SupervisorOptions Options(std::vector<std::string> argv) {
  SupervisorOptions o;
  o.argv = std::move(argv);
  o.env = sl::ProcessEnvironment();
  o.kill_grace = 1s;
  o.sweep_grace = 500ms;
  o.tick = 20ms;
  return o;
}
}  // namespace

TEST_CASE("on_output gets each stream whole and in order, as blocks of whole lines") {
  // 3 MiB of pattern output: many lines, many pipe reads.
  std::mutex mu;
  std::size_t out_bytes = 0, err_bytes = 0, out_lines = 0, unterminated = 0;
  SupervisorHooks hooks;
  hooks.on_output = [&](int stream, std::string_view block, Clock::time_point) {
    std::lock_guard lock(mu);
    REQUIRE(!block.empty());
    // A block ends in '\n' unless it is the final line (the child writes no trailing newline).
    if (block.back() != '\n') ++unterminated;
    sl::ForEachLine(block, [&](std::string_view line) {
      CHECK(line.find('\n') == std::string_view::npos);
      (stream == kStdout ? out_bytes : err_bytes) += line.size() + 1;
      if (stream == kStdout) ++out_lines;
    });
  };
  Supervisor sup(Options({SL_TEST_CHILD, "write", "3000000", "both"}), hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  CHECK(r->how == JobExit::How::kExited);
  CHECK(r->exit_status == 0);
  // Each byte is in a line; the last unterminated line counts one extra '\n'.
  CHECK(out_bytes >= 3000000);
  CHECK(out_bytes <= 3000001);
  CHECK(err_bytes >= 3000000);
  CHECK(out_lines > 1000);
  CHECK(unterminated <= 2);
}

TEST_CASE("with our stdout and stderr on /dev/null every byte still reaches on_output") {
  // /dev/null takes the pumps' read-only path (Forward::kDiscard): nothing is forwarded, and the
  // hang scanner and the tails still see each line.
  std::size_t out_bytes = 0, err_bytes = 0;
  std::mutex mu;
  SupervisorHooks hooks;
  hooks.on_output = [&](int stream, std::string_view block, Clock::time_point) {
    std::lock_guard lock(mu);
    (stream == kStdout ? out_bytes : err_bytes) += block.size();
  };
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  REQUIRE(null >= 0);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  REQUIRE((saved_out >= 0 && saved_err >= 0));
  ::fflush(stdout);
  ::dup2(null, 1);
  ::dup2(null, 2);
  Supervisor sup(Options({SL_TEST_CHILD, "write", "3000000", "both"}), hooks);
  auto r = sup.Run();
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  ::close(null);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(out_bytes >= 3000000);
  CHECK(err_bytes >= 3000000);
  CHECK(!sup.TailLines(kStdout, 1).empty());
}

TEST_CASE("stdout and stderr on one slowly read pipe: the pumps share it, none stops early") {
  // As under ctest or `2>&1 | less`: both pumps tee(2) into the same pipe, kept nearly full by a
  // slow reader, so one pump's tee often finds the room it was promised taken by the other.
  // tee then returns 0 with bytes still waiting; a pump that took that for end of stream left
  // the job blocked on a full pipe for ever (a hang of the first test above, once in ~1000 runs).
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  ::fcntl(pipe_fds[0], F_SETPIPE_SZ, 16384);  // small room: the race at every chunk
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  REQUIRE((saved_out >= 0 && saved_err >= 0));
  std::fflush(stdout);
  ::dup2(pipe_fds[1], 1);
  ::dup2(pipe_fds[1], 2);
  ::close(pipe_fds[1]);
  std::atomic<std::size_t> read_bytes{0};
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) {
      read_bytes += static_cast<std::size_t>(n);
      if ((read_bytes / sizeof buf) % 8 == 0) std::this_thread::sleep_for(100us);
    }
  });
  SupervisorHooks hooks;
  Supervisor sup(Options({SL_TEST_CHILD, "write", "1500000", "both"}), hooks);
  // A stalled pump would hang Run(): stop the job after a deadline so the checks below report.
  std::atomic<bool> finished{false};
  std::thread deadline([&] {
    for (int i = 0; i < 600 && !finished.load(); ++i) std::this_thread::sleep_for(100ms);
    if (!finished.load()) sup.RequestStop("test deadline: a pump stopped reading");
  });
  auto r = sup.Run();
  finished = true;
  deadline.join();
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  reader.join();
  ::close(pipe_fds[0]);
  REQUIRE(r.ok());
  CHECK(r->stop_reason.empty());
  CHECK(r->how == JobExit::How::kExited);
  CHECK(r->exit_status == 0);
  CHECK(read_bytes.load() >= 3000000);  // both streams whole (plus our own log lines)
}

TEST_CASE("on_output joins a line split across writes and cuts an over-long line into pieces") {
  std::vector<std::string> blocks;
  SupervisorHooks hooks;
  hooks.on_output = [&](int stream, std::string_view block, Clock::time_point) {
    if (stream == kStdout) blocks.emplace_back(block);
  };
  // The long line comes in two writes with a pause: its first 100000 bytes wait unterminated,
  // which is what gets cut (a line that arrives whole in one read is handed over whole, so a
  // single write would be cut or not depending on how the reads fall under load).
  Supervisor sup(Options({"/bin/sh", "-c",
                          "printf abc; sleep 0.3; printf 'def\\nghi\\n'; "
                          "head -c 100000 /dev/zero | tr '\\0' x; sleep 0.5; "
                          "head -c 100000 /dev/zero | tr '\\0' x; printf '\\nend'"}),
                 hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  std::string all;
  std::vector<std::string> lines;
  for (const auto& b : blocks) {
    all += b;
    // Every block is whole lines, or exactly one piece of kMaxHookLine, or the final line.
    if (b.back() != '\n') CHECK((b.size() == kMaxHookLine || b == "end"));
    sl::ForEachLine(b, [&](std::string_view l) { lines.emplace_back(l); });
  }
  CHECK(all == "abcdef\nghi\n" + std::string(200000, 'x') + "\nend");
  REQUIRE(lines.size() >= 4);
  CHECK(lines[0] == "abcdef");  // the first write's "abc" was held back until its line ended
  CHECK(lines[1] == "ghi");
  CHECK(lines[2] == std::string(kMaxHookLine, 'x'));
  CHECK(lines.back() == "end");
}

TEST_CASE("a long line whose start was held back is still cut at kMaxHookLine") {
  // 40000 bytes wait as the pending piece; the next read brings 40000 more and the newline:
  // together they pass the cap and must not reach the hook (the catalog matcher) as one line.
  std::vector<std::string> blocks;
  SupervisorHooks hooks;
  hooks.on_output = [&](int stream, std::string_view block, Clock::time_point) {
    if (stream == kStdout) blocks.emplace_back(block);
  };
  // One write() each (tr and printf write in small chunks, which the old code handled).
  Supervisor sup(Options({"/usr/bin/python3", "-c",
                          "import os, time\n"
                          "os.write(1, b'x' * 40000)\n"
                          "time.sleep(0.3)\n"
                          "os.write(1, b'y' * 40000 + b'\\nend\\n')\n"}),
                 hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  std::string all;
  std::vector<std::string> lines;
  for (const auto& b : blocks) {
    all += b;
    sl::ForEachLine(b, [&](std::string_view l) { lines.emplace_back(l); });
  }
  CHECK(all == std::string(40000, 'x') + std::string(40000, 'y') + "\nend\n");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].size() == kMaxHookLine);
  CHECK(lines[1].size() == 80000 - kMaxHookLine);
  CHECK(lines[2] == "end");
}

TEST_CASE("a pipe held open outside the job's tree does not keep the supervisor waiting") {
  // The test process opens the job's stdout pipe through /proc (as a process handed the fd
  // would), so the pipe never reaches end of stream: the blocking pump read must be interrupted.
  int holder = -1;
  std::vector<std::string> blocks;
  SupervisorHooks hooks;
  hooks.on_start = [&](pid_t pid) {
    holder = ::open(("/proc/" + std::to_string(pid) + "/fd/1").c_str(), O_WRONLY | O_CLOEXEC);
  };
  hooks.on_output = [&](int stream, std::string_view block, Clock::time_point) {
    if (stream == kStdout) blocks.emplace_back(block);
  };
  auto threads = [] {  // ours, less the timed-read helpers (a pool that starts on demand)
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(e.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name != sl::kTimedReadThreadName) ++n;
    }
    return n;
  };
  const std::size_t threads_before = threads();
  Supervisor sup(Options({"/bin/sh", "-c", "sleep 0.2; echo done"}), hooks);
  const auto t0 = Clock::now();
  auto r = sup.Run();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  REQUIRE(r.ok());
  REQUIRE(holder >= 0);
  CHECK(r->exit_status == 0);
  CHECK(blocks == std::vector<std::string>{"done\n"});
  CHECK(took >= 5.0);  // it did wait for the pipe (the documented 5 s)
  CHECK(took < 6.5);   // then woke the blocked pump read at once (not the 2 s give-up)
  CHECK(threads() == threads_before);  // the pumps ended and were joined, none left detached
  ::close(holder);
}

TEST_CASE("the output tail stays readable while the pump waits on a silent job") {
  // 1 MiB + 8100 bytes of 81-byte lines, then silence (as a hung job): the pump sits in read()
  // just after the ring wrapped. The hang capture reads the tail exactly then.
  std::vector<std::string> tail;
  Supervisor* self = nullptr;
  SupervisorHooks hooks;
  hooks.on_tick = [&](Clock::time_point now) {
    if (tail.empty() && now - self->StartTime() > std::chrono::milliseconds(1500)) {
      tail = self->TailLines(kStdout, 200);
    }
  };
  Supervisor sup(Options({"/bin/sh", "-c",
                          "yes 12345678901234567890123456789012345678901234567890123456789012345"
                          "678901234567890 | head -c 1056676; sleep 3"}),
                 {});
  self = &sup;
  sup.SetHooks(hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  REQUIRE(tail.size() == 200);
  CHECK(tail.front().size() == 80);  // whole lines (the last one, 31 bytes, is unterminated)
  CHECK(tail[198].size() == 80);
}

TEST_CASE("a hook's RequestStop stops the job and overrides the exit status") {
  std::atomic<bool> asked{false};
  Supervisor* self = nullptr;
  SupervisorHooks hooks;
  std::atomic<pid_t> started{0};
  hooks.on_start = [&](pid_t pid) { started = pid; };
  hooks.on_tick = [&](Clock::time_point now) {
    if (!asked && now - self->StartTime() > 200ms) {
      asked = true;
      self->RequestStop("stall: no output for 0.2 s", 124, "hang detector");
    }
  };
  bool exited = false;
  hooks.on_exit = [&](const JobExit& e) { exited = true; };
  Supervisor sup(Options({SL_TEST_CHILD, "--marker=sup-unit-stop", "ignore-term", "grandchild"}),
                 {});
  self = &sup;
  sup.SetHooks(hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  CHECK(started.load() > 0);
  CHECK(exited);
  CHECK(r->exit_status == 124);
  CHECK(r->stopped_by == "hang detector");
  CHECK(r->stop_reason == "stall: no output for 0.2 s");
  CHECK(r->escalated);
  CHECK(r->how == JobExit::How::kSignaled);
  CHECK(r->signal == SIGKILL);
  CHECK(sup.Descendants().empty());
}

TEST_CASE("RunHelper from a hook gets its own status although the supervisor reaps everything") {
  std::optional<sl::Result<HelperResult>> helper;
  Supervisor* self = nullptr;
  SupervisorHooks hooks;
  hooks.on_tick = [&](Clock::time_point) {
    if (!helper) {
      helper = self->RunHelper({"/bin/sh", "-c", "echo from-helper; exit 7"}, 5s);
      self->RequestStop("done");
    }
  };
  Supervisor sup(Options({SL_TEST_CHILD, "hang"}), {});
  self = &sup;
  sup.SetHooks(hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  REQUIRE(helper);
  REQUIRE(helper->ok());
  CHECK((*helper)->exit_status == 7);
  CHECK((*helper)->output == "from-helper\n");
  CHECK_FALSE((*helper)->timed_out);
  // The job ends on TERM (the default action) within the grace.
  CHECK(r->how == JobExit::How::kSignaled);
  CHECK(r->signal == SIGTERM);
  CHECK(r->exit_status == 128 + SIGTERM);
  CHECK_FALSE(r->escalated);
}

TEST_CASE("RunHelper kills a helper at its deadline") {
  Supervisor sup(Options({"true"}), {});
  auto t0 = Clock::now();
  auto h = sup.RunHelper({"sleep", "30"}, 300ms);
  REQUIRE(h.ok());
  CHECK(h->timed_out);
  CHECK(Clock::now() - t0 < 5s);
}

TEST_CASE("RunHelper's deadline kills the helper's children too, and the helper dies with us") {
  char tmpl[] = "/tmp/sl-helper-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  Supervisor sup(Options({"true"}), {});
  auto h = sup.RunHelper({"/bin/sh", "-c", "sleep 30 & echo $! > " + dir + "/kid; wait"}, 500ms);
  REQUIRE(h.ok());
  CHECK(h->timed_out);
  pid_t kid = 0;
  std::ifstream(dir + "/kid") >> kid;
  REQUIRE(kid > 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(kid) + "/stat");
    std::string line;
    gone = !std::getline(stat, line) || line.find(") Z") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  CHECK(gone);
  ::kill(kid, SIGKILL);
  // The test process is a subreaper (the supervisor made it one): the orphan is ours to reap.
  ::waitpid(kid, nullptr, 0);
}

TEST_CASE("RunHelper of a program that does not exist is an error naming it") {
  Supervisor sup(Options({"true"}), {});
  auto h = sup.RunHelper({"sl-no-such-helper-xyz"}, 5s);
  REQUIRE_FALSE(h.ok());
  CHECK(h.error().where == "sl-no-such-helper-xyz");
  CHECK(h.error().message.find("cannot run") != std::string::npos);
  // The failed child was reaped by RunHelper itself.
  int st = 0;
  CHECK(::waitpid(-1, &st, WNOHANG) <= 0);
}

TEST_CASE("TailLines keeps the last lines of each stream") {
  char path[] = "/tmp/sl-tail-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::string text;
  for (int i = 0; i < 500; ++i) text += "line " + std::to_string(i) + "\n";
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  Supervisor sup(Options({SL_TEST_CHILD, "replay", path}), {});
  auto r = sup.Run();
  REQUIRE(r.ok());
  auto tail = sup.TailLines(kStdout, 3);
  CHECK(tail == std::vector<std::string>{"line 497", "line 498", "line 499"});
  CHECK(sup.TailLines(kStderr, 3).empty());
  unlink(path);
}

TEST_CASE("a hook that throws is logged and the job's own status still comes through") {
  // nlohmann's dump() throws on invalid UTF-8, a bundle writer on a full disk: whatever a hook
  // throws must neither end a pump thread (std::terminate, exit 134) nor lose the job's status.
  std::atomic<int> outputs{0}, exits{0};
  SupervisorHooks hooks;
  hooks.on_output = [&](int, std::string_view, Clock::time_point) {
    ++outputs;
    throw std::runtime_error("[json.exception.type_error.316] invalid UTF-8 byte");
  };
  hooks.on_tick = [](Clock::time_point) { throw 42; };
  hooks.on_exit = [&](const JobExit&) {
    ++exits;
    throw std::runtime_error("no space left");
  };
  Supervisor sup(Options({"/bin/sh", "-c", "printf 'NCCL WARN \\377\\n'; sleep 0.1; exit 3"}),
                 hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  CHECK(r->how == JobExit::How::kExited);
  CHECK(r->exit_status == 3);
  CHECK(outputs >= 1);
  CHECK(exits == 1);
}

TEST_CASE("on_stop_signal runs once at the first stop signal and its detail is in the status") {
  const std::string dir = std::filesystem::temp_directory_path() / "sl-stop-hook-XXXXXX";
  std::string tmpl = dir;
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  int calls = 0;
  long sender = -1;
  bool job_alive_in_hook = false;
  pid_t job = 0;
  SupervisorHooks hooks;
  hooks.on_start = [&](pid_t pid) {
    job = pid;
    ::kill(::getpid(), SIGTERM);  // as slurmstepd would: twice, at once
    ::kill(::getpid(), SIGTERM);
  };
  hooks.on_stop_signal = [&](int sig, long from) -> nlohmann::json {
    ++calls;
    sender = from;
    // Called before the signal is forwarded: the job has not been told to stop yet.
    int st = 0;
    job_alive_in_hook = ::waitpid(job, &st, WNOHANG) == 0;
    return {{"signal", sig}};
  };
  auto o = Options({SL_TEST_CHILD, "hang"});
  o.run_dir = tmpl;
  Supervisor sup(std::move(o), hooks);
  auto r = sup.Run();
  REQUIRE(r.ok());
  CHECK(calls == 1);
  CHECK(sender == ::getpid());
  CHECK(job_alive_in_hook);
  CHECK(r->stop_detail == nlohmann::json{{"signal", SIGTERM}});
  std::ifstream in(tmpl + "/status.json");
  auto j = nlohmann::json::parse(in);
  CHECK(j["stop"]["detail"]["signal"] == SIGTERM);
  std::filesystem::remove_all(tmpl);
}
