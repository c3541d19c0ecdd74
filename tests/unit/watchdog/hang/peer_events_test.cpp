#include "watchdog/hang/peer_events.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "common/exit_codes.h"
#include "tests/unit/common/temp_dir.h"
#include "watchdog/hang/hang_monitor.h"

using namespace sl::hang;
namespace fs = std::filesystem;
using sl::watchdog::Clock;
using namespace std::chrono_literals;

namespace {

using sl::testing::TempDir;

using sl::testing::DirCleanup;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

PeerEvent Event(std::string kind, std::string node, double t) {
  PeerEvent e;
  e.kind = std::move(kind);
  e.node = std::move(node);
  e.time_unix = t;
  e.trigger = e.kind == "hang" ? "stall" : "job_failed";
  e.category = e.kind == "hang" ? "stall" : "job_failed";
  e.severity = e.kind == "hang" ? "hang" : "error";
  return e;
}

struct PeerFakeJob : JobControl {
  std::vector<std::pair<std::string, int>> stops;
  std::vector<std::string> stderr_tail;
  pid_t JobPid() const override { return 0; }
  std::vector<pid_t> Descendants() const override { return {}; }
  std::vector<std::string> TailLines(int stream, std::size_t) const override {
    return stream == sl::watchdog::kStderr ? stderr_tail : std::vector<std::string>{};
  }
  void RequestStop(std::string reason, int status) override { stops.emplace_back(reason, status); }
  sl::Result<HelperOutput> RunHelper(const std::vector<std::string>&,
                                     std::chrono::milliseconds) override {
    return sl::MakeError("no helpers in unit tests");
  }
};

// Waits (a few polls) until `pred` holds.
template <typename F>
bool Eventually(F pred) {
  for (int i = 0; i < 100; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

// One node's monitor on <root>/<node>, coordinating through <root>/.events.
HangOptions NodeOptions(const std::string& root, const std::string& node) {
  fs::create_directories(root + "/" + node);
  HangOptions o;
  o.stall_timeout_s = 5;
  o.run_dir = root + "/" + node;
  o.host = node;
  o.node = node;
  o.events_dir = root + "/.events";
  o.job_root = root;
  o.peer_poll = 20ms;
  o.post_mortem_wait = 0ms;
  return o;
}

}  // namespace

TEST_CASE("a peer event survives its JSON form and anything else is refused") {
  PeerEvent e = Event("failure", "gpu07", 1764594129.5);
  e.rank = 3;
  e.exit_status = 1;
  e.first_error = "RuntimeError: planted";
  auto back = ParseEvent(EventJson(e));
  REQUIRE(back.ok());
  CHECK(back->kind == "failure");
  CHECK(back->node == "gpu07");
  CHECK(back->rank == 3);
  CHECK(back->exit_status == 1);
  CHECK(back->time_unix == Approx(1764594129.5));
  CHECK(back->time_utc == "2025-12-01T13:02:09Z");
  CHECK(back->first_error == "RuntimeError: planted");
  CHECK_FALSE(ParseEvent("{}").ok());
  CHECK_FALSE(ParseEvent("not json").ok());
  CHECK_FALSE(ParseEvent(R"({"schema":"safe-launch.peer-event/1","kind":"reboot","node":"a",)"
                         R"("time_unix":1})")
                  .ok());
  CHECK_FALSE(ParseEvent(R"({"schema":"safe-launch.peer-event/1","kind":"hang","node":"a"})").ok());
}

TEST_CASE("only regular event files of our own user are read: no dot names, links or others'") {
  std::string dir = TempDir();
  REQUIRE(EnsureEventsDir(dir, ::geteuid()).ok());
  auto w = WriteEvent(dir, Event("hang", "a", Now()));
  REQUIRE(w.ok());
  CHECK(fs::path(*w).filename().string().rfind("hang-a-", 0) == 0);
  // A link to a valid event, a half-written dot file, garbage, and another user's event.
  fs::create_symlink(*w, dir + "/hang-link.json");
  { std::ofstream(dir + "/.hang-b-partial.json") << EventJson(Event("hang", "b", Now())); }
  { std::ofstream(dir + "/junk.json") << "{"; }
  std::string other = dir + "/hang-c-1.json";
  { std::ofstream(other) << EventJson(Event("hang", "c", Now())); }
  REQUIRE(::chown(other.c_str(), 65534, 65534) == 0);  // tests run as root (CI)
  std::vector<std::string> rejected;
  auto events = ReadEvents(dir, ::geteuid(), &rejected);
  REQUIRE(events.size() == 1);
  CHECK(events[0].node == "a");
  CHECK(rejected.size() == 3);  // the link, the junk, the other user's
  // A node name cannot steer the file out of the directory.
  auto sneaky = WriteEvent(dir, Event("hang", "../../etc/x", Now()));
  REQUIRE(sneaky.ok());
  CHECK(fs::path(*sneaky).parent_path() == fs::path(dir));
  fs::remove_all(dir);
}

TEST_CASE("an events directory owned by someone else is not trusted") {
  std::string dir = TempDir();
  REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
  CHECK_FALSE(EnsureEventsDir(dir, ::geteuid()).ok());
  fs::remove_all(dir);
  std::string base = TempDir();
  fs::create_directory(base + "/real");
  fs::create_directory_symlink(base + "/real", base + "/link");
  CHECK_FALSE(EnsureEventsDir(base + "/link", ::geteuid()).ok());
  fs::remove_all(base);
}

TEST_CASE("the failed rank and its first error come from torchrun's table and the traceback") {
  std::vector<std::string> lines = {
      "Traceback (most recent call last):",
      "  File \"/job/train.py\", line 9, in <module>",
      "RuntimeError: planted failure on rank 1",
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
      "  rank      : 1 (local_rank: 0)",
      "  exitcode  : 1 (pid: 4242)",
  };
  FailureFacts f = FailureFromOutput(lines);
  CHECK(f.rank == 1);
  CHECK(f.first_error == "RuntimeError: planted failure on rank 1");
  FailureFacts g = FailureFromOutput({"[rank5]: torch.OutOfMemoryError: CUDA out of memory"});
  CHECK(g.rank == 5);
  CHECK(FailureFromOutput({"something", "last words", ""}).first_error == "last words");
}

TEST_CASE("the channel never holds its caller up: a stuck worker is reported, not waited on") {
  std::string dir = TempDir();
  PeerChannel::Options o;
  o.dir = dir + "/.events";
  o.self_node = "a";
  o.uid = ::geteuid();
  o.poll = 20ms;
  o.stuck_after = 100ms;
  auto channel = std::make_unique<PeerChannel>(o);
  // Stands for a dead NFS: the worker blocks for 1.5 s.
  auto t0 = Clock::now();
  CHECK_FALSE(channel->RunOnWorker([] { std::this_thread::sleep_for(1500ms); }, 100ms));
  channel->Post(Event("hang", "a", Now()));
  CHECK_FALSE(channel->Flush(100ms));
  CHECK(Clock::now() - t0 < 1s);
  CHECK(Eventually([&] { return !channel->Stuck().empty(); }));
  CHECK(channel->Flush(3s));  // once the file system answers, the post is written
  CHECK(ReadEvents(o.dir, ::geteuid()).size() == 1);
  channel.reset();
  fs::remove_all(dir);
}

TEST_CASE("a hang declared on one node makes the other capture at once with trigger peer_hang") {
  std::string root = TempDir();
  DirCleanup cleanup{root};
  HangMonitor a(NodeOptions(root, "a"));
  HangMonitor b(NodeOptions(root, "b"));
  auto ja = std::make_unique<PeerFakeJob>();
  auto jb = std::make_unique<PeerFakeJob>();
  PeerFakeJob* fa = ja.get();
  PeerFakeJob* fb = jb.get();
  a.SetControl(std::move(ja));
  b.SetControl(std::move(jb));
  a.OnStart(0);
  b.OnStart(0);
  auto t0 = Clock::now();
  a.OnOutput(sl::watchdog::kStdout, "epoch 1\n", t0);
  b.OnOutput(sl::watchdog::kStdout, "epoch 1\n", t0);
  a.OnTick(t0 + 6s);  // a's stall
  REQUIRE(fa->stops.size() == 1);
  CHECK(fa->stops[0].second == sl::exit_code::kHang);
  // b is far from its own stall timeout: only the notice can make it capture.
  CHECK(Eventually([&] {
    b.OnTick(t0 + 1s);
    return b.HangDetected();
  }));
  REQUIRE(fb->stops.size() == 1);
  CHECK(fb->stops[0].second == sl::exit_code::kHang);
  auto bundle = b.LastBundle();
  REQUIRE(bundle);
  REQUIRE(bundle->complete);
  REQUIRE(bundle->peer_hang);
  CHECK(bundle->peer_hang->node == "a");
  CHECK(bundle->verdict.headline.find("hang detected on node a at ") != std::string::npos);
  CHECK(bundle->verdict.headline.find("captured here on peer notice") != std::string::npos);
  std::ifstream mf(bundle->path + "/manifest.json");
  std::string manifest((std::istreambuf_iterator<char>(mf)), {});
  CHECK(manifest.find("\"trigger\": \"peer_hang\"") != std::string::npos);
  CHECK(manifest.find("\"node\": \"a\"") != std::string::npos);
  // a does not answer its own notice, and b posts none of its own.
  a.OnTick(t0 + 7s);
  CHECK(fa->stops.size() == 1);
  CHECK(ReadEvents(root + "/.events", ::geteuid()).size() == 1);
}

TEST_CASE("a hang after another node's failure has that failure as verdict and its exit status") {
  std::string root = TempDir();
  DirCleanup cleanup{root};
  HangMonitor a(NodeOptions(root, "a"));
  HangMonitor b(NodeOptions(root, "b"));
  auto ja = std::make_unique<PeerFakeJob>();
  auto jb = std::make_unique<PeerFakeJob>();
  PeerFakeJob* fa = ja.get();
  jb->stderr_tail = {"RuntimeError: planted failure on rank 1", "  rank      : 1 (local_rank: 0)"};
  a.SetControl(std::move(ja));
  b.SetControl(std::move(jb));
  a.OnStart(0);
  b.OnStart(0);
  sl::watchdog::JobExit e;
  e.how = sl::watchdog::JobExit::How::kExited;
  e.code = 1;
  e.exit_status = 1;
  b.OnExit(e);  // b's job failed on its own: posted before b's monitor returns
  auto t0 = Clock::now();
  a.OnOutput(sl::watchdog::kStdout, "epoch 1\n", t0);
  // a's channel must have read b's event before a's stall is decided.
  std::this_thread::sleep_for(200ms);
  a.OnTick(t0 + 6s);
  REQUIRE(fa->stops.size() == 1);
  CHECK(fa->stops[0].second == 1);  // the failed node's status, not 124
  auto bundle = a.LastBundle();
  REQUIRE(bundle);
  REQUIRE(bundle->peer_failure);
  CHECK(bundle->verdict.category == "oom_or_crash_other_rank");
  CHECK(bundle->verdict.headline.find("node b rank 1 failed first (exit 1 at ") !=
        std::string::npos);
  CHECK(bundle->verdict.headline.find("RuntimeError: planted failure on rank 1") !=
        std::string::npos);
  std::ifstream sf(bundle->path + "/summary.json");
  std::string summary((std::istreambuf_iterator<char>(sf)), {});
  CHECK(summary.find("\"signature\": \"peer_event.failure\"") != std::string::npos);
}

TEST_CASE("a failure that was a hang on its node is a notice, not the cause") {
  std::string root = TempDir();
  DirCleanup cleanup{root};
  HangMonitor a(NodeOptions(root, "a"));
  auto ja = std::make_unique<PeerFakeJob>();
  a.SetControl(std::move(ja));
  a.OnStart(0);
  fs::create_directories(root + "/.events");
  PeerEvent timeout = Event("failure", "b", Now());
  timeout.category = "collective_timeout";
  timeout.severity = "hang";
  REQUIRE(WriteEvent(root + "/.events", timeout).ok());
  CHECK(Eventually([&] {
    a.OnTick(Clock::now());
    return a.HangDetected();
  }));
  auto bundle = a.LastBundle();
  REQUIRE(bundle);
  CHECK_FALSE(bundle->peer_failure);
  REQUIRE(bundle->peer_hang);
  CHECK(bundle->verdict.category == "collective_timeout");
}

TEST_CASE("events older than the job are left over from an earlier one and ignored") {
  std::string root = TempDir();
  DirCleanup cleanup{root};
  fs::create_directories(root + "/.events");
  REQUIRE(WriteEvent(root + "/.events", Event("hang", "b", Now() - 3600)).ok());
  HangMonitor a(NodeOptions(root, "a"));
  a.SetControl(std::make_unique<PeerFakeJob>());
  a.OnStart(0);
  std::this_thread::sleep_for(200ms);
  a.OnTick(Clock::now());
  CHECK_FALSE(a.HangDetected());
}

TEST_CASE("the exit status after a peer's failure is its status, or 1 when it has none or 124") {
  PeerEvent f = Event("failure", "b", 0);
  CHECK(PeerFailureExitStatus(f) == 1);
  f.exit_status = 3;
  CHECK(PeerFailureExitStatus(f) == 3);
  f.exit_status = 124;
  CHECK(PeerFailureExitStatus(f) == 1);
  f.exit_status = 0;
  CHECK(PeerFailureExitStatus(f) == 1);
}

TEST_CASE("a stall after torchrun reported a rank failed is that failure, not a 124 hang") {
  std::string run = TempDir();
  DirCleanup cleanup{run};
  HangOptions o;
  o.stall_timeout_s = 5;
  o.run_dir = run;
  o.host = "b";
  HangMonitor m(o);
  auto job = std::make_unique<PeerFakeJob>();
  PeerFakeJob* fake = job.get();
  job->stderr_tail = {"RuntimeError: planted failure on rank 1"};
  m.SetControl(std::move(job));
  m.OnStart(0);
  auto t0 = Clock::now();
  m.OnOutput(sl::watchdog::kStderr,
             "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) "
             "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3\n",
             t0);
  m.OnTick(t0 + 6s);  // torchrun then waits, silent, in its exit barrier
  REQUIRE(fake->stops.size() == 1);
  CHECK(fake->stops[0].second == 1);
  auto b = m.LastBundle();
  REQUIRE(b);
  REQUIRE(b->local_failure);
  CHECK(b->verdict.category == "rank_process_failed");
  CHECK(b->verdict.headline.find("on this node failed first (exit 1 at ") != std::string::npos);
  CHECK(b->verdict.headline.find("RuntimeError: planted failure on rank 1") != std::string::npos);
}

TEST_CASE("on the failing node the rank's failure outranks a later store error in its output") {
  std::string run = TempDir();
  DirCleanup cleanup{run};
  HangOptions o;
  o.run_dir = run;
  o.host = "b";
  HangMonitor m(o);
  m.SetControl(std::make_unique<PeerFakeJob>());
  m.OnStart(0);
  auto t0 = Clock::now();
  m.OnOutput(sl::watchdog::kStderr,
             "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) "
             "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3\n"
             "RuntimeError: The client socket has failed to connect to [gpu01]:29500 "
             "(errno: 111 - Connection refused).\n",
             t0);
  sl::watchdog::JobExit e;
  e.how = sl::watchdog::JobExit::How::kExited;
  e.code = 1;
  e.exit_status = 1;
  m.OnExit(e);
  auto b = m.LastBundle();
  REQUIRE(b);
  CHECK(b->verdict.category == "rank_process_failed");
  CHECK(b->verdict.headline.find("on this node failed first (exit 1 at ") != std::string::npos);
  CHECK(b->verdict.headline.find("; then: ") != std::string::npos);
}

TEST_CASE("a peer's bundle counts once it has its final name, partial ones and links do not") {
  std::string root = TempDir();
  DirCleanup cleanup{root};
  fs::create_directories(root + "/self/hang-self-1");
  fs::create_directories(root + "/a/hang-a-20261201T000000Z");
  fs::create_directories(root + "/b/.hang-b-20261201T000000Z.partial");
  fs::create_directories(root + "/c");
  { std::ofstream(root + "/c/failure-c-1.tar.gz") << "x"; }  // the tar alone is not the bundle
  fs::create_directories(root + "/.events");
  fs::create_directory_symlink(root + "/a", root + "/d");
  PeerBundles p = ScanPeerBundles(root, "self", ::geteuid());
  CHECK(p.nodes == std::vector<std::string>{"a", "b", "c"});
  CHECK(p.complete == std::vector<std::string>{"a"});
}

TEST_CASE("a rank torchrun reports failed after our own capture is not posted as a failure") {
  std::string root = TempDir();
  DirCleanup cleanup{root};
  HangMonitor a(NodeOptions(root, "a"));
  a.SetControl(std::make_unique<PeerFakeJob>());
  a.OnStart(0);
  auto t0 = Clock::now();
  a.OnOutput(sl::watchdog::kStdout, "epoch 1\n", t0);
  a.OnTick(t0 + 6s);  // a's stall: captured, the job is being stopped
  REQUIRE(a.HangDetected());
  // torchrun, stopped by us, reports its worker killed.
  a.OnOutput(sl::watchdog::kStderr,
             "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) "
             "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3\n",
             t0 + 7s);
  a.OnTick(t0 + 8s);
  sl::watchdog::JobExit e;
  e.how = sl::watchdog::JobExit::How::kExited;
  e.code = 1;
  e.exit_status = 124;
  e.stopped_by = "hang detector";
  a.OnExit(e);
  auto events = ReadEvents(root + "/.events", ::geteuid());
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == "hang");
}

TEST_CASE("a failed rank, then torchrun's exit barrier reset by the other node, is the rank's") {
  std::string run = TempDir();
  DirCleanup cleanup{run};
  HangOptions o;
  o.run_dir = run;
  o.host = "b";
  HangMonitor m(o);
  m.SetControl(std::make_unique<PeerFakeJob>());
  m.OnStart(0);
  m.OnOutput(sl::watchdog::kStderr,
             "RuntimeError: planted failure on rank 1\n"
             "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) "
             "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3\n"
             "ERROR:torch.distributed.elastic.agent.server.api:Error waiting on exit barrier. "
             "Elapsed: 12.9 seconds\n"
             "RuntimeError: Connection reset by peer\n"
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n",
             Clock::now());
  sl::watchdog::JobExit e;
  e.how = sl::watchdog::JobExit::How::kExited;
  e.code = 1;
  e.exit_status = 1;
  m.OnExit(e);
  auto b = m.LastBundle();
  REQUIRE(b);
  CHECK(b->verdict.category == "rank_process_failed");
  CHECK(b->verdict.headline.find("on this node failed first (exit 1 at ") != std::string::npos);
}

TEST_CASE("a launch is the scheduler's job, restart and step: the same on every node, not across") {
  sl::Environment n0{{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NODEID", "0"}};
  sl::Environment n1{{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NODEID", "1"}};
  sl::Environment requeued{
      {"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "0"}, {"SLURM_RESTART_COUNT", "1"}};
  sl::Environment next_step{{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "1"}};
  CHECK(LaunchOf(n0) == LaunchOf(n1));
  CHECK_FALSE(LaunchOf(n0) == LaunchOf(requeued));
  CHECK_FALSE(LaunchOf(n0) == LaunchOf(next_step));
  CHECK(LaunchOf({{"SAFE_LAUNCH_LAUNCH_ID", "run-7"}}).launch_id == "run-7");
  PeerEvent e = Event("hang", "a", Now());
  e.launch = LaunchOf(requeued);
  auto back = ParseEvent(EventJson(e));
  REQUIRE(back.ok());
  CHECK(back->launch == e.launch);
}

TEST_CASE(
    "a supervisor hears only its own launch: a fresh hang of the previous launch is ignored") {
  const std::string dir = TempDir();
  PeerEvent old = Event("hang", "b", Now() - 5);  // well inside the 60 s window
  old.launch = LaunchOf({{"SLURM_JOB_ID", "812"}, {"SLURM_RESTART_COUNT", "0"}});
  fs::create_directories(dir + "/.events");
  REQUIRE(WriteEvent(dir + "/.events", old).ok());
  PeerChannel::Options o;
  o.dir = dir + "/.events";
  o.self_node = "a";
  o.uid = ::geteuid();
  o.poll = 20ms;
  o.not_before_unix = Now() - 60;
  o.launch = LaunchOf({{"SLURM_JOB_ID", "812"}, {"SLURM_RESTART_COUNT", "1"}});
  PeerChannel channel(o);
  REQUIRE(channel.PollNow(2s));
  CHECK(channel.Events().empty());
  CHECK(channel.OtherLaunches() == 1);
  // The same launch's node b is heard.
  PeerEvent now = Event("hang", "b", Now());
  now.launch = o.launch;
  REQUIRE(WriteEvent(o.dir, now).ok());
  REQUIRE(channel.PollNow(2s));
  REQUIRE(channel.Events().size() == 1);
  CHECK(channel.Events()[0].launch == o.launch);
  fs::remove_all(dir);
}

TEST_CASE("the .events poll is incremental: a file seen once is never opened again") {
  const std::string dir = TempDir() + "/.events";
  fs::create_directories(dir);
  for (int i = 0; i < 3000; ++i) {
    PeerEvent e = Event("failure", "n" + std::to_string(i % 8), Now() - 3600);
    e.first_error = std::string(200, 'x');
    REQUIRE(WriteEvent(dir, e).ok());
  }
  auto cpu = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
  };
  std::set<std::string> known;
  double t0 = cpu();
  CHECK(ReadEvents(dir, ::geteuid(), nullptr, &known).size() == 3000);
  double first = cpu() - t0;
  CHECK(known.size() == 3000);
  // A file that would be rejected now is not even opened: it was looked at already.
  std::ofstream(dir + "/" + *known.begin()) << "garbage";
  std::vector<std::string> rejected;
  t0 = cpu();
  CHECK(ReadEvents(dir, ::geteuid(), &rejected, &known).empty());
  double again = cpu() - t0;
  CHECK(rejected.empty());
  INFO("first poll " << first << " s CPU, next " << again << " s");
  CHECK(again < first / 4);
  PeerEvent fresh = Event("hang", "n1", Now());
  REQUIRE(WriteEvent(dir, fresh).ok());
  CHECK(ReadEvents(dir, ::geteuid(), nullptr, &known).size() == 1);
  fs::remove_all(fs::path(dir).parent_path());
}
