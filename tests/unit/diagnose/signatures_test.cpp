#include "diagnose/signatures.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/parse/kmsg.h"
#include "common/strings.h"
#include "diagnose/regex_lead.h"
#include "diagnose/verdict.h"
#include "tests/unit/test_paths.h"

using namespace sl::diagnose;

namespace {
std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("torch 2.11 watchdog timeout line yields SeqNum, OpType, sizes, timeout and rank") {
  LineMatcher m;
  auto r = m.MatchLine(
      "[rank0]:[E1130 01:09:39.047919719 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1048576, "
      "NumelOut=1048576, Timeout(ms)=5000) ran for 5026 milliseconds before timing out.");
  REQUIRE(r);
  CHECK(r->signature->id == "torch.watchdog_timeout");
  CHECK(r->signature->severity == Severity::kHang);
  CHECK(r->Field("seq") == "5");
  CHECK(r->Field("op") == "ALLREDUCE");
  CHECK(r->Field("numel_in") == "1048576");
  CHECK(r->Field("numel_out") == "1048576");
  CHECK(r->Field("timeout_ms") == "5000");
  CHECK(r->Field("ran_ms") == "5026");
  CHECK(r->Field("rank") == "0");
}

TEST_CASE("torch 1.13 and pre-SeqNum watchdog formats are recognised") {
  LineMatcher m;
  auto a = m.MatchLine(
      "[E ProcessGroupNCCL.cpp:821] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1806427 milliseconds "
      "before timing out.");
  REQUIRE(a);
  CHECK(a->Field("seq") == "1");
  CHECK(a->Field("timeout_ms") == "1800000");
  CHECK(a->Field("rank") == "1");
  auto b = m.MatchLine(
      "[E ProcessGroupNCCL.cpp:587] [Rank 2] Watchdog caught collective operation timeout: "
      "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1802157 milliseconds before timing "
      "out. ");
  REQUIRE(b);
  CHECK(b->Field("op") == "BROADCAST");
  CHECK(b->Field("seq").empty());
}

TEST_CASE("watchdog failure, dump signal and stuck watchdog lines are hang signatures") {
  LineMatcher m;
  auto f = m.MatchLine(
      "[rank0]:[E1130 01:09:39.060094846 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID "
      "0(default_pg) Rank 0]  failure detected by watchdog at work sequence id: 5 PG status: last "
      "enqueued work: 5, last completed work: 4");
  REQUIRE(f);
  CHECK(f->Field("seq") == "5");
  CHECK(f->Field("last_completed") == "4");
  CHECK(f->Field("pg") == "0");
  auto d = m.MatchLine(
      "[rank3]:[E ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 3] Received a "
      "dump signal due to a collective timeout from rank 1 and we will try our best to dump the "
      "debug info. Last enqueued NCCL work: 7, last completed NCCL work: 6.This is most likely");
  REQUIRE(d);
  CHECK(d->signature->severity == Severity::kHang);
  CHECK(d->Field("timeout_rank") == "1");
  auto s = m.MatchLine(
      "[rank0]:[E ProcessGroupNCCL.cpp:1400] [PG ID 0 Rank 0] Heartbeat monitor timed out! "
      "Process will be terminated after dumping debug info. the watchdog got stuck for 480 "
      "seconds without making progress");
  REQUIRE(s);
  CHECK(s->signature->category == "watchdog_stuck");
  CHECK(s->Field("stuck_s") == "480");
}

TEST_CASE("Gloo timeout and c10d store timeouts are recognised with their values") {
  LineMatcher m;
  auto g = m.MatchLine(
      "rank 2 exception: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] "
      "Timed out waiting 5000ms for send operation to complete");
  REQUIRE(g);
  CHECK(g->Field("timeout_ms") == "5000");
  CHECK(g->Field("gloo_op") == "send");
  auto c = m.MatchLine(
      "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 "
      "clients joined.");
  REQUIRE(c);
  CHECK(c->signature->category == "store_timeout");
  CHECK(c->Field("joined") == "1");
  CHECK(c->Field("expected") == "2");
}

TEST_CASE("IB completion status codes map to distinct categories") {
  LineMatcher m;
  auto r12 = m.MatchLine(
      "mycl-g2:353236:353423 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from "
      "peer 192.168.3.5<53908> with status=12 opcode=129 len=1048576 vendor err 129 (Recv) "
      "localGid ::ffff:192.168.6.3 remoteGids::ffff:192.168.6.5 hca mlx5_10");
  REQUIRE(r12);
  CHECK(r12->signature->category == "retry_exceeded_network");
  CHECK(r12->Field("hca") == "mlx5_10");
  CHECK(r12->Field("host") == "mycl-g2");
  auto r5 = m.MatchLine(
      "h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from "
      "peer 10.0.0.2<1> with status=5 opcode=0 len=0 vendor err 249");
  REQUIRE(r5);
  CHECK(r5->signature->id == "nccl.ib_status_flush");
  auto r10 = m.MatchLine("NCCL WARN NET/IB : Got completion with error 10, opcode 1");
  REQUIRE(r10);
  CHECK(r10->signature->id == "nccl.ib_completion");
  CHECK(r10->Field("status") == "10");
}

TEST_CASE("every catalog row has a prefilter of at least kAnchor bytes (the skip scan needs it)") {
  for (const Signature& s : Catalog()) {
    INFO(s.id);
    CHECK(s.prefilter.size() >= LineMatcher::kAnchor);
  }
}

// The skip scan looks for one anchor per row: it must be in every line the row matches, so it is
// a piece of the prefilter or of the second substring (both are in every such line).
TEST_CASE("every row's anchor is kAnchor bytes of its prefilter or of its second substring") {
  LineMatcher m;
  const auto rows = Catalog();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO(rows[i].id);
    const std::string_view a = m.AnchorOf(i);
    REQUIRE(a.size() == LineMatcher::kAnchor);
    CHECK((rows[i].prefilter.find(a) != std::string_view::npos ||
           rows[i].also.find(a) != std::string_view::npos));
  }
}

// RecognizeWrapped joins a line that holds the watchdog's opening words with the lines after it;
// the scan hands such a line over even where it holds no row's anchor (wrapped inside
// "operation").
TEST_CASE("a line holding the watchdog's opening words is handed over, anchor or not") {
  LineMatcher m;
  for (std::string line : {std::string("xx ") + std::string(kWrappedWatchdogText) + " ope",
                           std::string(kWrappedWatchdogText)}) {
    INFO(line);
    std::size_t handed = 0;
    const std::string block = "iter 1: loss 2.0\n" + line + "\niter 2: loss 1.9\n";
    CHECK(m.ScanBlock(block, [&](std::string_view l, std::size_t index) {
      CHECK(l == line);
      CHECK(index == 1);
      ++handed;
    }) == 3);
    CHECK(handed == 1);
  }
}

// The lazy scan hands over the same lines; an index asked for is the line's, in any pattern of
// asking (every line, every other one, none).
TEST_CASE("ScanBlockLazily hands over ScanBlock's lines and counts an index only when asked") {
  LineMatcher m;
  std::string block;
  for (int i = 0; i < 2000; ++i) {
    block += i % 7 == 0 ? "gpu1:2:3 [0] NCCL WARN NET/IB : Got async event : port active\n"
                        : "iter " + std::to_string(i) + ": loss 1.5, time: 4401.19ms\n";
  }
  std::vector<std::pair<std::string_view, std::size_t>> eager;
  m.ScanBlock(block, [&](std::string_view l, std::size_t i) { eager.emplace_back(l, i); });
  REQUIRE(eager.size() == 286);
  for (int every : {1, 2, 0}) {
    std::size_t k = 0;
    m.ScanBlockLazily(block, [&](std::string_view l, LineIndex& index) {
      REQUIRE(k < eager.size());
      CHECK(l == eager[k].first);
      if (every != 0 && k % every == 0) CHECK(index.Of(l) == eager[k].second);
      ++k;
    });
    CHECK(k == eager.size());
  }
}

TEST_CASE("ordinary training output matches nothing") {
  LineMatcher m;
  CHECK_FALSE(m.MatchLine("iter 83592: loss 1.5455, time: 4401.19ms, speed: - toks/s/device"));
  CHECK_FALSE(m.MatchLine("epoch 3 step 1000 lr 3e-4"));
  CHECK_FALSE(m.MatchLine(""));
  CHECK_FALSE(m.MatchLine("host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"));
}

TEST_CASE("torchrun ChildFailedError table gives rank, host and exit code") {
  LineMatcher m;
  Evidence ev;
  ev.AddText(m,
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
             "  host      : gpu07\n  rank      : 3 (local_rank: 1)\n"
             "  exitcode  : -6 (pid: 826)\n",
             "stderr");
  REQUIRE(ev.Count("torchrun.child_failed") == 1);
  REQUIRE(ev.Count("torchrun.table_host") == 1);
  bool saw_exit = false;
  for (const auto& x : ev.matches()) {
    if (x.signature->id == "torchrun.table_exitcode") saw_exit = x.Field("exitcode") == "-6";
  }
  CHECK(saw_exit);
}

// The labelled corpus: real logs from public issue threads with the root cause the thread found.
// The figure is measured and printed, and must not fall below what the catalog reaches today.
TEST_CASE("catalog verdicts agree with the labelled corpus") {
  // A copy in tests/fixtures, so the check runs (and can fail) on every checkout.
  std::string dir = SL_FIXTURES_DIR + "/corpus/logs";
  REQUIRE(std::filesystem::exists(dir + "/LABELS.tsv"));
  LineMatcher m;
  int total = 0, right = 0;
  std::string misses;
  for (const std::string& row : sl::SplitLines(Slurp(dir + "/LABELS.tsv"))) {
    auto cols = sl::Split(row, '\t', false);
    if (cols.size() < 3 || cols[0] == "file") continue;
    Evidence ev;
    ev.AddText(m, Slurp(dir + "/" + cols[0]), cols[0]);
    Verdict v = Decide(ev, Trigger::kJobFailed, {});
    ++total;
    if (v.category == cols[2]) {
      ++right;
    } else {
      misses += cols[0] + ": got " + v.category + ", label " + cols[2] + "\n";
    }
  }
  std::printf("corpus: %d/%d labelled logs get the labelled category\n%s", right, total,
              misses.c_str());
  CHECK(total >= 14);
  CHECK(right >= 12);
}

// ScanBlock is what the pump uses on the job's output: it must hand over every line MatchLine
// matches, with the right index, and count the lines, on real logs with every kind of line end.
TEST_CASE("ScanBlock finds every line MatchLine matches, with its index, on the real logs") {
  std::vector<std::string> files;
  for (const char* dir : {"/corpus/logs", "/device", "/logs"}) {
    std::string d = SL_FIXTURES_DIR + dir;
    REQUIRE(std::filesystem::exists(d));
    for (const auto& e : std::filesystem::recursive_directory_iterator(d)) {
      if (e.is_regular_file() && e.file_size() < (8u << 20)) files.push_back(e.path().string());
    }
  }
  // A block of its own too: lines without '\n' at the end, empty lines, CRLF, a lone anchor.
  files.push_back("");
  LineMatcher m;
  std::size_t matched_lines = 0;
  for (const std::string& f : files) {
    std::string text =
        f.empty() ? std::string("\n\nNCCL WARN x\r\nok\n\nCUDA error: y\nNCCL") : Slurp(f);
    INFO(f);
    std::vector<std::string_view> lines;
    sl::ForEachLine(text, [&](std::string_view l) { lines.push_back(l); });
    std::map<std::size_t, std::string_view> candidates;
    std::size_t count = m.ScanBlock(text, [&](std::string_view line, std::size_t index) {
      CHECK(candidates.count(index) == 0);
      candidates[index] = line;
    });
    CHECK(count == lines.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!m.MatchLine(lines[i])) continue;
      ++matched_lines;
      INFO("line " << i + 1 << ": " << lines[i]);
      REQUIRE(candidates.count(i) == 1);
      CHECK(candidates[i] == lines[i]);
    }
  }
  // The synthetic block alone has two ("NCCL WARN", "CUDA error: "; a bare "NCCL" is no anchor);
  // the real logs (copied into tests/fixtures) add about a hundred.
  CHECK(files.size() > 30);
  std::printf("ScanBlock: %zu files, %zu matched lines\n", files.size(), matched_lines);
  CHECK(matched_lines >= 50);
}

// A block of several MiB: lanes that finish take over half of the largest range left, so hits
// come from ranges in any order; they are still handed over once each, in block order.
TEST_CASE("ScanBlock over a large block hands over every matching line once, in order") {
  std::string text;
  for (const auto& e : std::filesystem::directory_iterator(SL_FIXTURES_DIR + "/corpus/logs")) {
    if (e.is_regular_file() && e.path().extension() == ".log") text += Slurp(e.path().string());
  }
  REQUIRE(!text.empty());
  if (text.back() != '\n') text += '\n';
  std::string block;
  std::uint32_t seed = 99;
  while (block.size() < (5u << 20)) {
    seed = seed * 1664525u + 1013904223u;
    // Healthy runs of varying length between copies of the real logs: the lanes end unevenly.
    for (std::uint32_t i = 0; i < (seed >> 20) % 4000; ++i)
      block += "iter 7: loss 1.5, time: 1.2ms\n";
    block += text;
  }
  LineMatcher m;
  std::vector<std::string_view> lines;
  sl::ForEachLine(block, [&](std::string_view l) { lines.push_back(l); });
  std::vector<std::size_t> got;
  const std::size_t count = m.ScanBlock(block, [&](std::string_view line, std::size_t index) {
    REQUIRE(index < lines.size());
    REQUIRE(lines[index] == line);
    REQUIRE((got.empty() || got.back() < index));
    got.push_back(index);
  });
  CHECK(count == lines.size());
  std::size_t matched = 0;
  for (std::size_t i = 0, at = 0; i < lines.size(); ++i) {
    while (at < got.size() && got[at] < i) ++at;
    if (!m.MatchLine(lines[i])) continue;
    ++matched;
    REQUIRE((at < got.size() && got[at] == i));
  }
  CHECK(matched > 1000);
}

// The same property on random blocks built from anchor pieces, newlines and noise, so that anchors
// land on lane cuts, block starts and ends, and lines shorter than an anchor (the fuzz target
// tests/fuzz/fuzz_scan_block.cpp does this without end).
TEST_CASE("ScanBlock agrees with per-line matching on random blocks of anchor pieces") {
  LineMatcher m;
  std::vector<std::string> pieces{"\n",
                                  "\r\n",
                                  " ",
                                  "x",
                                  "NCCL WARN ",
                                  "NCCL",
                                  " WARN ",
                                  "W",
                                  "Watchdog caught collective operation timeout",
                                  "Watchd",
                                  "CUDA error: ",
                                  "Got completion with error 12",
                                  "opCount 1f",
                                  "mlx5_core ",
                                  "err",
                                  "failed (exitcode: 1) local_rank: 0",
                                  "rank      : 3 (local_rank: 1)",
                                  "iter 5: loss 1.2, ",
                                  "\xff\xfe",
                                  std::string(1, '\0')};
  std::uint32_t seed = 12345;
  auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
  int lines_matched = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string block;
    const std::size_t n = next() % 60;
    for (std::size_t i = 0; i < n; ++i) block += pieces[(next() >> 8) % pieces.size()];
    std::map<std::size_t, std::string_view> got;
    const std::size_t count = m.ScanBlock(block, [&](std::string_view line, std::size_t i) {
      REQUIRE(got.count(i) == 0);
      got[i] = line;
    });
    std::vector<std::string_view> lines;
    sl::ForEachLine(block, [&](std::string_view l) { lines.push_back(l); });
    INFO("round " << round << ": " << block);
    REQUIRE(count == lines.size());
    for (const auto& [i, line] : got) {
      REQUIRE(i < lines.size());
      CHECK(lines[i] == line);
    }
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!m.MatchLine(lines[i])) continue;
      ++lines_matched;
      CHECK(got.count(i) == 1);
    }
  }
  CHECK(lines_matched > 1000);  // the generator does produce matching lines
}

TEST_CASE("counting bytes agrees with a plain loop at every length and alignment") {
  std::string s;
  for (int i = 0; i < 5000; ++i) s.push_back(i % 7 == 0 || i % 13 == 0 ? '\n' : char('a' + i % 26));
  for (std::size_t off : {0, 1, 3, 7, 15}) {
    for (std::size_t len : {0, 1, 15, 16, 17, 100, 4079, 4080, 4081, 4984}) {
      std::string_view v = std::string_view(s).substr(off, len);
      std::size_t plain = 0;
      for (char c : v) plain += c == '\n';
      CHECK(sl::CountByte(v, '\n') == plain);
    }
  }
  CHECK(sl::CountByte(std::string(10000, '\xff'), '\xff') == 10000);  // > 255 per lane
  // The AVX2 loop (64 bytes a step, folded every 255 steps): around its step and its fold, with
  // every byte a match (each byte counter reaches 255 before the fold).
  for (std::size_t len : {63, 64, 65, 127, 16319, 16320, 16321, 16384 + 17, 100000}) {
    CHECK(sl::CountByte(std::string(len, '\n'), '\n') == len);
    std::string mixed(len, 'x');
    for (std::size_t i = 0; i < len; i += 3) mixed[i] = '\n';
    CHECK(sl::CountByte(mixed, '\n') == (len + 2) / 3);
  }
}

TEST_CASE("matching a healthy line costs well under a microsecond") {
  LineMatcher m;
  std::string line = "iter 83594: loss 1.9491, time: 6235.95ms, speed: 1771 toks/s/device";
  auto t0 = std::chrono::steady_clock::now();
  int hits = 0;
  for (int i = 0; i < 100000; ++i) hits += m.MatchLine(line) ? 1 : 0;
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      100000;
  std::printf("healthy line: %.3f us per line\n", us);
  CHECK(hits == 0);
  CHECK(us < 20);  // generous: shared 2-core CI; the bench prints the real figure

  // The pump's path: whole blocks of lines through ScanBlock (figures for bench/hang.sh).
  for (const std::string& l :
       {std::string(79, 'x'), line,
        std::string("gpu01:2291:2291 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC")}) {
    std::string block;
    while (block.size() < (4u << 20)) block += l + "\n";
    std::size_t candidates = 0;
    auto b0 = std::chrono::steady_clock::now();
    std::size_t lines = 0;
    for (int r = 0; r < 8; ++r) {
      lines += m.ScanBlock(block, [&](std::string_view, std::size_t) { ++candidates; });
    }
    double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - b0).count() /
        (8.0 * block.size());
    std::printf(
        "block scan: %.3f ns per byte (%.2f s per GiB) of %zu-byte lines like \"%.24s...\"\n", ns,
        ns * 1.073741824, l.size() + 1, l.c_str());
    CHECK(lines == 8 * (block.size() / (l.size() + 1)));
    CHECK(candidates == 0);
  }
}

TEST_CASE("an Xid line is explained from the one Xid table (meaning and fatal)") {
  LineMatcher matcher;
  auto m =
      matcher.MatchLine("NVRM: Xid (PCI:0000:18:00): 79, pid=123, GPU has fallen off the bus.");
  REQUIRE(m.has_value());
  CHECK(m->signature->id == "kernel.xid");
  CHECK(m->Field("xid") == "79");
  CHECK(m->Field("xid_fatal") == "yes");
  CHECK(m->Field("xid_meaning") == std::string(sl::FindXid(79)->meaning));
  auto app = matcher.MatchLine("NVRM: Xid (PCI:0000:18:00): 13, pid=9, Graphics Exception");
  REQUIRE(app.has_value());
  CHECK(app->Field("xid_fatal") == "no");
  CHECK(app->Field("xid_meaning") == "graphics engine exception (usually the application)");
}

TEST_CASE("a regex's leading literal is what every match starts with, or nothing when unsure") {
  CHECK(RegexLeadingLiteral(R"(Channel (\d+)(?:/(\d+))? : )") == "Channel ");
  CHECK(RegexLeadingLiteral(R"(NET/IB ?: ?(\S+))") == "NET/IB");  // the space is optional
  CHECK(RegexLeadingLiteral(R"(\[Rank (\d+)\])") == "[Rank ");
  CHECK(RegexLeadingLiteral(R"(\*\*\* (?:JOB|STEP))") == "*** ");
  CHECK(RegexLeadingLiteral(R"(timed out|hung)") == "");  // a top-level alternation
  CHECK(RegexLeadingLiteral(R"((?:a|b)x)") == "");
  CHECK(RegexLeadingLiteral(R"(^NCCL)") == "");
  CHECK(RegexLeadingLiteral(R"(\bWARN)") == "");
  CHECK(RegexLeadingLiteral(R"([Cc]onnect)") == "");
  CHECK(RegexLeadingLiteral(R"(ab+c)") == "a");
  CHECK(RegexLeadingLiteral(R"(x[|]y)") == "x");  // '|' in a class is no alternation
}

// The search from the leading literal must find exactly what a full regex_search finds: every
// catalog row's regex on every line of the real logs that holds its prefilter, fields compared.
TEST_CASE("anchored search from the leading literal equals a full search for every catalog row") {
  std::vector<std::string> lines;
  for (const char* dir : {"/corpus/logs", "/device", "/logs"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(SL_FIXTURES_DIR + dir)) {
      if (!e.is_regular_file() || e.file_size() >= (8u << 20)) continue;
      sl::ForEachLine(Slurp(e.path().string()), [&](std::string_view l) { lines.emplace_back(l); });
    }
  }
  std::size_t compared = 0, with_lead = 0;
  for (const Signature& sig : Catalog()) {
    if (sig.pattern.empty()) continue;
    const std::string lead = RegexLeadingLiteral(sig.pattern);
    if (lead.empty()) continue;
    ++with_lead;
    INFO(sig.id << " lead '" << lead << "'");
    // The literal is a prefix of the pattern's text (escapes aside), never longer.
    CHECK(lead.size() <= sig.pattern.size());
    const std::regex re(std::string(sig.pattern), std::regex::ECMAScript | std::regex::optimize);
    for (const std::string& line : lines) {
      if (line.find(sig.prefilter) == std::string::npos) continue;
      const std::string_view sv(line);
      std::match_results<std::string_view::const_iterator> full;
      const bool full_hit = std::regex_search(sv.begin(), sv.end(), full, re);
      std::match_results<std::string_view::const_iterator> from_lead;
      const bool lead_hit = SearchFromLead(sv, lead, re, &from_lead);
      ++compared;
      INFO(line);
      REQUIRE(lead_hit == full_hit);
      if (!full_hit) continue;
      REQUIRE(from_lead.size() == full.size());
      for (std::size_t g = 0; g < full.size(); ++g) {
        CHECK(from_lead[g].matched == full[g].matched);
        CHECK(from_lead[g].str() == full[g].str());
        if (full[g].matched) CHECK(from_lead[g].first == full[g].first);
      }
    }
  }
  std::printf("leading literal: %zu rows, %zu row x line searches compared\n", with_lead, compared);
  CHECK(with_lead > 50);
  CHECK(compared > 100);
}
