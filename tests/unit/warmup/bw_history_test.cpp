// History, baseline and nccl-tests entries (warmup/bw_history.h) and the picture (bw_svg.h).
#include "warmup/bw_history.h"

#include <catch2/catch.hpp>

#include "warmup/bw_svg.h"

using namespace sl;
using namespace sl::warmup;

namespace {

HistoryEntry Run(double scale, std::string nccl = "2.21.5") {
  HistoryEntry e;
  e.source = "bench";
  e.backend = "nccl";
  e.nodes = {"gpu02", "gpu01"};
  e.ranks_per_node = 8;
  e.versions = {{"nccl", nccl}, {"safe_launch", "0.1.0"}};
  e.sweep = {{8u << 20, 30 * scale}, {512u << 20, 44 * scale}};
  return e;
}

}  // namespace

TEST_CASE("history lines round-trip and bad lines are named, not fatal") {
  std::string text =
      nlohmann::json(Run(1)).dump() + "\nnot json\n\n" + nlohmann::json(Run(0.9)).dump() + "\n";
  std::vector<std::string> problems;
  auto past = ParseHistory(text, &problems);
  REQUIRE(past.size() == 2);
  CHECK(past[1].sweep[1].busbw_gbps == Approx(39.6));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("line 2:") == 0);
}

TEST_CASE("a drop beyond max_busbw_drop against the median of comparable runs warns") {
  std::vector<HistoryEntry> past = {Run(1.0), Run(1.02), Run(0.98), Run(0.5, "2.18.3")};
  auto ok = CompareWithHistory(Run(0.97), past, 5, 0.1);
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].outcome == Outcome::kPass);
  CHECK(ok[0].message.find("median of the last 3 run(s)") != std::string::npos);  // not 2.18.3
  auto drop = CompareWithHistory(Run(0.8), past, 5, 0.1);
  CHECK(drop[0].outcome == Outcome::kWarn);
  CHECK(drop[0].message.find("512 MiB 44.00 -> 35.20 GB/s (-20%)") != std::string::npos);
  // Other nodes (or other NCCL) have no history yet.
  HistoryEntry other = Run(0.5);
  other.nodes = {"gpu03", "gpu04"};
  CHECK(CompareWithHistory(other, past, 5, 0.1)[0].outcome == Outcome::kSkip);
  // Node order and safe-launch's own version do not matter.
  HistoryEntry reordered = Run(1);
  reordered.nodes = {"gpu01", "gpu02"};
  reordered.versions["safe_launch"] = "0.2.0";
  CHECK(reordered.Key() == Run(1).Key());
}

TEST_CASE("a baseline is a history line or a bare sweep, an empty one is refused") {
  auto line = ParseBaseline(nlohmann::json(Run(1)).dump());
  REQUIRE(line.ok());
  CHECK(CompareWithBaseline(Run(0.7), *line, 0.1)[0].outcome == Outcome::kWarn);
  auto bare = ParseBaseline(R"({"sweep": [{"bytes": 8388608, "busbw_gbps": 31}]})");
  REQUIRE(bare.ok());
  CHECK(CompareWithBaseline(Run(1), *bare, 0.1)[0].outcome == Outcome::kPass);
  CHECK_FALSE(ParseBaseline(R"({"sweep": []})").ok());
  CHECK_FALSE(ParseBaseline(R"({"sweep": [{"bytes": 0, "busbw_gbps": 1}]})").ok());
  CHECK_FALSE(ParseBaseline("garbage").ok());
}

TEST_CASE("an nccl-tests run becomes an entry, #wrong is data corruption") {
  auto out = ParseNcclTests(
      "#  Rank  0 Group  0 Pid  1 on a device  0 [0x07] GPU\n"
      "#  Rank  1 Group  0 Pid  2 on b device  0 [0x07] GPU\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     8388608       2097152     float     sum      -1    421.3   19.91   29.87      3    "
      "418.9   20.03   30.04      0\n"
      "# Avg bus bandwidth    : 29.9\n");
  REQUIRE(out.ok());
  HistoryEntry e = EntryFromNcclTests(*out);
  CHECK(e.nodes == std::vector<std::string>{"a", "b"});
  CHECK(e.ranks_per_node == 1);
  REQUIRE(e.sweep.size() == 1);
  CHECK(e.sweep[0].busbw_gbps == Approx(30.04));
  auto fs = NcclTestsFindings(*out, "x.txt");
  REQUIRE_FALSE(fs.empty());
  CHECK(fs[0].outcome == Outcome::kFail);
  CHECK(fs[0].message.find("data corruption: 3 wrong at 8 MiB") != std::string::npos);
}

TEST_CASE("the picture has the expected line, the baseline and a red slow node") {
  SvgInput in;
  in.title = "busbw <2 nodes>";
  in.measured = {{1u << 20, 1}, {8u << 20, 2}};
  in.expected_gbps = 5;
  in.baseline = {{1u << 20, 1.5}};
  in.nodes = {{"node 1", {{1u << 20, 1}}, false}, {"node 2", {{1u << 20, 0.1}}, true}};
  std::string svg = BandwidthSvg(in);
  CHECK(svg.find("<svg") == 0);
  CHECK(svg.find("busbw &lt;2 nodes&gt;") != std::string::npos);
  CHECK(svg.find("expected 5.0 GB/s") != std::string::npos);
  CHECK(svg.find(">baseline<") != std::string::npos);
  CHECK(svg.find("node 2 (slow)") != std::string::npos);
  CHECK(svg.find("stroke=\"red\"") != std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(BandwidthSvg({}).find("</svg>") != std::string::npos);  // nothing to draw: still a file
}
