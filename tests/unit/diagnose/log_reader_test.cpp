#include "diagnose/log_reader.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "diagnose/ingest.h"

using namespace sl::diagnose;
using namespace std::literals;

TEST_CASE("collector prefixes come off and are kept: CRI timestamp, stream tag, rank") {
  LinePrefix p;
  CHECK(StripCollectorPrefixes("2024-05-01T10:00:00.123456789Z stdout F [rank3]:hello", &p) ==
        "hello");
  CHECK(p.timestamp == "2024-05-01T10:00:00.123456789Z");
  CHECK(p.rank == "3");
}

TEST_CASE("syslog, dmesg, pod, torchrun --tee and srun -l prefixes come off") {
  LinePrefix a;
  CHECK(StripCollectorPrefixes("Dec  1 10:00:00 gpu07 kernel: [ 123.456789] NVRM: Xid 79", &a) ==
        "NVRM: Xid 79");
  LinePrefix b;
  CHECK(StripCollectorPrefixes("worker-1  | [default2]:NCCL WARN x", &b) == "NCCL WARN x");
  CHECK(b.pod == "worker-1");
  CHECK(b.rank == "2");
  LinePrefix c;
  CHECK(StripCollectorPrefixes("12: gpu01:1:1 [0] NCCL INFO y", &c) == "gpu01:1:1 [0] NCCL INFO y");
  CHECK(c.rank == "12");
  LinePrefix d;
  CHECK(StripCollectorPrefixes("[2024-05-01 10:00:00,123] INFO z", &d) == "INFO z");
  LinePrefix e;
  CHECK(StripCollectorPrefixes("plain line", &e) == "plain line");
  CHECK(e.timestamp.empty());
  // Open MPI's --tag-output, Ray's worker prefix, pdsh's host label, a Markdown paste.
  LinePrefix f, g, h, k, m;
  CHECK(StripCollectorPrefixes("[1,3]<stdout>:gpu07:1:2 [3] NCCL WARN x", &f) ==
        "gpu07:1:2 [3] NCCL WARN x");
  CHECK(f.rank == "3");
  CHECK(StripCollectorPrefixes("(RayWorkerWrapper pid=263, ip=10.0.16.95) ERROR 05-25 x", &g) ==
        "ERROR 05-25 x");
  CHECK(StripCollectorPrefixes("(pid=776) gpu:1:2 [0] NCCL INFO y", &g) ==
        "gpu:1:2 [0] NCCL INFO y");
  CHECK(StripCollectorPrefixes("gpu07: gpu07:1234:1250 [3] NCCL WARN z", &h) ==
        "gpu07:1234:1250 [3] NCCL WARN z");
  CHECK(StripCollectorPrefixes(">     [rank2]:[E ProcessGroupNCCL.cpp:1] w", &k) ==
        "[E ProcessGroupNCCL.cpp:1] w");
  CHECK(k.rank == "2");
  // Not prefixes: an error's own "Name: ", a parenthesis without pid=, ">" inside a word.
  CHECK(StripCollectorPrefixes("RuntimeError: NCCL error", &m) == "RuntimeError: NCCL error");
  CHECK(StripCollectorPrefixes("gpu07: not an NCCL line", &m) == "gpu07: not an NCCL line");
  CHECK(StripCollectorPrefixes("(most recent call last):", &m) == "(most recent call last):");
  CHECK(StripCollectorPrefixes("->x", &m) == "->x");
  CHECK(StripCollectorPrefixes(">x", &m) == ">x");
}

TEST_CASE("cleaning removes ANSI colours and CR, and replaces bytes that are not UTF-8") {
  std::string out;
  CleanBytes("\x1b[1;31mNCCL WARN\x1b[0m x\r\n", &out);
  CHECK(out == "NCCL WARN x\n");
  out.clear();
  CHECK(CleanBytes("a\xff\xfe b \xc3\xa9 \xed\xa0\x80 c\0d"sv, &out) == 6);
  CHECK(out == "a?? b \xc3\xa9 ??? c?d");
  out.clear();
  CleanBytes("50%\r60%\r70%\n", &out);
  CHECK(out == "50% 60% 70%\n");
}

namespace {
std::vector<std::pair<std::uint64_t, std::string>> Lines(const std::vector<std::string>& feeds) {
  std::vector<std::pair<std::uint64_t, std::string>> lines;
  LogLineBlocks a([&](std::string_view block, std::uint64_t first) {
    std::uint64_t n = first;
    std::size_t start = 0;
    for (std::size_t i = 0; i < block.size(); ++i) {
      if (block[i] == '\n') {
        lines.emplace_back(n++, std::string(block.substr(start, i - start)));
        start = i + 1;
      }
    }
    CHECK(start == block.size());  // blocks hold whole lines
  });
  for (const auto& f : feeds) a.Feed(f);
  a.Finish();
  return lines;
}
}  // namespace

TEST_CASE("lines split across reads, CRLF split across reads, no final newline keep numbers") {
  auto l = Lines({"one\r", "\ntw", "o\nthree"});
  REQUIRE(l.size() == 3);
  CHECK(l[0] == std::make_pair(std::uint64_t{1}, std::string("one")));
  CHECK(l[1] == std::make_pair(std::uint64_t{2}, std::string("two")));
  CHECK(l[2] == std::make_pair(std::uint64_t{3}, std::string("three")));
}

TEST_CASE("an over-long line is cut at kMaxLine and the next line keeps its number") {
  std::string huge(LogLineBlocks::kMaxLine * 3, 'x');
  for (const auto& feeds :
       {std::vector<std::string>{huge + "\nnext\n"},
        std::vector<std::string>{huge.substr(0, 1000), huge.substr(1000), "\nnext\n"}}) {
    auto l = Lines(feeds);
    REQUIRE(l.size() == 2);
    CHECK(l[0].second.size() == LogLineBlocks::kMaxLine);
    CHECK(l[1] == std::make_pair(std::uint64_t{2}, std::string("next")));
  }
}

TEST_CASE("a lone CR ends a line, so a line after a progress bar is its own line") {
  auto l = Lines({"epoch 1:  50%|#####\r", "epoch 1: 100%|##########\r[rank3]: watchdog timeout\n",
                  "after\r\n"});
  REQUIRE(l.size() == 4);
  CHECK(l[0].second == "epoch 1:  50%|#####");
  CHECK(l[2] == std::make_pair(std::uint64_t{3}, std::string("[rank3]: watchdog timeout")));
  CHECK(l[3] == std::make_pair(std::uint64_t{4}, std::string("after")));
}

TEST_CASE("the line cap is per line: 100 KiB of CR-separated progress keeps the OOM after it") {
  std::string bar;
  while (bar.size() < 100 * 1024) bar += "  3%|#   | 30/1000 [00:01<00:30, 30it/s]\r";
  for (const auto& feeds : {std::vector<std::string>{bar + "CUDA out of memory\n"},
                            std::vector<std::string>{bar.substr(0, 70000), bar.substr(70000),
                                                     "CUDA out of memory\n"}}) {
    auto l = Lines(feeds);
    REQUIRE(!l.empty());
    CHECK(l.back().second == "CUDA out of memory");
    for (const auto& [n, text] : l) CHECK(text.size() < 100);
  }
  // And one over-long line with a CR after it: the cut stops at the CR.
  auto cut = Lines({std::string(LogLineBlocks::kMaxLine * 2, 'x') + "\rOOM\n"});
  REQUIRE(cut.size() == 2);
  CHECK(cut[1].second == "OOM");
}

TEST_CASE("a torchrun error file becomes its message and call stack") {
  std::string t = TorchErrorFileText(
      R"({"message": {"message": "RuntimeError: NCCL error in: x.cpp:1, unhandled system error", )"
      R"("extraInfo": {"py_callstack": "Traceback:\n  File a.py", "timestamp": "1"}}})");
  CHECK(t.find("RuntimeError: NCCL error in:") == 0);
  CHECK(t.find("Traceback:") != std::string::npos);
  CHECK(TorchErrorFileText("{not json").empty());
  CHECK(TorchErrorFileText("plain log").empty());
}

TEST_CASE("ingest keeps file:line and the rank of a coloured, prefixed NCCL WARN line") {
  LineMatcher m;
  Evidence ev;
  LogIngest ingest(m, &ev);
  ingest.AddText("pod.log",
                 "noise\n2024-05-01T10:00:00Z [rank2]:\x1b[31mn1:5:6 [3] NCCL WARN NET/IB : Got "
                 "async event : port error\x1b[0m\r\n");
  REQUIRE(ev.matches().size() == 1);
  const Match& x = ev.matches()[0];
  CHECK(x.signature->id == "nccl.ib_port_error");
  CHECK(x.source == "pod.log");
  CHECK(x.line_number == 2);
  CHECK(x.Field("rank") == "2");
  CHECK(x.Field("dev") == "3");
  CHECK(x.Field("host") == "n1");
  CHECK(ingest.lines() == 2);
}

TEST_CASE("a bundle tail repeating a rank log's line counts it once, and a real repeat twice") {
  LineMatcher m;
  Evidence ev;
  LogIngest ingest(m, &ev);
  const std::map<std::string, std::string> nodes = {{"root/n1", "n1"}, {"root/n2", "n2"}};
  ingest.SetNodeDirs(&nodes);
  const std::string warn = "n1:5:6 [3] NCCL WARN NET/IB : Got async event : port error\n";
  // The rank log holds the line twice (two events); the bundle's stream tail and per-rank tail
  // copy both, with torch's "[rank2]:" tag in front.
  ingest.AddText("root/n1/logs/rank2.log", warn + "noise\n" + warn);
  ingest.AddText("root/n1/bundle/output/stderr.tail", "[rank2]:" + warn + "[rank2]:" + warn);
  ingest.AddText("root/n1/bundle/output/rank_2.tail", "[rank2]:" + warn + "[rank2]:" + warn);
  CHECK(ev.Count("nccl.ib_port_error") == 2);
  CHECK(ingest.duplicate_lines() == 4);
  // The same text on another node is its own evidence.
  ingest.AddText("root/n2/logs/rank5.log", warn);
  CHECK(ev.Count("nccl.ib_port_error") == 3);
  // Files of no known node (named on the command line) are never merged.
  ingest.AddText("a.log", warn);
  ingest.AddText("b.log", warn);
  CHECK(ev.Count("nccl.ib_port_error") == 5);
}

TEST_CASE(
    "a line repeated in one file is recognised once and counted, its first kept lines cited") {
  LineMatcher m;
  Evidence ev;
  LogIngest ingest(m, &ev);
  // CRLF and a byte that is not UTF-8 (cleaned to '?') on the repeated line itself.
  std::string text;
  for (int i = 0; i < 20; ++i)
    text += "n1:5:6 [3] NCCL WARN NET/IB : Got async event : port error\xff\r\n";
  ingest.AddText("a.log", text);
  CHECK(ev.Count("nccl.ib_port_error") == 20);
  CHECK(ev.total() == 20);
  CHECK(ingest.recalled_lines() == 19);
  REQUIRE(ev.matches().size() == Evidence::kKeepPerSignature);
  CHECK(ev.matches().back().line_number == Evidence::kKeepPerSignature);
  CHECK(ev.matches().back().source == "a.log");
  CHECK(ev.matches().back().Field("host") == "n1");
  // Another file's identical line is recognised afresh, with its own source.
  ingest.AddText("b.log", "n1:5:6 [3] NCCL WARN NET/IB : Got async event : port error\xff\n");
  CHECK(ev.Count("nccl.ib_port_error") == 21);
  CHECK(ingest.recalled_lines() == 19);
}

TEST_CASE("a repeat only counts once its signature's kept lines are full, never for progress") {
  LineMatcher m;
  Evidence ev;
  const Signature* warn = nullptr;
  const Signature* progress = nullptr;
  for (const Signature& s : Catalog()) {
    if (s.id == "nccl.ib_port_error") warn = &s;
    if (s.category == "progress" && progress == nullptr) progress = &s;
  }
  REQUIRE(warn != nullptr);
  REQUIRE(progress != nullptr);
  CHECK_FALSE(ev.CountRepeat(*warn));  // nothing kept yet: Add must take it
  Match x;
  x.signature = warn;
  x.source = "a.log";
  for (std::size_t i = 0; i < Evidence::kKeepPerSignature; ++i) ev.Add(x);
  CHECK(ev.CountRepeat(*warn));
  CHECK(ev.Count("nccl.ib_port_error") == Evidence::kKeepPerSignature + 1);
  Match p;
  p.signature = progress;
  for (std::size_t i = 0; i < Evidence::kKeepPerSignature; ++i) ev.Add(p);
  CHECK_FALSE(ev.CountRepeat(*progress));  // each progress line moves the process's last line
}
