#include "launcher/hostlist.h"

#include <algorithm>
#include <cstdint>

#include "common/strings.h"

namespace sl::launcher {
namespace {

// A job of more hosts than this is a typo (a range like [1-1000000]), not a cluster.
constexpr std::size_t kMaxHosts = 65536;

// Expands the inside of one bracket group, "01-04,07", into its numbers as text.
Result<std::vector<std::string>> ExpandRanges(std::string_view ranges, std::string_view item) {
  std::vector<std::string> out;
  for (const auto& part : Split(ranges, ',', /*skip_empty=*/false)) {
    std::string_view p = Trim(part);
    auto bad = [&](const std::string& why) {
      return MakeError(
          "bad range '" + std::string(p) + "' in hostlist item '" + std::string(item) + "': " + why,
          "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
    };
    if (p.empty()) return bad("empty range");
    auto dash = p.find('-');
    std::string lo_text(p.substr(0, dash));
    std::string hi_text(dash == std::string_view::npos ? lo_text : std::string(p.substr(dash + 1)));
    for (const std::string& t : {lo_text, hi_text}) {
      if (t.empty() ||
          !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return bad("'" + t + "' is not a number");
      if (t.size() > 18) return bad("number too long");
    }
    std::uint64_t lo = std::stoull(lo_text), hi = std::stoull(hi_text);
    if (lo > hi) return bad("start is above end");
    if (hi - lo + 1 > kMaxHosts || out.size() + (hi - lo + 1) > kMaxHosts)
      return bad("more than " + std::to_string(kMaxHosts) + " hosts");
    // Slurm pads every number to the width of the range's first bound ("01-10" -> 01..10).
    std::size_t width = lo_text.size();
    for (std::uint64_t n = lo; n <= hi; ++n) {
      std::string s = std::to_string(n);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      out.push_back(std::move(s));
    }
  }
  return out;
}

// Expands one comma-free (at top level) item such as "a[1-2]-ib[3,5]".
Result<std::vector<std::string>> ExpandItem(std::string_view item) {
  std::vector<std::string> names{""};
  std::size_t i = 0;
  while (i < item.size()) {
    if (item[i] == '[') {
      auto close = item.find(']', i);
      if (close == std::string_view::npos)
        return MakeError("unclosed '[' in hostlist item '" + std::string(item) + "'",
                         "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
      auto numbers = ExpandRanges(item.substr(i + 1, close - i - 1), item);
      if (!numbers.ok()) return numbers.error();
      if (names.size() * numbers->size() > kMaxHosts)
        return MakeError("hostlist item '" + std::string(item) + "' expands to more than " +
                             std::to_string(kMaxHosts) + " hosts",
                         "SLURM_JOB_NODELIST");
      std::vector<std::string> next;
      for (const auto& prefix : names)
        for (const auto& n : *numbers) next.push_back(prefix + n);
      names = std::move(next);
      i = close + 1;
    } else if (item[i] == ']') {
      return MakeError("unmatched ']' in hostlist item '" + std::string(item) + "'",
                       "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
    } else {
      auto next = item.find_first_of("[]", i);
      if (next == std::string_view::npos) next = item.size();
      for (auto& n : names) n += std::string(item.substr(i, next - i));
      i = next;
    }
  }
  return names;
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist) {
  std::vector<std::string> hosts;
  std::string_view s = Trim(hostlist);
  if (s.empty()) return MakeError("empty hostlist", "SLURM_JOB_NODELIST");
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == '[') ++depth;
    if (i < s.size() && s[i] == ']') --depth;
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      std::string_view item = Trim(s.substr(start, i - start));
      if (item.empty())
        return MakeError("empty item in hostlist '" + std::string(s) + "'", "SLURM_JOB_NODELIST",
                         "remove the doubled or trailing comma");
      auto names = ExpandItem(item);
      if (!names.ok()) return names.error();
      if (hosts.size() + names->size() > kMaxHosts)
        return MakeError("hostlist expands to more than " + std::to_string(kMaxHosts) + " hosts",
                         "SLURM_JOB_NODELIST");
      hosts.insert(hosts.end(), names->begin(), names->end());
      start = i + 1;
    }
  }
  if (depth != 0)
    return MakeError("unbalanced brackets in hostlist '" + std::string(s) + "'",
                     "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
  return hosts;
}

}  // namespace sl::launcher
