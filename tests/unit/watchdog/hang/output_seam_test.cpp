// Signatures inside lines longer than kMaxHookLine: the supervisor delivers such a line in pieces,
// and a signature that straddles a cut between two pieces must still be found.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "watchdog/hang/hang_monitor.h"
#include "watchdog/supervisor.h"

using namespace sl::hang;
using sl::watchdog::Clock;
using sl::watchdog::kMaxHookLine;

namespace {

const std::string kTimeout =
    "[rank3]:[E1130 ProcessGroupNCCL.cpp:689] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=12, OpType=ALLGATHER, NumelIn=8, NumelOut=64, "
    "Timeout(ms)=600000) ran for 600100 milliseconds before timing out.";

struct Monitor {
  std::string run;
  std::unique_ptr<HangMonitor> m;
  Monitor() {
    char tmpl[] = "/tmp/sl-seam-test-XXXXXX";
    run = ::mkdtemp(tmpl);
    HangOptions o;
    o.stall_timeout_s = 0;
    o.on_hang = OnHang::kCaptureOnly;
    o.run_dir = run;
    m = std::make_unique<HangMonitor>(o);
    m->OnStart(0);
  }
  ~Monitor() { std::filesystem::remove_all(run); }
  // Feeds `text` as the pump does: whole lines in one block, a long line in kMaxHookLine pieces.
  void FeedAsPump(const std::string& text) {
    std::string partial;
    const auto t = Clock::now();
    for (char c : text) {
      partial.push_back(c);
      if (c == '\n' || partial.size() == kMaxHookLine) {
        m->OnOutput(sl::watchdog::kStderr, partial, t);
        partial.clear();
      }
    }
    if (!partial.empty()) m->OnOutput(sl::watchdog::kStderr, partial, t);
  }
  sl::diagnose::Verdict Verdict() {
    bundle = m->Capture(sl::diagnose::Trigger::kSignature, std::nullopt);
    return bundle.verdict;
  }
  // The evidence as the bundle's summary.json records it.
  nlohmann::json Evidence() const {
    std::ifstream in(bundle.path + "/summary.json");
    auto j = nlohmann::json::parse(in, nullptr, false);
    return j.is_object() ? j.value("evidence", nlohmann::json::array()) : nlohmann::json::array();
  }
  BundleInfo bundle;
};

}  // namespace

TEST_CASE("a signature across a piece boundary of a long line is found, with its line number") {
  for (std::size_t cut_inside : {1u, 60u, 100u, 120u, 170u}) {
    INFO("signature starts " << cut_inside << " bytes before the cut");
    Monitor mon;
    // Line 1 is short; line 2 is long and holds the signature across its 4th cut (256 KiB).
    std::string text = "starting\n" + std::string(4 * kMaxHookLine - cut_inside, 'x') + kTimeout +
                       std::string(1000, 'y') + "\nafter\n";
    mon.FeedAsPump(text);
    auto v = mon.Verdict();
    CHECK(v.seq == "12");
    CHECK(v.op == "ALLGATHER");
    auto ev = mon.Evidence();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0]["line_number"] == 2);
    CHECK(ev[0]["source"] == "stderr");
  }
}

TEST_CASE("an elided watchdog line cut by a piece boundary is held at the cut and recorded once") {
  // The piece before the cut already holds "Watchdog caught collective operation timeout" (the
  // elided form's substrings); the rest of the line follows in the next piece.
  const std::string elided =
      "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(... OpType=BROADCAST ...)";
  for (std::size_t cut_inside : {70u, 80u}) {
    INFO("the cut falls " << cut_inside << " bytes into the line");
    Monitor mon;
    mon.FeedAsPump("starting\n" + std::string(kMaxHookLine - cut_inside, 'x') + elided + "\n");
    mon.Verdict();
    auto ev = mon.Evidence();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0]["line_number"] == 2);
  }
}

TEST_CASE("a signature wholly inside one piece is recorded once, not again at the seam") {
  Monitor mon;
  std::string text = std::string(kMaxHookLine - kTimeout.size() - 10, 'x') + kTimeout +
                     std::string(kMaxHookLine, 'y') + "\n";
  mon.FeedAsPump(text);
  auto v = mon.Verdict();
  CHECK(v.seq == "12");
  CHECK(mon.Evidence().size() == 1);
}

TEST_CASE("lines after a long line keep their numbers") {
  Monitor mon;
  mon.FeedAsPump("one\n" + std::string(3 * kMaxHookLine + 5, 'x') + "\n" + kTimeout + "\n");
  mon.Verdict();
  auto ev = mon.Evidence();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0]["line_number"] == 3);
}

TEST_CASE("through the real pump: a signature across the 256 KiB read boundary is found") {
  Monitor mon;
  sl::watchdog::SupervisorOptions o;
  // One line: 256 KiB - 120 bytes of 'x' and the watchdog text, then (later, so that the pump has
  // cut the line into pieces meanwhile) its end.
  o.argv = {"/bin/sh", "-c",
            "head -c " + std::to_string((256u << 10) - 120) +
                " /dev/zero | tr '\\0' x; printf '%s' '" + kTimeout +
                "'; sleep 0.3; printf ' end\\n'"};
  o.env = sl::ProcessEnvironment();
  o.tick = std::chrono::milliseconds(20);
  sl::watchdog::Supervisor sup(o, mon.m->Hooks());
  // The job's output is forwarded to ours: keep 256 KiB of it out of the test log.
  std::fflush(stdout);
  int saved = ::dup(1);
  int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, 1);
  auto r = sup.Run();
  ::dup2(saved, 1);
  ::close(saved);
  ::close(null);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  auto v = mon.Verdict();
  CHECK(v.seq == "12");
}
