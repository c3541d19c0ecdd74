// The supervisor in-process, with hooks, against the sl-test-child program.
#include "watchdog/supervisor.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>

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

TEST_CASE("on_line sees every line of each stream in order, split across reads") {
  // 3 MiB of pattern output: many lines, many pipe reads.
  std::mutex mu;
  std::size_t out_bytes = 0, err_bytes = 0, out_lines = 0;
  SupervisorHooks hooks;
  hooks.on_line = [&](int stream, std::string_view line, Clock::time_point) {
    std::lock_guard lock(mu);
    CHECK(line.find('\n') == std::string_view::npos);
    (stream == kStdout ? out_bytes : err_bytes) += line.size() + 1;
    if (stream == kStdout) ++out_lines;
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
