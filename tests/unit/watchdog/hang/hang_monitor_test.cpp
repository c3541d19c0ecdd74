#include "watchdog/hang/hang_monitor.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/exit_codes.h"
#include "tests/unit/common/temp_dir.h"

using namespace sl::hang;
namespace fs = std::filesystem;
using sl::watchdog::Clock;

namespace {

struct FakeJob : JobControl {
  std::vector<std::pair<std::string, int>> stops;
  pid_t JobPid() const override { return 0; }
  std::vector<pid_t> Descendants() const override { return {}; }
  std::vector<std::string> TailLines(int, std::size_t) const override { return {"last line"}; }
  void RequestStop(std::string reason, int status) override { stops.emplace_back(reason, status); }
  sl::Result<HelperOutput> RunHelper(const std::vector<std::string>&,
                                     std::chrono::milliseconds) override {
    return sl::MakeError("no helpers in unit tests");
  }
  Clock::time_point last_output{};
  Clock::time_point LastOutput() const override { return last_output; }
};

using sl::testing::TempDir;

using sl::testing::DirCleanup;

}  // namespace

TEST_CASE("a stall past the timeout captures once and requests a stop with 124") {
  std::string run = TempDir();
  DirCleanup cleanup{run};
  HangOptions o;
  o.stall_timeout_s = 5;
  o.run_dir = run;
  o.host = "node1";
  HangMonitor m(o);
  auto job = std::make_unique<FakeJob>();
  FakeJob* fake = job.get();
  m.SetControl(std::move(job));
  m.OnStart(0);
  auto t0 = Clock::now();
  m.OnOutput(sl::watchdog::kStdout, "epoch 1", t0);
  m.OnTick(t0 + std::chrono::seconds(4));
  CHECK(fake->stops.empty());
  m.OnTick(t0 + std::chrono::seconds(6));
  REQUIRE(fake->stops.size() == 1);
  CHECK(fake->stops[0].second == sl::exit_code::kHang);
  CHECK(m.HangDetected());
  auto b = m.LastBundle();
  REQUIRE(b);
  CHECK(b->complete);
  CHECK(b->verdict.category == "stall");
  CHECK(b->verdict.headline.find("no job output for 6 s") != std::string::npos);
  m.OnTick(t0 + std::chrono::seconds(20));
  CHECK(fake->stops.size() == 1);  // one capture per run
}

TEST_CASE("the supervisor's output clock counts: a blocked consumer or a resume is not a stall") {
  std::string run = TempDir();
  DirCleanup cleanup{run};
  HangOptions o;
  o.stall_timeout_s = 5;
  o.run_dir = run;
  HangMonitor m(o);
  auto job = std::make_unique<FakeJob>();
  FakeJob* fake = job.get();
  m.SetControl(std::move(job));
  m.OnStart(0);
  auto t0 = Clock::now();
  m.OnOutput(sl::watchdog::kStdout, "epoch 1\n", t0);
  // No output reached the monitor for 60 s, but the supervisor says the job was heard from (its
  // pump was blocked on our stdout, or safe-launch was stopped and re-armed).
  fake->last_output = t0 + std::chrono::seconds(58);
  m.OnTick(t0 + std::chrono::seconds(60));
  CHECK(fake->stops.empty());
  CHECK_FALSE(m.HangDetected());
  // A read stamped after the tick took `now` is no silence at all (not "-0 s").
  fake->last_output = t0 + std::chrono::seconds(61);
  m.OnTick(t0 + std::chrono::seconds(60));
  CHECK_FALSE(m.HangDetected());
  m.OnTick(t0 + std::chrono::seconds(66));
  REQUIRE(fake->stops.size() == 1);
  auto b = m.LastBundle();
  REQUIRE(b);
  CHECK(b->verdict.headline.find("no job output for 5 s") != std::string::npos);
}

TEST_CASE("capture-only records the hang signature but never stops the job") {
  std::string run = TempDir();
  DirCleanup cleanup{run};
  HangOptions o;
  o.stall_timeout_s = 0;
  o.on_hang = OnHang::kCaptureOnly;
  o.run_dir = run;
  HangMonitor m(o);
  auto job = std::make_unique<FakeJob>();
  FakeJob* fake = job.get();
  m.SetControl(std::move(job));
  m.OnStart(0);
  auto t0 = Clock::now();
  m.OnOutput(
      sl::watchdog::kStderr,
      "[rank3]:[E1130 ProcessGroupNCCL.cpp:689] [Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=12, OpType=ALLGATHER, NumelIn=8, NumelOut=64, "
      "Timeout(ms)=600000) ran for 600100 milliseconds before timing out.",
      t0);
  m.OnTick(t0 + std::chrono::hours(1));  // stall disabled: only the signature counts
  CHECK(fake->stops.empty());
  auto b = m.LastBundle();
  REQUIRE(b);
  CHECK(b->verdict.seq == "12");
  CHECK(b->verdict.op == "ALLGATHER");
  CHECK(b->verdict.ranks.count("3") == 1);
}

TEST_CASE("a job stopped by someone else does not get a failure bundle, one failing alone does") {
  std::string run = TempDir();
  DirCleanup cleanup{run};
  HangOptions o;
  o.run_dir = run;
  {
    HangMonitor m(o);
    m.SetControl(std::make_unique<FakeJob>());
    sl::watchdog::JobExit e;
    e.how = sl::watchdog::JobExit::How::kSignaled;
    e.signal = 15;
    e.exit_status = 143;
    e.stopped_by = "signal SIGTERM from pid 1 (slurmstepd)";
    m.OnExit(e);
    CHECK_FALSE(m.LastBundle());
  }
  {
    HangMonitor m(o);
    m.SetControl(std::make_unique<FakeJob>());
    sl::watchdog::JobExit e;
    e.how = sl::watchdog::JobExit::How::kExited;
    e.code = 1;
    e.exit_status = 1;
    m.OnExit(e);
    REQUIRE(m.LastBundle());
    CHECK(m.LastBundle()->verdict.category == "job_failed");
  }
}

TEST_CASE("the hang mode parser accepts capture-only and refuses unknown modes") {
  CHECK(ParseOnHang("capture-only").ok());
  CHECK_FALSE(ParseOnHang("stop").ok());
}
