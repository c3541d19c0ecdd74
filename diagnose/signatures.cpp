#include "diagnose/signatures.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cstring>
#include <functional>
#include <mutex>
#include <regex>

#include "common/parse/kmsg.h"
#include "common/strings.h"
#include "diagnose/anchor_filter.h"
#include "diagnose/regex_lead.h"

namespace sl::diagnose {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kHang:
      return "hang";
  }
  return "info";
}

std::string_view EvidenceKindName(EvidenceKind k) {
  switch (k) {
    case EvidenceKind::kSymptom:
      return "symptom";
    case EvidenceKind::kCause:
      return "cause";
    case EvidenceKind::kFact:
      return "fact";
  }
  return "symptom";
}

namespace {

using S = Severity;
using K = EvidenceKind;

// Order matters: the first row whose prefilter, second substring and regex all match wins, so
// rows that refine a shared prefilter (IB completion status codes) come before the generic row.
// Formats covered: torch 1.13 ("[E ProcessGroupNCCL.cpp:821] [Rank 1] ..."), 2.0-2.3 (NumelIn/
// NumelOut), 2.4+ ("[rank0]:[E1130 ...]" prefix, PG GUID), 2.11 (checked against the H200 fixture).
constexpr Signature kCatalog[] = {
// One file of rows per source family, in this order (clang-format must not sort them: the
// first row that matches wins, and the catch-all comes last).
// clang-format off
#include "diagnose/catalog/torch_c10d.inc"
#include "diagnose/catalog/gloo.inc"
#include "diagnose/catalog/nccl_shm.inc"
#include "diagnose/catalog/nccl_ib.inc"
#include "diagnose/catalog/nccl_ras.inc"
#include "diagnose/catalog/nccl_init.inc"
#include "diagnose/catalog/nccl_socket.inc"
#include "diagnose/catalog/nccl_topo.inc"
#include "diagnose/catalog/cuda.inc"
#include "diagnose/catalog/torch_dataloader.inc"
#include "diagnose/catalog/kernel.inc"
#include "diagnose/catalog/rdma_tools.inc"
#include "diagnose/catalog/torch_elastic.inc"
#include "diagnose/catalog/mpi.inc"
#include "diagnose/catalog/slurm.inc"
#include "diagnose/catalog/crash.inc"
#include "diagnose/catalog/frameworks.inc"
#include "diagnose/catalog/nccl_coll.inc"
#include "diagnose/catalog/progress.inc"
#include "diagnose/catalog/nccl_result.inc"
#include "diagnose/catalog/errno_text.inc"
#include "diagnose/catalog/nccl_catchall.inc"
#include "diagnose/catalog/generic.inc"
    // clang-format on
};

}  // namespace

bool MayBeCompletedByLaterText(const Signature& s) {
  return s.id == std::string_view("torch.watchdog_timeout_text");
}

std::span<const Signature> Catalog() { return kCatalog; }

std::string Match::Field(std::string_view name) const {
  auto it = fields.find(std::string(name));
  return it == fields.end() ? std::string() : it->second;
}

struct LineMatcher::Compiled {
  // Horspool skips ahead by up to the prefilter's length on a mismatch, so a healthy line costs a
  // few dozen byte comparisons per row instead of a memcmp at every occurrence of the first byte.
  std::optional<std::boyer_moore_horspool_searcher<std::string_view::const_iterator>> pre;
  std::vector<std::string> names;
  // The literal every match of the regex starts with ("" = none known): the search then runs
  // only from its occurrences, anchored there, instead of from every byte of the line. libstdc++
  // sets up its executor per start position, so on a 100-byte line this is most of the cost.
  std::string lead;
  bool at_start = false;  // RegexAnchoredAtStart: tried at the line's start only
  // Compiled on the first line that passes the row's substring tests: compiling all 152 regexes
  // up front cost every start-up ~85 M instructions (3.5x the rest of `safe-launch -- true`),
  // and a healthy job reaches almost none of them. call_once: the matcher is shared by threads.
  const std::regex* Regex(std::string_view pattern) const {
    if (pattern.empty()) return nullptr;
    std::call_once(once_, [&] {
      re_.emplace(std::string(pattern), std::regex::ECMAScript | std::regex::optimize);
    });
    return &*re_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::optional<std::regex> re_;
};

namespace {
// Wu-Manber over anchors of kAnchor bytes, stepping on the 3 bytes that end at the scan position
// (the window under test ends there too).
constexpr std::size_t kAnchor = LineMatcher::kAnchor;
constexpr std::uint8_t kFreeShift = kAnchor;  // no anchor can hold the last byte seen
static_assert(std::endian::native == std::endian::little, "Triple() reads bytes in this order");

// The 3 bytes p[-2], p[-1], p[0] as one number (p[0] in bits 16-23); reads p[-3] too, so p must
// be at least 3 bytes into the text (every scan position is kAnchor - 1 or more).
inline std::uint32_t Triple(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p - 3, 4);
  return v >> 8;
}
inline std::uint32_t TripleOf(char a, char b, char c) {
  return std::uint32_t(std::uint8_t(a)) | (std::uint32_t(std::uint8_t(b)) << 8) |
         (std::uint32_t(std::uint8_t(c)) << 16);
}
// shifts_ holds two tables: by a triple hashed to 16 bits (multiplicative, top bits), then, from
// kPairs on, by the triple's last 2 bytes.
constexpr std::size_t kPairs = std::size_t(1) << 16;
inline std::uint32_t Hash3(std::uint32_t triple) { return (triple * 0x9E3779B1u) >> 16; }
inline std::uint32_t Pair(std::uint32_t triple) { return triple >> 8; }
inline std::uint64_t Window(const char* p) {
  std::uint64_t w = 0;
  std::memcpy(&w, p, kAnchor);
  return w;
}
// 16-bit hash of a window for the anchor bitmap (multiplicative, top bits).
inline std::uint32_t WindowHash(std::uint64_t w) {
  return static_cast<std::uint32_t>((w * 0x9E3779B97F4A7C15ull) >> 48);
}
// The scan's step at position p (the last byte of the window under test): 0 where the 3 bytes
// ending at p end an anchor (or share its hash).
inline std::uint8_t Shift(const std::uint8_t* shifts, const char* p) {
  const std::uint32_t t = Triple(p);
  const std::uint8_t a = shifts[Hash3(t)], b = shifts[kPairs + Pair(t)];
  return a < b ? a : b;
}

// What healthy jobs print by the thousand (statistics only: anchors and filter buckets are
// chosen where it is thin).
constexpr std::string_view kHealthySample =
#include "diagnose/catalog/healthy_sample.inc"
    ;

// How often each byte, pair and triple occurs in kHealthySample: the cost of an anchor is how
// far it holds the scan back on such text.
struct HealthyText {
  std::vector<std::uint32_t> triples = std::vector<std::uint32_t>(1u << 16);  // by Hash3
  std::vector<std::uint32_t> pairs = std::vector<std::uint32_t>(1u << 16);
  std::uint32_t bytes[256] = {};
  HealthyText() {
    const std::string_view s = kHealthySample;
    for (std::size_t i = 0; i < s.size(); ++i) {
      ++bytes[std::uint8_t(s[i])];
      if (i >= 1) ++pairs[std::uint8_t(s[i - 1]) | (std::uint32_t(std::uint8_t(s[i])) << 8)];
      if (i >= 2) ++triples[Hash3(TripleOf(s[i - 2], s[i - 1], s[i]))];
    }
  }
  // What a position costs where the scan can move `shift` bytes, over the ideal kFreeShift; a
  // window test (shift 0) costs about as much as four steps.
  static double Penalty(int shift) { return shift == 0 ? 4.0 : 1.0 / shift - 1.0 / kFreeShift; }
  // The anchor `a` (kAnchor bytes) lowers the shift at text that ends in one of its triples
  // (to kAnchor - 1 - j for the triple ending at a[j]), in its first 2 bytes (to kAnchor - 2) or
  // in its first byte (to kAnchor - 1).
  double Cost(std::string_view a) const {
    double c =
        bytes[std::uint8_t(a[0])] * Penalty(kAnchor - 1) +
        pairs[std::uint8_t(a[0]) | (std::uint32_t(std::uint8_t(a[1])) << 8)] * Penalty(kAnchor - 2);
    for (std::size_t j = 2; j < kAnchor; ++j) {
      c += triples[Hash3(TripleOf(a[j - 2], a[j - 1], a[j]))] *
           Penalty(static_cast<int>(kAnchor - 1 - j));
    }
    return c;
  }
};

// The cheapest anchor among the windows of kAnchor bytes of `texts` (the row's prefilter and
// second substring: a line the row matches holds both), "" when none is long enough.
std::string PickAnchor(const HealthyText& healthy, std::initializer_list<std::string_view> texts) {
  std::string_view best;
  double best_cost = 0;
  for (std::string_view t : texts) {
    for (std::size_t i = 0; i + kAnchor <= t.size(); ++i) {
      const std::string_view a = t.substr(i, kAnchor);
      if (a.find('\n') != std::string_view::npos) continue;  // the scan never looks across lines
      const double c = healthy.Cost(a);
      if (best.empty() || c < best_cost) {
        best = a;
        best_cost = c;
      }
    }
  }
  return std::string(best);
}

}  // namespace

std::bitset<LineMatcher::kMaxRows> LineMatcher::Candidates(std::string_view line) const {
  if (line.size() < kAnchor) return short_rows_;
  std::bitset<kMaxRows> rows = short_rows_;
  const char* d = line.data();
  const std::uint8_t* shifts = shifts_.data();
  for (std::size_t pos = kAnchor - 1; pos < line.size();) {
    if (const std::uint8_t s = Shift(shifts, d + pos); s != 0) {
      pos += s;
      continue;
    }
    if (auto it = rows_by_window_.find(Window(d + pos + 1 - kAnchor));
        it != rows_by_window_.end()) {
      rows |= it->second;
    }
    ++pos;
  }
  return rows;
}

namespace {

constexpr int kLanes = 8;  // a step is a chain of about 20 cycles; 8 in flight hide it

// Asks for a line's bytes ahead of their use (its first two cache lines).
inline void Prefetch(std::string_view line) {
  __builtin_prefetch(line.data());
  if (line.size() > 64) __builtin_prefetch(line.data() + 64);
}

/// Lane k scans [pos[k] - kAnchor + 1, end[k]): the block cut at line ends into kLanes ranges of
/// about equal size. A lane's position is the last byte of the window under test.
struct Lanes {
  std::size_t pos[kLanes], end[kLanes];
};
Lanes CutLanes(const char* d, std::size_t n) {
  Lanes l;
  std::size_t cut = 0;
  for (int k = 0; k < kLanes; ++k) {
    std::size_t stop = n;
    if (k + 1 < kLanes) {
      stop = std::max(cut, n * (k + 1) / kLanes);
      const void* nl = stop < n ? std::memchr(d + stop, '\n', n - stop) : nullptr;
      stop = nl ? static_cast<const char*>(nl) - d + 1 : n;
    }
    l.pos[k] = cut + LineMatcher::kAnchor - 1;
    l.end[k] = stop;
    cut = stop;
  }
  return l;
}

}  // namespace

namespace {

// Runs the lanes in lock step while every lane is inside its range and none is at a zero shift:
// no call in the loop, so that the positions, the block and the table stay in registers. Returns
// the lane whose shift is 0, or -1 when a lane reached its end (ScanBlockLazily gives it another
// range, or scans what is left lane by lane).
__attribute__((noinline)) int RunLanes(const char* d, const std::uint8_t* shifts,
                                       std::size_t (&pos)[kLanes],
                                       const std::size_t (&end)[kLanes]) {
  static_assert(kLanes == 8, "one SL_LANE per lane below");
  std::size_t p0 = pos[0], p1 = pos[1], p2 = pos[2], p3 = pos[3];
  std::size_t p4 = pos[4], p5 = pos[5], p6 = pos[6], p7 = pos[7];
  int stop = -1;
#define SL_LANE(k)                                              \
  if (const std::uint8_t s = Shift(shifts, d + p##k); s != 0) { \
    p##k += s;                                                  \
  } else {                                                      \
    stop = k;                                                   \
    break;                                                      \
  }
  while (p0 < end[0] && p1 < end[1] && p2 < end[2] && p3 < end[3] && p4 < end[4] && p5 < end[5] &&
         p6 < end[6] && p7 < end[7]) {
    SL_LANE(0)
    SL_LANE(1)
    SL_LANE(2)
    SL_LANE(3)
    SL_LANE(4)
    SL_LANE(5)
    SL_LANE(6)
    SL_LANE(7)
  }
#undef SL_LANE
  pos[0] = p0;
  pos[1] = p1;
  pos[2] = p2;
  pos[3] = p3;
  pos[4] = p4;
  pos[5] = p5;
  pos[6] = p6;
  pos[7] = p7;
  return stop;
}

}  // namespace

std::size_t LineIndex::Of(std::string_view line) {
  const std::size_t start = static_cast<std::size_t>(line.data() - block_.data());
  index_ += CountByte(block_.substr(counted_, start - counted_), '\n');
  counted_ = start;
  return index_;
}

std::size_t LineIndex::Total() {
  return Of(block_.substr(block_.size())) + (!block_.empty() && block_.back() != '\n' ? 1 : 0);
}

std::size_t LineMatcher::ScanBlock(
    std::string_view block,
    const std::function<void(std::string_view line, std::size_t index)>& on_candidate) const {
  LineIndex index(block);  // one count over the block: to each candidate, then to the end
  ScanBlockLazily(block,
                  [&](std::string_view line, LineIndex&) { on_candidate(line, index.Of(line)); });
  return index.Total();
}

namespace {

// The lines that hold an anchor, per range a lane scanned (in order within each; the ranges are
// put in block order at the end). A lane starts a range at the start and at each steal.
struct HitRange {
  std::size_t start;
  std::vector<std::string_view> hits;
};

// A lane that reaches its end takes the second half of the largest range left (cut at a line
// start), so that the lanes stay in lock step to the end of the block: one lane alone waits on
// its chain at every step. Below kMinSteal bytes the rest is scanned lane by lane.
bool StealHalf(const char* d, Lanes& lanes, int k, std::vector<HitRange>& ranges, int* range_of) {
  constexpr std::size_t kMinSteal = 2048;
  int from = -1;
  std::size_t most = 0;
  for (int j = 0; j < kLanes; ++j) {
    const std::size_t left = lanes.end[j] > lanes.pos[j] ? lanes.end[j] - lanes.pos[j] : 0;
    if (left > most) {
      most = left;
      from = j;
    }
  }
  if (most < kMinSteal) return false;
  const std::size_t half = lanes.pos[from] + most / 2;
  const void* nl = std::memchr(d + half, '\n', lanes.end[from] - half);
  if (nl == nullptr) return false;
  const std::size_t cut = static_cast<const char*>(nl) - d + 1;
  if (cut + kAnchor > lanes.end[from]) return false;
  lanes.pos[k] = cut + kAnchor - 1;
  lanes.end[k] = lanes.end[from];
  lanes.end[from] = cut;
  range_of[k] = static_cast<int>(ranges.size());
  ranges.push_back({cut, {}});
  return true;
}

// The hit lines of the ranges, in block order.
std::vector<std::string_view> InBlockOrder(std::vector<HitRange>& ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const HitRange& a, const HitRange& b) { return a.start < b.start; });
  std::vector<std::string_view> hits;
  for (const HitRange& r : ranges) hits.insert(hits.end(), r.hits.begin(), r.hits.end());
  return hits;
}

// Every hit line, in block order. By now the block's first lines have left the core's cache (a
// block is larger than L2): the lines a few places on are fetched while this one is recognised.
void HandOver(const std::vector<std::string_view>& hits, LineIndex& index,
              const std::function<void(std::string_view line, LineIndex& index)>& on_candidate) {
  constexpr std::size_t kAhead = 8;
  for (std::size_t i = 0; i < std::min(kAhead, hits.size()); ++i) Prefetch(hits[i]);
  for (std::size_t i = 0; i < hits.size(); ++i) {
    if (i + kAhead < hits.size()) Prefetch(hits[i + kAhead]);
    on_candidate(hits[i], index);
  }
}

std::atomic<bool> scalar_preferred{false};

}  // namespace

void LineMatcher::PreferScalarScan(bool scalar) { scalar_preferred.store(scalar); }

LineMatcher::ScanKernel LineMatcher::Kernel() const {
  return !scalar_preferred.load(std::memory_order_relaxed) && AnchorFilter::CpuSupported()
             ? ScanKernel::kFilter
             : ScanKernel::kScalar;
}

void LineMatcher::ScanBlockLazily(
    std::string_view block,
    const std::function<void(std::string_view line, LineIndex& index)>& on_candidate) const {
  ScanBlockWith(Kernel(), block, on_candidate);
}

void LineMatcher::ScanBlockWith(
    ScanKernel kernel, std::string_view block,
    const std::function<void(std::string_view line, LineIndex& index)>& on_candidate) const {
  LineIndex index(block);
  if (short_rows_.any()) {  // a row without an anchor: every line must be tried
    ForEachLine(block, [&](std::string_view line) { on_candidate(line, index); });
    return;
  }
  std::vector<std::string_view> hits;
  if (kernel == ScanKernel::kScalar) {
    ScanScalar(block, &hits);
  } else {
    Filter().FindLines(block, kernel == ScanKernel::kFilter, &hits);
  }
  HandOver(hits, index, on_candidate);
}

const AnchorFilter& LineMatcher::Filter() const {
  std::call_once(filter_once_, [this] {
    std::vector<std::string> all;
    for (const std::string& a : anchors_) {
      if (!a.empty()) all.push_back(a);
    }
    all.push_back(wrapped_anchor_);
    filter_ = std::make_unique<AnchorFilter>(all, kHealthySample);
  });
  return *filter_;
}

void LineMatcher::ScanScalar(std::string_view block, std::vector<std::string_view>* out) const {
  // The skip scan runs across line ends (an anchor never holds '\n', so a window that hits lies
  // inside one line). Its steps form a dependency chain (load, hash, table, add) that leaves the
  // core mostly idle, so the block is cut at line ends into kLanes ranges scanned in lock step:
  // the chains overlap. A hit records the line's start and resumes after the line (MatchLine
  // looks at every row of that line itself). A shift never jumps over the end of an anchor
  // occurrence: each table's entry is at most the distance to the end of any anchor the bytes
  // seen may be part of.
  const char* d = block.data();
  const std::size_t n = block.size();
  const std::uint8_t* shifts = shifts_.data();
  Lanes lanes = CutLanes(d, n);
  std::vector<HitRange> ranges;
  int range_of[kLanes];
  for (int k = 0; k < kLanes; ++k) {
    ranges.push_back({lanes.pos[k], {}});
    range_of[k] = k;
  }
  // A zero shift at `pos` (the last byte of the window): a hit records its line and goes on after
  // it, anything else goes on at the next byte.
  auto zero_shift = [&](std::size_t pos, int lane) -> std::size_t {
    const std::size_t at = pos + 1 - kAnchor;
    if (!IsAnchor(Window(d + at))) return pos + 1;
    const void* prev = ::memrchr(d, '\n', at);
    const std::size_t start = prev ? static_cast<const char*>(prev) - d + 1 : 0;
    const void* next = std::memchr(d + pos, '\n', n - pos);
    const std::size_t end = next ? static_cast<const char*>(next) - d : n;
    ranges[range_of[lane]].hits.push_back(block.substr(start, end - start));
    return end + kAnchor;
  };
  for (;;) {
    const int k = RunLanes(d, shifts, lanes.pos, lanes.end);
    if (k >= 0) {
      lanes.pos[k] = zero_shift(lanes.pos[k], k);
      continue;
    }
    bool all = true;
    for (int j = 0; j < kLanes && all; ++j) {
      if (lanes.pos[j] >= lanes.end[j]) all = StealHalf(d, lanes, j, ranges, range_of);
    }
    if (!all) break;
  }
  for (int k = 0; k < kLanes; ++k) {
    std::size_t& p = lanes.pos[k];
    while (p < lanes.end[k]) {
      const std::uint8_t s = Shift(shifts, d + p);
      p = s != 0 ? p + s : zero_shift(p, k);
    }
  }
  *out = InBlockOrder(ranges);
}

std::size_t LineMatcher::SlotOf(std::uint64_t window) const {
  // anchor_slots_ has a power of two of slots.
  return static_cast<std::size_t>((window * 0x9E3779B97F4A7C15ull) >> 32) &
         (anchor_slots_.size() - 1);
}

bool LineMatcher::IsAnchor(std::uint64_t window) const {
  const std::uint32_t h = WindowHash(window);
  if (!((anchor_bits_[h >> 6] >> (h & 63)) & 1)) return false;
  for (std::size_t i = SlotOf(window);; i = (i + 1) & (anchor_slots_.size() - 1)) {
    if (anchor_slots_[i] == 0) return false;  // (a window of 6 NULs is no anchor either)
    if (anchor_slots_[i] == window) return true;
  }
}

LineMatcher::LineMatcher() {
  static_assert(std::size(kCatalog) <= kMaxRows, "raise LineMatcher::kMaxRows");
  const HealthyText healthy;
  anchors_.resize(std::size(kCatalog));
  // Every prefilter is at least kAnchor bytes (checked by a unit test), so every row has one.
  for (std::size_t i = 0; i < std::size(kCatalog); ++i) {
    anchors_[i] = PickAnchor(healthy, {kCatalog[i].prefilter, kCatalog[i].also});
    if (anchors_[i].empty()) short_rows_.set(i);
  }
  // Not a row's: lines that hold it are handed over for RecognizeWrapped.
  const std::string wrapped = PickAnchor(healthy, {kWrappedWatchdogText});
  shifts_.assign(2 * kPairs, kFreeShift);
  auto lower = [](std::uint8_t& s, std::size_t to) {
    s = std::min<std::uint8_t>(s, static_cast<std::uint8_t>(to));
  };
  std::vector<std::uint64_t> windows;
  auto add = [&](const std::string& a, std::size_t row) {
    const std::uint64_t w = Window(a.data());
    auto& rows = rows_by_window_[w];
    if (row < kMaxRows) rows.set(row);
    anchor_bits_[WindowHash(w) >> 6] |= std::uint64_t{1} << (WindowHash(w) & 63);
    windows.push_back(w);
    // Text whose last byte is this anchor's first may go on into the rest of it: at most
    // kAnchor - 1 bytes on; whose last 2 bytes are its first 2, kAnchor - 2.
    const std::uint32_t first = std::uint32_t(std::uint8_t(a[0])) << 8;
    for (std::uint32_t x = 0; x < 256; ++x) lower(shifts_[kPairs + (x | first)], kAnchor - 1);
    lower(shifts_[kPairs + Pair(TripleOf(0, a[0], a[1]))], kAnchor - 2);
    // The triple ending at a[j] (j = 2 .. kAnchor-1) ends an occurrence kAnchor - 1 - j bytes on.
    for (std::size_t j = 2; j < kAnchor; ++j) {
      lower(shifts_[Hash3(TripleOf(a[j - 2], a[j - 1], a[j]))], kAnchor - 1 - j);
    }
  };
  for (std::size_t i = 0; i < anchors_.size(); ++i) {
    if (!anchors_[i].empty()) add(anchors_[i], i);
  }
  add(wrapped, kMaxRows);
  wrapped_anchor_ = wrapped;
  // The anchors again, in open addressing at most half full, for the scan's exact test (no
  // window is 0: an anchor holds no NUL byte, or cleaning would have replaced it).
  anchor_slots_.assign(std::bit_ceil(2 * windows.size()), 0);
  for (std::uint64_t w : windows) {
    std::size_t i = SlotOf(w);
    while (anchor_slots_[i] != 0 && anchor_slots_[i] != w) i = (i + 1) & (anchor_slots_.size() - 1);
    anchor_slots_[i] = w;
  }
  for (const Signature& sig : kCatalog) {
    auto* c = new Compiled;
    if (sig.prefilter.size() >= 4) c->pre.emplace(sig.prefilter.begin(), sig.prefilter.end());
    c->names = Split(sig.fields, ',');
    c->lead = RegexLeadingLiteral(sig.pattern);
    c->at_start = RegexAnchoredAtStart(sig.pattern);
    compiled_.push_back(c);
  }
}

LineMatcher::~LineMatcher() {
  for (Compiled* c : compiled_) delete c;
}

namespace {

std::string_view DigitsAt(std::string_view s, std::size_t pos) {
  std::size_t end = pos;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  return s.substr(pos, end - pos);
}

// An extracted "xid" is explained from the one Xid table (shared with the kernel.log check).
void AddXidFields(std::map<std::string, std::string>* fields) {
  auto it = fields->find("xid");
  if (it == fields->end()) return;
  auto xid = ParseInt(it->second);
  if (!xid.ok() || *xid < 0 || *xid > 100000) return;
  const XidInfo* info = FindXid(static_cast<int>(*xid));
  (*fields)["xid_fatal"] = info != nullptr && info->fatal ? "yes" : "no";
  if (info != nullptr) (*fields)["xid_meaning"] = std::string(info->meaning);
}

}  // namespace

void ExtractCommonFields(std::string_view line, std::map<std::string, std::string>* fields) {
  auto put = [fields](const char* k, std::string_view v) {
    if (!v.empty() && !fields->count(k)) (*fields)[k] = std::string(v);
  };
  // torch >= 2.4 prefixes every log line of a rank with "[rankN]:".
  if (auto p = line.find("[rank"); p != std::string_view::npos) put("rank", DigitsAt(line, p + 5));
  if (auto p = line.find("[Rank "); p != std::string_view::npos) put("rank", DigitsAt(line, p + 6));
  // The process group: "[PG ID 0 PG GUID 0(default_pg) Rank 3]" (torch 2.4+), "[PG 0 Rank 3]"
  // (ProcessGroupNCCL's logPrefix in 2.2-2.3).
  if (auto p = line.find("PG ID "); p != std::string_view::npos) put("pg", DigitsAt(line, p + 6));
  if (auto p = line.find("[PG "); p != std::string_view::npos) put("pg", DigitsAt(line, p + 4));
  // NCCL's "host:pid:tid [cudadev] " prefix (may itself follow "file.txt:" from grep).
  if (auto w = line.find(" WARN ");
      w != std::string_view::npos || line.find(" INFO ") != std::string_view::npos) {
    std::string_view head = line.substr(0, line.find(' '));
    auto parts = Split(head, ':', false);
    if (parts.size() >= 3) {
      std::size_t n = parts.size();
      bool digits = !parts[n - 1].empty() && !parts[n - 2].empty() &&
                    DigitsAt(parts[n - 1], 0).size() == parts[n - 1].size() &&
                    DigitsAt(parts[n - 2], 0).size() == parts[n - 2].size();
      if (digits && !parts[n - 3].empty() && parts[n - 3] != "...") {
        put("host", parts[n - 3]);
        put("pid", parts[n - 2]);
      }
    }
  }
}

std::optional<Match> LineMatcher::MatchLine(std::string_view line) const {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto rows = Candidates(line);
  if (rows.none()) return std::nullopt;
  // A fact row gives way to a later row of a cause or symptom on the same line: torch and the
  // wrappers print NCCL's result string with "NCCL version 2.19.3" appended ("internal error -
  // please report this issue to the NCCL developers, NCCL version 2.19.3"), and the error is what
  // the line is about (the version rules read every kept line's text, not only the fact's).
  std::optional<Match> fact;
  for (std::size_t i = 0; i < std::size(kCatalog); ++i) {
    if (!rows.test(i)) continue;
    const Signature& sig = kCatalog[i];
    // ... but not to a row of the same message (same prefilter): the fact refines it (NVLS
    // "Proceeding without NVLS support" is the benign case of the failed-bind row). Decided
    // before the row's search and regex: a row that cannot win is not matched.
    // Nor to a generic failure row (catalog/generic.inc): those only take lines that no row of a
    // known source took ("Warning: Unable to resolve hostname" is Gloo's fact, not a failure).
    if (fact && (sig.kind == EvidenceKind::kFact || sig.prefilter == fact->signature->prefilter ||
                 sig.category == std::string_view("failure_line"))) {
      continue;
    }
    const Compiled& c = *compiled_[i];
    if (c.pre) {
      if (std::search(line.begin(), line.end(), *c.pre) == line.end()) continue;
    } else if (line.find(sig.prefilter) == std::string_view::npos) {
      continue;
    }
    if (!sig.also.empty() && line.find(sig.also) == std::string_view::npos) continue;
    Match m;
    if (const std::regex* re = c.Regex(sig.pattern)) {
      std::match_results<std::string_view::const_iterator> mr;
      const bool hit = c.at_start ? std::regex_search(line.begin(), line.end(), mr, *re,
                                                      std::regex_constants::match_continuous)
                                  : SearchFromLead(line, c.lead, *re, &mr);
      if (!hit) continue;
      for (std::size_t g = 0; g < c.names.size() && g + 1 < mr.size(); ++g) {
        if (mr[g + 1].matched && mr[g + 1].length() > 0) m.fields[c.names[g]] = mr[g + 1].str();
      }
    }
    m.signature = &sig;
    m.line = std::string(line);
    ExtractCommonFields(line, &m.fields);
    AddXidFields(&m.fields);
    if (sig.kind != EvidenceKind::kFact) return m;
    fact = std::move(m);
  }
  return fact;
}

}  // namespace sl::diagnose
