#include "common/strings.h"

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

}  // namespace sl
