#include "diagnose/anchor_filter.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sl::diagnose {
namespace {

constexpr std::size_t kWidth = AnchorFilter::kWidth;
constexpr std::size_t kStep = AnchorFilter::kStep;
constexpr std::size_t kGroups = AnchorFilter::kGroups;
constexpr std::size_t kBuckets = 8 * kGroups;
// How much the estimate counts against the sample's own passes when buckets are chosen (in
// positions: the estimated chance times the sample's length). Tried 0.02 to 2 on healthy,
// corpus and bench text (2026-12-04): the same buckets; with the estimate alone (a weight of
// 1000), the bench's mixed log passed 3x as often.
constexpr double kEstimateWeight = 0.5;

std::uint64_t WindowAt(const char* p) {
  std::uint64_t w = 0;
  std::memcpy(&w, p, kWidth);
  return w;
}

#if defined(__x86_64__)
// One step is kWidth loads, 2 kWidth vpermi2b (a 128-byte table per offset and group, indexed by
// each byte's low 7 bits), the ANDs, one test: about 20 instructions for 64 positions, no
// branch. The tables stay in 24 of the 32 registers across the steps.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void MasksAvx512(
    const std::uint8_t (*tables)[kWidth][128], const char* p, std::size_t steps,
    std::uint64_t* out) {
  static_assert(kWidth == 6 && kGroups == 2, "the steps below are written out for 6 and 2");
  // Written out, not looped over arrays: GCC kept arrays of tables on the stack (a load per
  // lookup) instead of in registers.
#define SL_TABLES(g, j)                                      \
  const __m512i lo##g##j = _mm512_loadu_si512(tables[g][j]); \
  const __m512i hi##g##j = _mm512_loadu_si512(tables[g][j] + 64)
  SL_TABLES(0, 0);
  SL_TABLES(0, 1);
  SL_TABLES(0, 2);
  SL_TABLES(0, 3);
  SL_TABLES(0, 4);
  SL_TABLES(0, 5);
  SL_TABLES(1, 0);
  SL_TABLES(1, 1);
  SL_TABLES(1, 2);
  SL_TABLES(1, 3);
  SL_TABLES(1, 4);
  SL_TABLES(1, 5);
#undef SL_TABLES
#define SL_LOOK(g, j) _mm512_permutex2var_epi8(lo##g##j, v##j, hi##g##j)
  for (std::size_t s = 0; s < steps; ++s, p += kStep) {
    const __m512i v0 = _mm512_loadu_si512(p), v1 = _mm512_loadu_si512(p + 1);
    const __m512i v2 = _mm512_loadu_si512(p + 2), v3 = _mm512_loadu_si512(p + 3);
    const __m512i v4 = _mm512_loadu_si512(p + 4), v5 = _mm512_loadu_si512(p + 5);
    // 0x80: a & b & c, two offsets per ternary-logic instruction.
    __m512i a = _mm512_and_si512(SL_LOOK(0, 0), SL_LOOK(0, 1));
    a = _mm512_ternarylogic_epi32(a, SL_LOOK(0, 2), SL_LOOK(0, 3), 0x80);
    a = _mm512_ternarylogic_epi32(a, SL_LOOK(0, 4), SL_LOOK(0, 5), 0x80);
    __m512i b = _mm512_and_si512(SL_LOOK(1, 0), SL_LOOK(1, 1));
    b = _mm512_ternarylogic_epi32(b, SL_LOOK(1, 2), SL_LOOK(1, 3), 0x80);
    b = _mm512_ternarylogic_epi32(b, SL_LOOK(1, 4), SL_LOOK(1, 5), 0x80);
    out[s] = _mm512_test_epi8_mask(_mm512_or_si512(a, b), _mm512_or_si512(a, b));
  }
#undef SL_LOOK
}
#endif

// The same masks, a byte at a time: where the CPU lacks the kernel, and the tests' reference.
void MasksPortable(const std::uint8_t (*tables)[kWidth][128], const char* p, std::size_t steps,
                   std::uint64_t* out) {
  for (std::size_t s = 0; s < steps; ++s, p += kStep) {
    std::uint64_t m = 0;
    for (std::size_t i = 0; i < kStep; ++i) {
      std::uint8_t any = 0;
      for (std::size_t g = 0; g < kGroups; ++g) {
        std::uint8_t acc = 0xff;
        for (std::size_t j = 0; j < kWidth; ++j) acc &= tables[g][j][std::uint8_t(p[i + j]) & 127];
        any |= acc;
      }
      if (any != 0) m |= std::uint64_t{1} << i;
    }
    out[s] = m;
  }
}

}  // namespace

bool AnchorFilter::CpuSupported() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vbmi");
  return ok;
#else
  return false;
#endif
}

namespace {

std::uint8_t ByteOf(std::uint64_t window, std::size_t j) {
  return std::uint8_t(window >> (8 * j)) & 127;
}

// Deals anchors into buckets, filling the filter's tables. Greedy: the most common-looking
// anchors first, each into the bucket whose passed positions of the healthy sample it adds
// fewest to; between equals, the one whose estimate rises least (the chance that a bucket passes
// a position, taken as the product over the offsets of the chance that the byte there is in its
// set: bytes as independent, for text unlike the sample).
class Buckets {
 public:
  Buckets(std::string_view healthy, std::uint8_t (*tables)[kWidth][128])
      : tables_(tables),
        positions_(healthy.size() >= kWidth ? healthy.size() - kWidth + 1 : 0),
        words_((positions_ + 63) / 64),
        at_(128 * (words_ + 1), 0),
        passing_(kBuckets * kWidth * words_, 0),
        with_(kWidth * words_),
        all_(words_) {
    // How likely a byte of healthy text is each value (low 7 bits, as the tables see it; +1 so
    // that bytes the sample lacks still cost something).
    std::fill(std::begin(freq_), std::end(freq_), 1.0);
    for (char c : healthy) freq_[std::uint8_t(c) & 127] += 1;
    for (double& f : freq_) f /= static_cast<double>(healthy.size() + 128);
    for (std::size_t i = 0; i < healthy.size() && i < 64 * (words_ + 1); ++i) {
      at_[(std::uint8_t(healthy[i]) & 127) * (words_ + 1) + i / 64] |= std::uint64_t{1} << (i % 64);
    }
  }
  double Alone(std::uint64_t w) const {
    double p = 1;
    for (std::size_t j = 0; j < kWidth; ++j) p *= freq_[ByteOf(w, j)];
    return p;
  }
  void Add(std::uint64_t w) {
    Positions(w);
    std::size_t best = 0, best_passed = 0;
    double best_score = 0;
    for (std::size_t k = 0; k < kBuckets; ++k) {
      std::size_t now = 0;
      const double score = Score(w, k, &now);
      if (k == 0 || score < best_score) {
        best = k;
        best_score = score;
        best_passed = now;
      }
    }
    passed_[best] = best_passed;
    for (std::size_t j = 0; j < kWidth; ++j) {
      const std::uint8_t b = ByteOf(w, j);
      std::uint8_t& entry = tables_[best / 8][j][b];
      if (!(entry & Bit(best))) {
        sum_[best][j] += freq_[b];
        std::uint64_t* mine = &passing_[(best * kWidth + j) * words_];
        for (std::size_t x = 0; x < words_; ++x) mine[x] |= with_[j * words_ + x];
      }
      entry |= Bit(best);
    }
  }

 private:
  static std::uint8_t Bit(std::size_t k) { return std::uint8_t(1u << (k % 8)); }
  // with_[j]: the sample positions whose byte at offset j is w's.
  void Positions(std::uint64_t w) {
    for (std::size_t j = 0; j < kWidth; ++j) {
      const std::uint64_t* src = &at_[ByteOf(w, j) * (words_ + 1)];
      for (std::size_t x = 0; x < words_; ++x) {
        with_[j * words_ + x] = j == 0 ? src[x] : (src[x] >> j) | (src[x + 1] << (64 - j));
      }
      if (positions_ % 64 != 0) {
        with_[j * words_ + words_ - 1] &= (std::uint64_t{1} << (positions_ % 64)) - 1;
      }
    }
  }
  // What adding w to bucket k costs: the sample positions it would newly pass, plus the rise of
  // the estimate in positions; *now: the positions it would pass then.
  double Score(std::uint64_t w, std::size_t k, std::size_t* now) {
    double before = 1, after = 1;
    std::fill(all_.begin(), all_.end(), ~std::uint64_t{0});
    const std::uint64_t* mine = &passing_[k * kWidth * words_];
    for (std::size_t j = 0; j < kWidth; ++j) {
      const std::uint8_t b = ByteOf(w, j);
      const bool fresh = !(tables_[k / 8][j][b] & Bit(k));
      before *= sum_[k][j];
      after *= sum_[k][j] + (fresh ? freq_[b] : 0.0);
      const std::uint64_t keep = fresh ? ~std::uint64_t{0} : 0;
      const std::uint64_t* m = mine + j * words_;
      const std::uint64_t* add = &with_[j * words_];
      for (std::size_t x = 0; x < words_; ++x) all_[x] &= m[x] | (add[x] & keep);
    }
    *now = 0;
    for (std::uint64_t a : all_) *now += static_cast<std::size_t>(std::popcount(a));
    return static_cast<double>(*now - passed_[k]) +
           kEstimateWeight * (after - before) * static_cast<double>(positions_);
  }

  std::uint8_t (*tables_)[kWidth][128];
  double freq_[128];
  const std::size_t positions_, words_;
  std::vector<std::uint64_t> at_;       // at_[b]: the sample positions of byte value b
  std::vector<std::uint64_t> passing_;  // [k][j]: positions whose byte j is in bucket k's set
  std::vector<std::uint64_t> with_, all_;
  std::size_t passed_[kBuckets] = {};  // positions each bucket passes (all offsets)
  double sum_[kBuckets][kWidth] = {};  // the chance of a byte in each set, estimated
};

}  // namespace

AnchorFilter::AnchorFilter(std::span<const std::string> anchors, std::string_view healthy) {
  std::vector<std::uint64_t> windows;
  for (const std::string& a : anchors) {
    if (a.size() == kWidth) windows.push_back(WindowAt(a.data()));
  }
  std::sort(windows.begin(), windows.end());
  windows.erase(std::unique(windows.begin(), windows.end()), windows.end());
  Buckets buckets(healthy, tables_);
  std::stable_sort(windows.begin(), windows.end(), [&](std::uint64_t a, std::uint64_t b) {
    return buckets.Alone(a) > buckets.Alone(b);
  });
  for (std::uint64_t w : windows) buckets.Add(w);
  slots_.assign(std::bit_ceil(2 * windows.size() + 2), 0);
  for (std::uint64_t w : windows) {
    if (w == 0) continue;  // kWidth NUL bytes: never an anchor (cleaning replaces NUL)
    std::size_t i = SlotOf(w);
    while (slots_[i] != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = w;
  }
}

std::size_t AnchorFilter::SlotOf(std::uint64_t window) const {
  return static_cast<std::size_t>((window * 0x9E3779B97F4A7C15ull) >> 32) & (slots_.size() - 1);
}

bool AnchorFilter::IsAnchor(const char* p) const {
  const std::uint64_t w = WindowAt(p);
  for (std::size_t i = SlotOf(w);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i] == 0) return false;
    if (slots_[i] == w) return true;
  }
}

void AnchorFilter::Masks(const char* p, std::size_t steps, bool vector, std::uint64_t* out) const {
#if defined(__x86_64__)
  if (vector && CpuSupported()) return MasksAvx512(tables_, p, steps, out);
#endif
  MasksPortable(tables_, p, steps, out);
}

std::uint64_t AnchorFilter::StepMask(const char* p, bool vector) const {
  std::uint64_t m = 0;
  Masks(p, 1, vector, &m);
  return m;
}

void AnchorFilter::FindLines(std::string_view block, bool vector,
                             std::vector<std::string_view>* lines) const {
  const char* d = block.data();
  const std::size_t n = block.size();
  if (n < kWidth) return;
  const std::size_t last = n - kWidth;  // the last window's start
  // The masks of up to kChunk steps are taken at once (the kernel keeps its tables in registers
  // for the whole run), then read: most are 0.
  constexpr std::size_t kChunk = 64;
  std::uint64_t masks[kChunk];
  std::size_t pos = 0;         // the first window start the next chunk looks at
  std::size_t resume = 0;      // the first window start still to decide (after a hit's line)
  std::size_t line_floor = 0;  // a line start at or before every window still to decide
  while (pos <= last) {
    std::size_t steps = std::min(
        kChunk, n - pos >= kStep + kWidth - 1 ? (n - pos - (kWidth - 1)) / kStep : std::size_t{0});
    std::size_t span = steps * kStep;
    if (steps == 0) {
      // Fewer than kStep + kWidth - 1 bytes left: a copy padded with line ends (in no anchor),
      // and only the windows inside the block counted.
      char pad[kStep + kWidth - 1];
      std::memset(pad, '\n', sizeof pad);
      std::memcpy(pad, d + pos, n - pos);
      Masks(pad, 1, vector, masks);
      span = last - pos + 1;  // < kStep
      masks[0] &= (std::uint64_t{1} << span) - 1;
      steps = 1;
    } else {
      Masks(d + pos, steps, vector, masks);
    }
    for (std::size_t s = 0; s < steps; ++s) {
      const std::size_t at0 = pos + s * kStep;
      std::uint64_t m = masks[s];
      if (resume > at0) {
        if (resume - at0 >= kStep) continue;
        m &= ~std::uint64_t{0} << (resume - at0);
      }
      while (m != 0) {
        const std::size_t at = at0 + static_cast<std::size_t>(std::countr_zero(m));
        m &= m - 1;
        if (!IsAnchor(d + at)) continue;
        // The hit's line; the scan goes on after it (the caller matches the whole line).
        const void* prev = ::memrchr(d + line_floor, '\n', at - line_floor);
        const std::size_t start = prev ? static_cast<const char*>(prev) - d + 1 : line_floor;
        const void* next = std::memchr(d + at, '\n', n - at);
        const std::size_t end = next ? static_cast<const char*>(next) - d : n;
        lines->push_back(block.substr(start, end - start));
        resume = line_floor = end + 1;
        if (resume - at0 >= kStep) break;
        m &= ~std::uint64_t{0} << (resume - at0);
      }
    }
    pos = std::max(pos + span, resume);
  }
}

}  // namespace sl::diagnose
