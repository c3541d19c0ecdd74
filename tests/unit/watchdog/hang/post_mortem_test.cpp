// The job-level post-mortem (watchdog/hang/post_mortem.h): the diagnosis runs in a forked child
// of the library call, so one that hangs is killed at its deadline and never holds the exit.
#include "watchdog/hang/post_mortem.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace sl::hang;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct TempRoot {
  std::string dir;
  TempRoot() {
    char tmpl[] = "/tmp/sl-post-mortem-XXXXXX";
    dir = ::mkdtemp(tmpl);
    fs::create_directories(dir + "/gpu01");
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

PostMortemOptions Options(const std::string& root, DiagnoseRoot diagnose) {
  PostMortemOptions o;
  o.job_root = root;
  o.self_dir = "gpu01";
  o.wait = 100ms;
  o.diagnose = std::move(diagnose);
  o.diagnose_deadline = 5s;
  return o;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("the post-mortem diagnoses the job root in a child process and names the root") {
  TempRoot root;
  const pid_t self = ::getpid();
  auto o = Options(root.dir, [self](const std::string& r) {
    // In a child: what it writes on disk is all the parent sees of it.
    std::ofstream(r + "/diagnosis.json") << "{\"pid_differs\": " << (::getpid() != self) << "}";
    return 1;
  });
  CHECK(RunPostMortem(o, nullptr) == root.dir);
  std::ifstream in(root.dir + "/diagnosis.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CHECK(text == "{\"pid_differs\": 1}");
}

TEST_CASE("a diagnosis that hangs is killed at its deadline and does not hold the job's exit") {
  TempRoot root;
  auto o = Options(root.dir, [](const std::string&) {
    std::this_thread::sleep_for(60s);  // a dead file system
    return 0;
  });
  o.diagnose_deadline = 300ms;
  const auto start = std::chrono::steady_clock::now();
  CHECK(RunPostMortem(o, nullptr).empty());
  CHECK(SecondsSince(start) < 3.0);
}

TEST_CASE("a diagnosis that throws ends its child, not safe-launch") {
  TempRoot root;
  auto o = Options(root.dir, [](const std::string&) -> int { throw std::runtime_error("bad"); });
  CHECK(RunPostMortem(o, nullptr) == root.dir);  // ran (exit 70), wrote nothing
  CHECK_FALSE(fs::exists(root.dir + "/diagnosis.json"));
}

TEST_CASE("without a job root or with no wait there is no post-mortem at all") {
  TempRoot root;
  const std::string marker = root.dir + "/ran";
  auto mark = [marker](const std::string&) {
    std::ofstream(marker) << "ran";  // in the child: a file is what the parent can see
    return 0;
  };
  auto o = Options("", mark);
  CHECK(RunPostMortem(o, nullptr).empty());
  o = Options(root.dir, mark);
  o.wait = 0ms;
  CHECK(RunPostMortem(o, nullptr).empty());
  CHECK_FALSE(fs::exists(marker));
  o.wait = 100ms;  // and the same options with a wait do run it
  CHECK(RunPostMortem(o, nullptr) == root.dir);
  CHECK(fs::exists(marker));
}
