#include "common/strings.h"

#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace sl {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view part = s.substr(start, end - start);
    if (!skip_empty || !part.empty()) out.emplace_back(part);
    start = end + 1;
  }
  return out;
}

std::vector<std::string> SplitLines(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view line = s.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(line);
    start = end + 1;
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {
Error NotANumber(std::string_view s, std::string_view what, std::string_view kind) {
  std::string msg =
      "expected " + std::string(kind) + ", got '" + std::string(s.substr(0, 64)) + "'";
  return MakeError(msg, std::string(what));
}
}  // namespace

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

Result<std::int64_t> ParseInt(std::string_view s, std::string_view what) {
  s = Trim(s);
  std::int64_t v = 0;
  int base = 10;
  std::string_view digits = s;
  bool neg = false;
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
    neg = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (StartsWith(digits, "0x") || StartsWith(digits, "0X")) {
    base = 16;
    digits.remove_prefix(2);
  }
  if (digits.empty()) return NotANumber(s, what, "an integer");
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec != std::errc() || p != digits.data() + digits.size()) {
    return NotANumber(s, what, "an integer");
  }
  return neg ? -v : v;
}

Result<std::uint64_t> ParseUint(std::string_view s, std::string_view what) {
  s = Trim(s);
  std::uint64_t v = 0;
  int base = 10;
  std::string_view digits = s;
  if (StartsWith(digits, "0x") || StartsWith(digits, "0X")) {
    base = 16;
    digits.remove_prefix(2);
  }
  if (digits.empty()) return NotANumber(s, what, "a non-negative integer");
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec != std::errc() || p != digits.data() + digits.size()) {
    return NotANumber(s, what, "a non-negative integer");
  }
  return v;
}

Result<double> ParseDouble(std::string_view s, std::string_view what) {
  s = Trim(s);
  if (s.empty() || s.size() > 64) return NotANumber(s, what, "a number");
  std::string copy(s);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return NotANumber(s, what, "a number");
  return v;
}

namespace {
std::string_view WithoutTrailingSlashes(std::string_view p) {
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  return p;
}
}  // namespace

std::string PathParent(std::string_view path) {
  const std::string_view p = WithoutTrailingSlashes(path);
  const std::size_t slash = p.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? "/" : std::string(p.substr(0, slash));
}

std::string PathLeaf(std::string_view path) {
  const std::string_view p = WithoutTrailingSlashes(path);
  const std::size_t slash = p.rfind('/');
  return std::string(slash == std::string_view::npos || p.size() == 1 ? p : p.substr(slash + 1));
}

std::string HumanBytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<std::uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::size_t d = EditDistance(ToLower(word), ToLower(c));
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

#if defined(__x86_64__)
namespace {

// CountByte's loop on 32 bytes a step, in two chains of byte counters (the subtract of one step
// waits for the last; two overlap), folded with SAD every 255 steps. Returns the count of the
// first *done bytes (a multiple of 64) and sets *done.
__attribute__((target("avx2"))) std::size_t CountByteAvx2(const char* p, std::size_t n, char c,
                                                          std::size_t* done) {
  const __m256i needle = _mm256_set1_epi8(c);
  std::size_t count = 0, i = 0;
  while (i + 64 <= n) {
    __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
    const std::size_t stop = std::min(n - n % 64, i + 64 * 255);
    for (; i < stop; i += 64) {
      const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32));
      a = _mm256_sub_epi8(a, _mm256_cmpeq_epi8(u, needle));
      b = _mm256_sub_epi8(b, _mm256_cmpeq_epi8(v, needle));
    }
    const __m256i sum = _mm256_add_epi64(_mm256_sad_epu8(a, _mm256_setzero_si256()),
                                         _mm256_sad_epu8(b, _mm256_setzero_si256()));
    const __m128i half =
        _mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    count += static_cast<std::size_t>(_mm_cvtsi128_si64(half)) +
             static_cast<std::size_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(half, half)));
  }
  *done = i;
  return count;
}

}  // namespace
#endif

// The supervisor counts every line of the job's output (the hang scanner's line numbers): with
// AVX2 (checked once, at run time) 64 bytes a step, else 16 (SSE2) or 8.
std::size_t CountByte(std::string_view s, char c) {
  const char* p = s.data();
  const std::size_t n = s.size();
  std::size_t count = 0, i = 0;
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && n >= 64) count = CountByteAvx2(p, n, c, &i);
#endif
#if defined(__SSE2__)
  // Per 16-byte step: compare, subtract the 0xff matches from byte counters; fold the counters
  // with SAD before any of them can reach 256.
  const __m128i needle = _mm_set1_epi8(c);
  while (i + 16 <= n) {
    __m128i acc = _mm_setzero_si128();
    const std::size_t stop = std::min(n - n % 16, i + 16 * 255);
    for (; i < stop; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, needle));
    }
    __m128i sum = _mm_sad_epu8(acc, _mm_setzero_si128());
    count += static_cast<std::size_t>(_mm_cvtsi128_si64(sum)) +
             static_cast<std::size_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum)));
  }
#else
  // 8 bytes at a time: a byte lane holds 1 where the byte equals `c` (the classic has-zero-byte
  // trick on w ^ c), summed per lane for up to 255 words, then across lanes by a multiply.
  const std::uint64_t ones = 0x0101010101010101ull;
  const std::uint64_t pattern = ones * static_cast<std::uint8_t>(c);
  const std::uint64_t low7 = 0x7f7f7f7f7f7f7f7full;
  while (i + 8 <= n) {
    std::uint64_t acc = 0;
    const std::size_t stop = std::min(n - n % 8, i + 8 * 255);
    for (; i < stop; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      const std::uint64_t x = w ^ pattern;
      acc += (~(((x & low7) + low7) | x | low7)) >> 7;
    }
    count += static_cast<std::size_t>((acc * ones) >> 56);
  }
#endif
  for (; i < n; ++i) count += p[i] == c ? 1 : 0;
  return count;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string Printable(std::string_view s, std::size_t max) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out.push_back(' ');
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    }
  }
  return out;
}

}  // namespace sl
