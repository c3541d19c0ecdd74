// The skip scan's vector kernel (diagnose/anchor_filter.h) against the scalar scan it replaces:
// the same lines, in the same order, on the real logs, on random text and with every anchor at
// every offset around a step's and the block's ends.
#include "diagnose/anchor_filter.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "diagnose/signatures.h"
#include "tests/unit/test_paths.h"

using namespace sl::diagnose;
// A named namespace: the tests of this directory are built as one unity source.
namespace anchor_filter_test {

using Kernel = LineMatcher::ScanKernel;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The lines a kernel hands over, as (offset, length) in the block.
std::vector<std::pair<std::size_t, std::size_t>> Lines(const LineMatcher& m, Kernel k,
                                                       std::string_view block) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  m.ScanBlockWith(k, block, [&](std::string_view line, LineIndex&) {
    out.emplace_back(static_cast<std::size_t>(line.data() - block.data()), line.size());
  });
  return out;
}

// Both filter kernels against the scalar scan; returns how many lines they handed over.
std::size_t AgreeWithScalar(const LineMatcher& m, std::string_view block) {
  const auto scalar = Lines(m, Kernel::kScalar, block);
  CHECK(Lines(m, Kernel::kFilterPortable, block) == scalar);
  CHECK(Lines(m, Kernel::kFilter, block) == scalar);
  return scalar.size();
}

const LineMatcher& Matcher() {
  static const LineMatcher m;
  return m;
}

}  // namespace anchor_filter_test

using namespace anchor_filter_test;

TEST_CASE("the vector scan hands over the scalar scan's lines on every real log") {
  const LineMatcher& m = Matcher();
  std::size_t files = 0, lines = 0;
  for (const char* dir : {"/corpus/logs", "/device", "/logs"}) {
    const std::string d = SL_FIXTURES_DIR + dir;
    REQUIRE(std::filesystem::exists(d));
    for (const auto& e : std::filesystem::recursive_directory_iterator(d)) {
      if (!e.is_regular_file() || e.file_size() > (8u << 20)) continue;
      INFO(e.path().string());
      lines += AgreeWithScalar(m, anchor_filter_test::Slurp(e.path().string()));
      ++files;
    }
  }
  std::printf("anchor filter: %zu files, %zu lines handed over (kernel %s)\n", files, lines,
              AnchorFilter::CpuSupported() ? "AVX-512 VBMI" : "portable only");
  CHECK(files > 30);
  CHECK(lines > 250);
}

TEST_CASE("the vector scan finds every anchor at every offset around a step's and a block's end") {
  const LineMatcher& m = Matcher();
  std::vector<std::string> anchors;
  for (std::size_t i = 0; i < Catalog().size(); ++i) anchors.emplace_back(m.AnchorOf(i));
  anchors.emplace_back("Watchdog caught collective");  // the wrapped watchdog line's text
  std::size_t checked = 0;
  for (const std::string& a : anchors) {
    // Offsets from 0 past the second step (64 + 64 + kWidth), in text of the bench's one byte,
    // the anchor ending the block or followed by more text and another line.
    for (std::size_t off = 0; off < 140; off += (off < 8 || (off > 52 && off < 76) ? 1 : 5)) {
      for (const char* after : {"", "x", "xx\nyyy", "\n"}) {
        const std::string block = std::string(off, 'x') + a + after;
        INFO("anchor '" << a << "' at " << off << ", then '" << after << "'");
        const auto got = Lines(m, Kernel::kFilter, block);
        REQUIRE(got.size() == 1);
        CHECK(got[0].first == 0);
        const std::size_t nl = block.find('\n');
        CHECK(got[0].second == (nl == std::string::npos ? block.size() : nl));
        CHECK(AgreeWithScalar(m, block) == 1);
        ++checked;
      }
    }
  }
  CHECK(checked > 10000);
}

// Random blocks of anchor pieces, healthy text, line ends and bytes >= 0x80 (which the tables
// see by their low 7 bits): every length, so anchors cut by a step's end and the block's end,
// several hits in one step, lines shorter than an anchor. The fuzz target
// tests/fuzz/fuzz_scan_block.cpp compares the kernels on arbitrary bytes without end.
TEST_CASE("the vector scan agrees with the scalar scan on random blocks") {
  const LineMatcher& m = Matcher();
  const std::vector<std::string> pieces{"\n",
                                        "\r\n",
                                        " ",
                                        "x",
                                        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                                        "NCCL WARN ",
                                        "NCCL",
                                        " WARN ",
                                        "Watchdog caught collective operation timeout",
                                        "Watchd",
                                        "CUDA error: ",
                                        "Got completion with error 12",
                                        "mlx5_core ",
                                        "failed (exitcode: 1) local_rank: 0",
                                        "iter 5: loss 1.2, time: 4401.19ms, speed: 812 toks/s",
                                        " NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
                                        "\xff\xfe",
                                        "\xc3\xa9",
                                        "\x8a\xd7\xc5",
                                        std::string(1, '\0')};
  std::uint32_t seed = 2026;
  auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
  std::size_t handed = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string block;
    const std::size_t n = next() % 40;
    for (std::size_t i = 0; i < n; ++i) block += pieces[(next() >> 8) % pieces.size()];
    INFO("round " << round << ": " << block);
    handed += AgreeWithScalar(m, block);
  }
  // Raw random bytes too (few anchors: this is the filter's false positives' ground).
  for (int round = 0; round < 200; ++round) {
    std::string block(next() % 3000, ' ');
    for (char& c : block) c = static_cast<char>(next() >> 24);
    AgreeWithScalar(m, block);
  }
  CHECK(handed > 1000);
}

TEST_CASE("the vector kernel's step masks equal the portable statement of its tables") {
  const std::vector<std::string> anchors{"CUDA e", "xcepti", "\xc3\xa9t\xe9z!"};
  const AnchorFilter f(anchors, "some healthy text, loss 1.5");
  std::uint32_t seed = 7;
  std::string text(4096 + AnchorFilter::kWidth, ' ');
  for (char& c : text) c = static_cast<char>((seed = seed * 1664525u + 1013904223u) >> 24);
  text.replace(100, 6, "CUDA e");
  text.replace(200, 6, "xcepti");
  text.replace(300, 6, "\xc3\xa9t\xe9z!");
  std::size_t passed = 0;
  for (std::size_t i = 0; i + AnchorFilter::kStep + AnchorFilter::kWidth <= text.size(); i += 7) {
    const std::uint64_t portable = f.StepMask(text.data() + i, false);
    CHECK(f.StepMask(text.data() + i, true) == portable);
    passed += static_cast<std::size_t>(__builtin_popcountll(portable));
  }
  CHECK(passed > 0);
  std::vector<std::string_view> lines;
  f.FindLines(text, true, &lines);
  std::vector<std::string_view> portable;
  f.FindLines(text, false, &portable);
  CHECK(lines == portable);
  CHECK(f.IsAnchor(text.data() + 200));
  CHECK_FALSE(f.IsAnchor(text.data() + 201));
}

TEST_CASE("the vector kernel is what runs where the CPU has it, unless scalar is asked for") {
  const LineMatcher& m = Matcher();
  CHECK(m.Kernel() == (AnchorFilter::CpuSupported() ? Kernel::kFilter : Kernel::kScalar));
  LineMatcher::PreferScalarScan(true);
  CHECK(m.Kernel() == Kernel::kScalar);
  LineMatcher::PreferScalarScan(false);
}

// Figures, not a gate (a shared CI box): each kernel's cost per GiB on the bench's lines.
TEST_CASE("the vector scan costs less than the scalar scan on healthy lines") {
  const LineMatcher& m = Matcher();
  for (const std::string& l :
       {std::string(79, 'x'),
        std::string("iter 83594: loss 1.9491, time: 6235.95ms, speed: 1771 toks/s/device"),
        std::string("gpu01:2291:2291 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC")}) {
    std::string block;
    while (block.size() < (4u << 20)) block += l + "\n";
    double ns[2] = {};
    for (Kernel k : {Kernel::kScalar, Kernel::kFilter}) {
      std::size_t candidates = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < 4; ++r) {
        m.ScanBlockWith(k, block, [&](std::string_view, LineIndex&) { ++candidates; });
      }
      ns[k == Kernel::kFilter] =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
          (4.0 * block.size());
      CHECK(candidates == 0);
    }
    std::printf("skip scan of \"%.24s...\": scalar %.3f s/GiB, vector %.3f s/GiB\n", l.c_str(),
                ns[0] * 1.073741824, ns[1] * 1.073741824);
  }
}
