#include "common/line_assembler.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/strings.h"

namespace sl {

namespace {

// The first line end in `s`: '\n', or '\r' too when a lone CR ends lines.
std::size_t FindEol(std::string_view s, bool cr) {
  const std::size_t nl = s.find('\n');
  if (!cr) return nl;
  const void* c = std::memchr(s.data(), '\r', nl == std::string_view::npos ? s.size() : nl);
  return c != nullptr ? static_cast<std::size_t>(static_cast<const char*>(c) - s.data()) : nl;
}

// The first '\r' in `s` that is not the first half of "\r\n" (npos when none), and the '\n' before
// it (all of them when none) in *newlines: one pass for both. `s` ends in '\n', so every '\r' in
// it has a byte after it.
std::size_t FirstLoneCr(std::string_view s, std::uint64_t* newlines) {
  const char* d = s.data();
  const std::size_t n = s.size();
  std::size_t i = 0;
  std::uint64_t count = 0;
  std::size_t lone = std::string_view::npos;
#if defined(__SSE2__)
  // 16 positions at a time: a CR whose next byte is not LF; the LFs are summed in byte counters
  // (subtracting the 0xff of each match), folded with SAD before any can pass 255.
  const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
  while (lone == std::string_view::npos && i + 17 <= n) {
    __m128i acc = _mm_setzero_si128();
    const std::size_t stop = std::min(n - 16, i + 16 * 255);
    for (; i + 1 <= stop; i += 16) {
      const __m128i here = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
      const __m128i next = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i + 1));
      const __m128i is_lf = _mm_cmpeq_epi8(here, lf);
      if (_mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi8(next, lf), _mm_cmpeq_epi8(here, cr)))) {
        lone = i;  // the scalar loop below finds it in these 16 bytes
        break;
      }
      acc = _mm_sub_epi8(acc, is_lf);
    }
    const __m128i sum = _mm_sad_epu8(acc, _mm_setzero_si128());
    count += static_cast<std::uint64_t>(_mm_cvtsi128_si64(sum)) +
             static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum)));
  }
#endif
  for (; i + 1 < n; ++i) {
    if (d[i] == '\r' && d[i + 1] != '\n') break;
    count += d[i] == '\n';
  }
  *newlines = count + (i + 1 >= n && n > 0 && d[n - 1] == '\n' ? 1 : 0);
  return i + 1 < n ? i : std::string_view::npos;
}

// The run of whole lines at the front of `s` that go out as they are: each ends in '\n', is at
// most `cap` bytes before it and (cr_ends) holds no '\r' but that of a "\r\n". Returns where the
// run ends (0: none) and adds its lines to *count. One pass for the CRs and the line ends, and a
// look back from every cap + 1 bytes for an over-long line, instead of searches per line.
std::size_t PlainLines(std::string_view s, std::size_t cap, bool cr_ends, std::uint64_t* count) {
  const char* d = s.data();
  const void* last = s.empty() ? nullptr : ::memrchr(d, '\n', s.size());
  if (last == nullptr) return 0;
  std::size_t end = static_cast<const char*>(last) - d + 1;
  std::uint64_t lines = 0;
  bool counted = false;
  if (cr_ends) {
    // The run stops at the line that holds a lone CR (no '\n' between that line's start and the
    // CR: the count to the CR is the count to the line).
    if (const std::size_t cr = FirstLoneCr(s.substr(0, end), &lines);
        cr != std::string_view::npos) {
      const void* nl = cr == 0 ? nullptr : ::memrchr(d, '\n', cr);
      end = nl != nullptr ? static_cast<const char*>(nl) - d + 1 : 0;
    }
    counted = true;
  }
  // ... and at the first line over `cap`: a line that starts at `at` and is at most `cap` bytes
  // ends within the cap + 1 bytes from `at`, and so does every line after it up to the last '\n'
  // in them.
  for (std::size_t at = 0; at < end;) {
    const void* nl = ::memrchr(d + at, '\n', std::min(cap + 1, end - at));
    if (nl == nullptr) {
      end = at;
      counted = false;
      break;
    }
    at = static_cast<const char*>(nl) - d + 1;
  }
  *count += counted ? lines : CountByte(s.substr(0, end), '\n');
  return end;
}

}  // namespace

void LineAssembler::Feed(std::string_view bytes) {
  if (options_.long_line == LongLine::kPieces) {
    FeedPieces(bytes);
  } else {
    FeedCut(bytes);
  }
}

// Whole lines go out in one piece straight from `bytes`; only the unterminated tail of a feed is
// copied (to partial_), and partial_ never holds max_line bytes without handing them over.
void LineAssembler::FeedPieces(std::string_view data) {
  const std::size_t cap = options_.max_line;
  if (!partial_.empty()) {  // finish the pending line first
    const std::size_t nl = data.find('\n');
    const std::size_t take = nl == std::string_view::npos ? data.size() : nl + 1;
    partial_.append(data.substr(0, take));
    data.remove_prefix(take);
    // The pending piece and this feed's part of the line may together pass the cap: cut the
    // pieces off first.
    while (partial_.size() > cap || (partial_.size() == cap && partial_.back() != '\n')) {
      on_text_(std::string_view(partial_).substr(0, cap));
      partial_.erase(0, cap);
    }
    if (nl != std::string_view::npos) {
      on_text_(partial_);
      partial_.clear();
    }
  }
  if (partial_.empty()) {  // `data` starts at a line start
    const void* last = data.empty() ? nullptr : ::memrchr(data.data(), '\n', data.size());
    if (last != nullptr) {
      const std::size_t whole = static_cast<const char*>(last) - data.data() + 1;
      on_text_(data.substr(0, whole));
      data.remove_prefix(whole);
    }
    partial_.append(data);
  }
  while (partial_.size() >= cap) {
    on_text_(std::string_view(partial_).substr(0, cap));
    partial_.erase(0, cap);
  }
}

// Removes the line end at the front of `bytes` (CRLF as one); a CR that ends the chunk may be
// half of a CRLF: the '\n' that may start the next chunk is then dropped (pending_cr_).
void LineAssembler::DropEol(std::string_view* bytes) {
  const bool cr = bytes->front() == '\r';
  bytes->remove_prefix(1);
  if (!cr) return;
  if (bytes->empty()) {
    pending_cr_ = true;
  } else if (bytes->front() == '\n') {
    bytes->remove_prefix(1);
  }
}

void LineAssembler::FeedCut(std::string_view bytes) {
  const std::size_t cap = options_.max_line;
  const bool cr_ends = options_.cr_ends_line;
  if (pending_cr_ && !bytes.empty()) {
    pending_cr_ = false;
    if (bytes.front() == '\n') bytes.remove_prefix(1);
  }
  while (!bytes.empty()) {
    if (skipping_) {
      // The dropped rest of an over-long line runs to its line end, CR included: the cap is per
      // line, so what follows a progress bar's CR is a line of its own.
      const std::size_t e = FindEol(bytes, cr_ends);
      if (e == std::string_view::npos) return;
      skipping_ = false;
      bytes.remove_prefix(e);
      DropEol(&bytes);
      continue;
    }
    if (partial_.empty()) {
      // The common case: a run of whole '\n' lines with no lone CR in them, handed over as is.
      std::uint64_t count = 0;
      if (const std::size_t p = PlainLines(bytes, cap, cr_ends, &count); p > 0) {
        lines_ += count;
        on_text_(bytes.substr(0, p));
        bytes.remove_prefix(p);
        continue;
      }
    }
    const std::size_t e = FindEol(bytes, cr_ends);
    const std::size_t take = e == std::string_view::npos ? bytes.size() : e;
    if (partial_.size() + take > cap) {
      // An over-long line: its first max_line bytes stand for it, the rest is dropped.
      const std::size_t keep = cap - partial_.size();
      partial_.append(bytes.data(), keep);
      EndLine(/*cut=*/true);
      skipping_ = true;
      bytes.remove_prefix(keep);
    } else {
      partial_.append(bytes.data(), take);
      bytes.remove_prefix(take);
      if (e == std::string_view::npos) return;
      DropEol(&bytes);
      EndLine(/*cut=*/false);
    }
  }
}

void LineAssembler::EndLine(bool cut) {
  // A line end "\r\n" split across two feeds.
  if (options_.cr_ends_line && !partial_.empty() && partial_.back() == '\r') partial_.pop_back();
  partial_.push_back('\n');
  ++lines_;
  if (cut) ++cut_lines_;
  on_text_(partial_);
  partial_.clear();
}

void LineAssembler::Finish() {
  if (options_.long_line == LongLine::kPieces) {
    if (!partial_.empty()) on_text_(partial_);
    partial_.clear();
    return;
  }
  if (!partial_.empty()) EndLine(/*cut=*/false);
  skipping_ = false;
  pending_cr_ = false;
}

}  // namespace sl
