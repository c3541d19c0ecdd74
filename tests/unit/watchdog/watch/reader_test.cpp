#include "watchdog/watch/reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

namespace sl::watch {
namespace {

namespace fs = std::filesystem;

struct Tree {
  fs::path root;
  Tree() {
    char tmpl[] = "/tmp/sl-watch-test-XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~Tree() { fs::remove_all(root); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel, std::ios::binary) << text;
  }
};

const NodeFiles& NodeOf(const RunRootFiles& f, const std::string& name) {
  for (const auto& n : f.nodes) {
    if (n.name == name) return n;
  }
  FAIL("no node " << name);
  return f.nodes.front();
}

TEST_CASE("The reader names links, FIFOs and oversized files without following or blocking") {
  Tree t;
  t.Write("A/status.json", R"({"state":"running"})");
  t.Write("B/live.json", std::string(300 * 1024, 'x'));
  fs::create_directories(t.root / "C");
  REQUIRE(::mkfifo((t.root / "C/status.json").c_str(), 0600) == 0);
  fs::create_symlink("/etc/passwd", t.root / "B/status.json");
  fs::create_directory_symlink("/etc", t.root / "D");
  t.Write("diagnosis.md", "not a node");
  RunRootReader reader(t.root.string());
  auto f = reader.Read();
  REQUIRE(f.problem.empty());
  REQUIRE(f.nodes.size() == 4);
  CHECK(NodeOf(f, "A").status.text == R"({"state":"running"})");
  CHECK(NodeOf(f, "B").status.problem == "a symbolic link, not followed");
  CHECK(NodeOf(f, "B").live.truncated);
  CHECK(NodeOf(f, "B").live.text.empty());
  CHECK(NodeOf(f, "C").status.problem == "a FIFO, not read");
  CHECK(NodeOf(f, "D").problem == "run directory is a symbolic link, not followed");
}

TEST_CASE("The reader finds bundles, complete and partial, and their summaries") {
  Tree t;
  t.Write("A/status.json", "{}");
  t.Write("A/hang-A-20270115T080000Z/summary.json", R"({"category":"stall"})");
  t.Write("A/hang-A-20270115T080000Z.tar.gz", "gz");
  fs::create_directories(t.root / "A/.failure-A-20270115T090000Z.partial");
  RunRootReader reader(t.root.string());
  auto f = reader.Read();
  const auto& b = NodeOf(f, "A").bundles;
  REQUIRE(b.size() == 2);
  CHECK(b[0].name == ".failure-A-20270115T090000Z.partial");
  CHECK_FALSE(b[0].complete);
  CHECK(b[1].complete);
  CHECK(b[1].summary.text == R"({"category":"stall"})");
}

TEST_CASE("Event files are read when trusted, the others listed with why") {
  Tree t;
  t.Write(".events/hang-A-0000000000000000.json", "{}");
  t.Write(".events/.hang-A-1111.json.tmp", "{}");
  fs::create_symlink("/etc/passwd", t.root / ".events/hang-B-2222222222222222.json");
  t.Write(".events/big-C-3333333333333333.json", std::string(70 * 1024, ' '));
  RunRootReader reader(t.root.string());
  auto f = reader.Read();
  REQUIRE(f.events.size() == 1);
  CHECK(f.events[0].name == "hang-A-0000000000000000.json");
  REQUIRE(f.rejected.size() == 2);
  CHECK(f.rejected[0] == "big-C-3333333333333333.json: over 65536 bytes, not read");
  CHECK(f.rejected[1] == "hang-B-2222222222222222.json: a symbolic link, not followed");
}

TEST_CASE("A file is read again only when it changed") {
  Tree t;
  t.Write("A/status.json", R"({"state":"running"})");
  RunRootReader reader(t.root.string());
  const std::string sig = reader.Read().nodes.at(0).signature;
  CHECK(reader.Read().nodes.at(0).signature == sig);
  t.Write("A/status.json", R"({"state":"finished","exit_status":0})");
  auto again = reader.Read();
  CHECK(again.nodes.at(0).signature != sig);
  CHECK(again.nodes.at(0).status.text.find("finished") != std::string::npos);
}

TEST_CASE(
    "A live.json renamed into place is read again alone, a new bundle or status still shows") {
  Tree t;
  t.Write("A/status.json", R"({"state":"running"})");
  t.Write("A/live.json", R"({"phase":"running","updated_unix":1})");
  RunRootReader reader(t.root.string());
  const std::string sig = NodeOf(reader.Read(), "A").signature;
  // The supervisor's writer: a temp file renamed over live.json (the directory's mtime changes).
  auto replace = [&](const std::string& rel, const std::string& text) {
    t.Write(rel + ".tmp", text);
    fs::rename(t.root / (rel + ".tmp"), t.root / rel);
  };
  replace("A/live.json", R"({"phase":"running","updated_unix":2})");
  replace("A/live.tail", "step 2\n");
  {
    const NodeFiles& n = NodeOf(reader.Read(), "A");
    CHECK(n.live.text.find("\"updated_unix\":2") != std::string::npos);
    CHECK(n.status.text == R"({"state":"running"})");
    CHECK(n.signature != sig);
  }
  replace("A/status.json", R"({"state":"finished","exit_status":0})");
  CHECK(NodeOf(reader.Read(), "A").status.text.find("finished") != std::string::npos);
  // A bundle directory appears (st_nlink 3): the directory is listed again.
  t.Write("A/hang-A-20270115T080000Z/summary.json", R"({"category":"stall"})");
  replace("A/live.json", R"({"phase":"capturing","updated_unix":3})");
  {
    const NodeFiles& n = NodeOf(reader.Read(), "A");
    REQUIRE(n.bundles.size() == 1);
    CHECK(n.live.text.find("capturing") != std::string::npos);
  }
  // live.json removed: no longer shown.
  fs::remove(t.root / "A/live.json");
  CHECK(NodeOf(reader.Read(), "A").live.state == FileRead::State::kMissing);
}

TEST_CASE("An ended node's tails are read from their end, bounded") {
  Tree t;
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "line " + std::to_string(i) + "\n";
  t.Write("A/stdout.tail", big);
  t.Write("A/stderr.tail", "err \x1b[31mred\n");
  RunRootReader reader(t.root.string());
  auto lines = reader.EndTail("A", 3);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "line 4997");
  CHECK(lines[2] == "line 4999");
  CHECK(lines[3] == "err \\x1b[31mred");
  t.Write("A/live.tail", "step 41\nstep 42\n");
  CHECK(reader.Tail("A", 20) == std::vector<std::string>{"step 41", "step 42"});
}

TEST_CASE("A missing run root is a problem, not a crash") {
  RunRootReader reader("/nonexistent/safe-launch-runs/1");
  auto f = reader.Read();
  CHECK(f.problem == "No such file or directory");
  CHECK(f.nodes.empty());
}

TEST_CASE("The run root of a Slurm job is found by its id") {
  Tree t;
  fs::create_directories(t.root / "812.0");
  std::string error;
  CHECK(FindJobRoot(t.root.string(), "812", &error) == (t.root / "812.0").string());
  CHECK(FindJobRoot(t.root.string(), "9", &error).empty());
  CHECK(error.find("no run root for job 9") == 0);
}

}  // namespace
}  // namespace sl::watch

namespace sl::watch {
namespace {

// A read that never returns (a hard-mounted NFS server gone): the worker's hook blocks on node
// B until released, as a stat of B's files would.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("A node whose read never returns is shown unreadable and does not freeze a refresh") {
  Tree t;
  t.Write("A/status.json", R"({"state":"running"})");
  t.Write("B/status.json", R"({"state":"running"})");
  auto gate = std::make_shared<Gate>();
  ReaderLimits lim;
  lim.read_deadline_ms = 200;
  lim.before_node = [gate](const std::string& node) {
    if (node == "B") gate->Wait();
  };
  RunRootReader reader(t.root.string(), lim);
  const auto t0 = std::chrono::steady_clock::now();
  auto first = reader.Read();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(NodeOf(first, "B").problem.find("unreadable for 0s") != std::string::npos);
  // The next refresh skips B and reads the rest.
  auto second = reader.Read();
  CHECK(NodeOf(second, "A").status.text == R"({"state":"running"})");
  CHECK(NodeOf(second, "B").problem.find("has not returned") != std::string::npos);
  CHECK(reader.Tail("B", 5).front().find("unreadable for") != std::string::npos);
  // The read returns at last: B is read again.
  gate->Open();
  bool back = false;
  for (int i = 0; i < 100 && !back; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    back = NodeOf(reader.Read(), "B").status.ok();
  }
  CHECK(back);
}

}  // namespace sl::watch
