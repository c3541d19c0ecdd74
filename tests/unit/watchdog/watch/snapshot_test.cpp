#include "watchdog/watch/snapshot.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "watchdog/hang/live_status.h"
#include "watchdog/hang/peer_events.h"
#include "watchdog/watch/render.h"

namespace sl::watch {
namespace {

constexpr double kNow = 1'800'000'000;

FileRead Ok(std::string name, std::string text, double mtime = kNow - 100) {
  return {.state = FileRead::State::kOk,
          .name = std::move(name),
          .text = std::move(text),
          .mtime_unix = mtime};
}

std::string Live(double last_output, std::string phase = "running", double updated = kNow - 1) {
  hang::LiveState s;
  s.phase = std::move(phase);
  s.phase_since_unix = kNow - 50;
  s.last_output_unix = last_output;
  s.event_signature = "torch.watchdog_timeout";
  s.event_category = "collective_timeout";
  s.tail = {"step 41", "step 42"};
  return hang::LiveJson(s, updated);
}

NodeFiles Running(std::string name, double last_output) {
  NodeFiles n{.name = std::move(name)};
  n.status = Ok("status.json", R"({"schema":1,"state":"running"})", kNow - 300);
  n.live = Ok("live.json", Live(last_output));
  return n;
}

const Row& RowOf(const Snapshot& s, const std::string& name) {
  for (const auto& r : s.rows) {
    if (r.name == name) return r;
  }
  FAIL("no row " << name);
  return s.rows.front();
}

TEST_CASE("Running nodes show their phase, time in phase, output age and last event") {
  RunRootFiles files{.root = "/r/job7", .nodes = {Running("A", kNow - 3), Running("B", kNow - 5)}};
  auto s = BuildSnapshot(files, kNow);
  REQUIRE(s.nodes == 2);
  CHECK(s.state == "running");
  const Row& a = RowOf(s, "A");
  CHECK(a.phase == Phase::kRunning);
  CHECK(a.in_phase_s == Approx(300));
  CHECK(a.output_age_s == Approx(3));
  CHECK(a.last_event == "torch.watchdog_timeout (collective_timeout)");
  CHECK_FALSE(a.stale);
  CHECK(s.stalest == "B (silent 5s)");
}

TEST_CASE("A silent node is marked stale and sorts first") {
  RunRootFiles files{.nodes = {Running("A", kNow - 2), Running("B", kNow - 400)}};
  auto s = BuildSnapshot(files, kNow, {.stale_after_s = 60});
  CHECK(s.rows.front().name == "B");
  CHECK(s.rows.front().stale);
  CHECK_FALSE(RowOf(s, "A").stale);
  auto text = PlainText(RenderSnapshot(s, 0));
  CHECK(text.find("! B") != std::string::npos);
}

TEST_CASE("The heartbeat, once touched, decides staleness instead of output") {
  NodeFiles n = Running("A", kNow - 400);
  n.heartbeat = Ok("heartbeat", "", kNow - 4);
  auto s = BuildSnapshot({.nodes = {n}}, kNow);
  CHECK(s.rows[0].heartbeat_age_s == Approx(4));
  CHECK_FALSE(s.rows[0].stale);
}

TEST_CASE("A supervisor that stopped publishing is named") {
  NodeFiles n = Running("A", kNow - 2);
  n.live = Ok("live.json", Live(kNow - 2, "running", kNow - 600));
  auto s = BuildSnapshot({.nodes = {n}}, kNow);
  REQUIRE(s.rows[0].stale);
  CHECK(s.rows[0].problems.at(0).find("supervisor not heard from for 10m00s") == 0);
}

TEST_CASE("Phases before the job starts come from the files present") {
  NodeFiles pre{.name = "P", .dir_mtime_unix = kNow - 8};
  NodeFiles warm{.name = "W"};
  warm.env_plan = Ok("env-plan.json", "", kNow - 30);
  warm.preflight = Ok("preflight.json", "", kNow - 20);
  auto s = BuildSnapshot({.nodes = {pre, warm, Running("R", kNow - 1)}}, kNow);
  CHECK(RowOf(s, "P").phase == Phase::kPreflight);
  CHECK(RowOf(s, "P").in_phase_s == Approx(8));
  CHECK(RowOf(s, "W").phase == Phase::kWarmup);
  CHECK(RowOf(s, "W").in_phase_s == Approx(20));
  CHECK(s.state == "starting");
  CHECK(s.slowest == "P (preflight for 8s)");
}

TEST_CASE("A hang event names its node in the header and marks its row") {
  hang::PeerEvent e;
  e.kind = "hang";
  e.node = "A";
  e.time_unix = kNow - 1;
  e.time_utc = "2027-01-15T08:00:00Z";
  e.trigger = "signature";
  e.headline = "collective timeout";
  NodeFiles a = Running("A", kNow - 1);
  a.live = Ok("live.json", Live(kNow - 1, "capturing"));
  RunRootFiles files{.nodes = {Running("B", kNow - 1), a},
                     .events = {Ok("hang-A-0123456789abcdef.json", hang::EventJson(e))}};
  auto s = BuildSnapshot(files, kNow);
  CHECK(s.state == "hang");
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].node == "A");
  CHECK(s.rows.front().name == "A");
  CHECK(s.rows.front().posted_hang);
  CHECK(s.rows.front().phase == Phase::kCapturing);
  auto text = PlainText(RenderSnapshot(s, 0));
  CHECK(text.find("hang on A at ") != std::string::npos);
}

TEST_CASE("An ended node shows its exit status and its bundle's verdict") {
  NodeFiles n{.name = "A"};
  n.status = Ok("status.json", R"({"state":"finished","exit_status":124})");
  n.bundles = {{.name = "hang-A-20270115T080000Z",
                .complete = true,
                .mtime_unix = kNow - 9,
                .summary = Ok("summary.json", R"({"category":"collective_timeout",)"
                                              R"("headline":"rank 1 stuck","fix":"check IB",)"
                                              R"("signature":"torch.watchdog_timeout"})")}};
  NodeFiles ok{.name = "B"};
  ok.status = Ok("status.json", R"({"state":"finished","exit_status":0})");
  auto s = BuildSnapshot({.nodes = {ok, n}}, kNow);
  CHECK(s.state == "failed");
  const Row& a = RowOf(s, "A");
  CHECK(a.phase == Phase::kEnded);
  CHECK(a.exit_status == 124);
  CHECK(a.verdict == "collective_timeout: rank 1 stuck");
  CHECK(a.bundle_summary.find("fix: check IB") != std::string::npos);
  CHECK(RowOf(s, "B").verdict == "ok");
  CHECK(s.rows.front().name == "A");
}

TEST_CASE("A bundle still being written means the node is capturing") {
  NodeFiles n = Running("A", kNow - 1);
  n.bundles = {
      {.name = ".hang-A-20270115T080000Z.partial", .complete = false, .mtime_unix = kNow - 2}};
  auto s = BuildSnapshot({.nodes = {n}}, kNow);
  CHECK(s.rows[0].phase == Phase::kCapturing);
  CHECK(s.rows[0].in_phase_s == Approx(2));
}

TEST_CASE("Hostile and partial files are named, never parsed into nonsense") {
  NodeFiles a{.name = "A"};
  a.status = {
      .state = FileRead::State::kProblem, .name = "status.json", .problem = "a FIFO, not read"};
  NodeFiles b{.name = "B"};
  b.status = Ok("status.json", "{\"state\": \"runn");  // cut by a crash of the writer
  b.live = Ok("live.json", "\xff\xfe{\"phase\": \"\xc3\x28\"}");
  NodeFiles c{.name = "C\x1b[2J", .problem = "run directory not readable (permission denied)"};
  RunRootFiles files{.nodes = {a, b, c}, .rejected = {"x.json: not owned by us, not trusted"}};
  auto s = BuildSnapshot(files, kNow);
  CHECK(RowOf(s, "A").problems.at(0) == "status.json: a FIFO, not read");
  CHECK(RowOf(s, "B").problems.at(0) == "status.json: not a JSON object (partial or corrupt file)");
  CHECK(RowOf(s, "B").problems.at(1) == "live.json: not a JSON object (partial or corrupt file)");
  CHECK(RowOf(s, "C\\x1b[2J").problems.at(0).find("permission denied") != std::string::npos);
  CHECK(s.problems.at(0) == ".events/x.json: not owned by us, not trusted");
  // No escape sequence reaches the terminal.
  CHECK(PlainText(RenderSnapshot(s, 0)).find('\x1b') == std::string::npos);
  CHECK(nlohmann::json::parse(SnapshotJson(s))["rows"].size() == 3);
}

TEST_CASE("live.json is read as a document reads it: last key wins, other types are absent") {
  auto row = [](std::string live) {
    NodeFiles n = Running("A", kNow - 3);
    n.live = Ok("live.json", std::move(live));
    return BuildSnapshot({.nodes = {n}}, kNow).rows.at(0);
  };
  // Nested objects and arrays are skipped; a key inside them is not last_event's.
  Row r = row(R"({"phase":"capturing","phase_since_unix":1799999990,"updated_unix":"soon",
                  "lines":{"phase":"running","last_output_unix":1},"tail":[{"signature":"x"}],
                  "last_output_unix":1799999996,
                  "last_event":{"signature":"nccl.ib_timeout","deep":{"category":"no"},
                                "category":"network"}})");
  CHECK(r.phase == Phase::kCapturing);
  CHECK(r.in_phase_s == Approx(10));
  CHECK(r.supervisor_age_s == -1);  // "soon" is not a number
  CHECK(r.output_age_s == Approx(4));
  CHECK(r.last_event == "nccl.ib_timeout (network)");
  CHECK(r.problems.empty());
  // The last of two keys wins, also when it is of another type.
  r = row(R"({"last_event":{"signature":"a","category":"b"},"last_event":"none",
              "last_output_unix":1799999990,"last_output_unix":1799999998})");
  CHECK(r.last_event.empty());
  CHECK(r.output_age_s == Approx(2));
  r = row(R"({"last_event":7,"last_event":{"signature":"s\u001b[2J"}})");
  CHECK(r.last_event == "s\\x1b[2J");
  // Not an object, or not JSON: named, nothing taken from it.
  for (std::string bad : {"[1,2]", "7", R"({"phase":"capturing")", R"({"phase":"capturing"} x)"}) {
    CAPTURE(bad);
    r = row(bad);
    CHECK(r.phase == Phase::kRunning);
    CHECK(r.output_age_s == -1);
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0] == "live.json: not a JSON object (partial or corrupt file)");
  }
}

// live.json read by the watcher: either its fields, or the one problem and nothing from it.
Row RowWithLive(std::string live) {
  NodeFiles n = Running("A", kNow - 3);
  n.live = Ok("live.json", std::move(live));
  return BuildSnapshot({.nodes = {n}}, kNow).rows.at(0);
}

void CheckRejected(const std::string& live) {
  const Row r = RowWithLive(live);
  INFO("live.json: " << nlohmann::json(live).dump(-1, ' ', true,
                                                  nlohmann::json::error_handler_t::replace));
  CHECK(r.phase == Phase::kRunning);
  CHECK(r.output_age_s == -1);
  CHECK(r.last_event.empty());
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0] == "live.json: not a JSON object (partial or corrupt file)");
}

TEST_CASE("Every cut of a live.json is named as partial, the whole file is read") {
  const std::string live = Live(kNow - 3, "capturing");
  const std::size_t close = live.rfind('}');
  for (std::size_t n = 0; n <= close; ++n) CheckRejected(live.substr(0, n));
  for (std::size_t n = close + 1; n <= live.size(); ++n) {
    const Row r = RowWithLive(live.substr(0, n));
    CHECK(r.problems.empty());
    CHECK(r.phase == Phase::kCapturing);
    CHECK(r.output_age_s == Approx(3));
    CHECK(r.last_event == "torch.watchdog_timeout (collective_timeout)");
  }
}

TEST_CASE("Hostile live.json: deep nesting, NUL bytes, bad UTF-8, random bytes") {
  // 200000 deep inside the object, closed or cut: no stack overflow, no crash.
  const std::string deep(200000, '['), shut(200000, ']');
  Row r = RowWithLive(R"({"lines":)" + deep + shut + R"(,"last_output_unix":1799999998})");
  CHECK(r.problems.empty());
  CHECK(r.output_age_s == Approx(2));
  CheckRejected(R"({"lines":)" + deep);
  CheckRejected(deep + shut);  // an array, not an object
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += R"({"last_event":)";
  CheckRejected(R"({"a":)" + objects);
  // NUL bytes: inside a string or between tokens the file is corrupt.
  CheckRejected(std::string("{\"phase\":\"capt\0uring\"}", 22));
  CheckRejected(std::string("{\"phase\":\0\"capturing\"}", 22));
  CheckRejected(std::string("\0{\"phase\":\"capturing\"}", 22));
  // Bytes that are not UTF-8 (an overlong '/', a lone surrogate, a cut sequence, a stray 0xff).
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xff", "\\ud83d"}) {
    CheckRejected(std::string(R"({"phase":"capturing","last_event":{"signature":")") + bad +
                  R"("}})");
  }
  // Bytes changed at random: fields or the one problem, never a crash.
  const std::string live = Live(kNow - 3);
  const std::string bytes = "{}[]\",:\\.-+eE0123456789 tfnu\xc3\xa9\xff";
  std::mt19937 rng(28);
  int rejected = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string t = live;
    for (int k = 0; k < 1 + round % 3; ++k) t[rng() % t.size()] = bytes[rng() % bytes.size()];
    const Row row = RowWithLive(t);  // a changed digit may make the supervisor look silent
    for (const auto& p : row.problems) {
      if (!p.starts_with("live.json")) continue;
      CHECK(p == "live.json: not a JSON object (partial or corrupt file)");
      CHECK(row.output_age_s == -1);
      ++rejected;
    }
  }
  CHECK(rejected > 500);  // most changes break the file
}

TEST_CASE("Tasks of one node are one row unless per task") {
  RunRootFiles files{.nodes = {Running("gpu01-rank0", kNow - 1), Running("gpu01-rank1", kNow - 200),
                               Running("gpu02-rank0", kNow - 1)}};
  auto grouped = BuildSnapshot(files, kNow);
  REQUIRE(grouped.nodes == 2);
  CHECK(grouped.rows.front().name == "gpu01 [2 tasks: gpu01-rank1]");
  CHECK(grouped.rows.front().dir == "gpu01-rank1");
  CHECK(BuildSnapshot(files, kNow, {.per_task = true}).nodes == 3);
}

TEST_CASE("The snapshot JSON has the documented fields") {
  auto s = BuildSnapshot({.root = "/r", .nodes = {Running("A", kNow - 3)}}, kNow);
  auto j = nlohmann::json::parse(SnapshotJson(s));
  CHECK(j["schema"] == "safe-launch.watch/1");
  for (const char* k : {"root", "now_unix", "state", "nodes", "slowest", "stalest", "stale_after_s",
                        "diagnosis", "events", "problems", "rows"}) {
    CHECK(j.contains(k));
  }
  const auto& r = j["rows"][0];
  for (const char* k : {"node", "tasks", "phase", "in_phase_s", "output_age_s", "heartbeat_age_s",
                        "supervisor_age_s", "last_event", "exit_status", "verdict", "bundle",
                        "stale", "posted_hang", "problems"}) {
    CHECK(r.contains(k));
  }
  CHECK(r["output_age_s"] == 3.0);
  CHECK(r["heartbeat_age_s"].is_null());
}

TEST_CASE("The parse memo reuses a node's state while its files are unchanged") {
  NodeFiles n = Running("A", kNow - 3);
  n.signature = "s1";
  ParseMemo memo;
  BuildSnapshot({.nodes = {n}}, kNow, {}, &memo);
  n.live = Ok("live.json", Live(kNow - 1));  // same signature: not parsed again
  CHECK(BuildSnapshot({.nodes = {n}}, kNow, {}, &memo).rows[0].output_age_s == Approx(3));
  n.signature = "s2";
  CHECK(BuildSnapshot({.nodes = {n}}, kNow, {}, &memo).rows[0].output_age_s == Approx(1));
}

TEST_CASE("Ages read as people say them") {
  CHECK(FormatAge(-1) == "-");
  CHECK(FormatAge(12.7) == "12s");
  CHECK(FormatAge(184) == "3m04s");
  CHECK(FormatAge(7800) == "2h10m");
  CHECK(FormatAge(3 * 86400 + 4 * 3600) == "3d4h");
}

}  // namespace
}  // namespace sl::watch
