#include "watchdog/watch/render.h"

#include <fmt/format.h>

#include <ctime>

namespace sl::watch {
namespace {

std::string Cut(std::string s, std::size_t width) {
  if (width && s.size() > width) s.resize(width);
  return s;
}

std::string UtcClock(double t_unix) {
  std::time_t t = static_cast<std::time_t>(t_unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%SZ", &tm);
  return buf;
}

Style RowStyle(const Row& r) {
  if (r.badness >= 5) return Style::kBad;
  if (r.stale || r.badness >= 3) return Style::kStale;
  if (r.phase == Phase::kEnded && r.exit_status && *r.exit_status == 0) return Style::kGood;
  return Style::kNormal;
}

std::string RowText(const Row& r) {
  const char mark = r.badness >= 5 ? '!' : r.stale ? '!' : r.badness >= 3 ? '?' : ' ';
  std::string verdict = r.verdict;
  if (!r.problems.empty()) {
    verdict = (verdict.empty() ? "" : verdict + "; ") + r.problems.front();
    if (r.problems.size() > 1) verdict += fmt::format(" (+{} more)", r.problems.size() - 1);
  }
  if (r.posted_hang) verdict = "posted hang; " + verdict;
  std::string event = r.last_event.empty() ? "-" : r.last_event;
  if (event.size() > 30) event = event.substr(0, 27) + "...";
  return fmt::format("{} {:<16} {:<9} {:>8} {:>7} {:>9}  {:<30} {:>4}  {}", mark, r.name,
                     PhaseName(r.phase), FormatAge(r.in_phase_s), FormatAge(r.output_age_s),
                     FormatAge(r.heartbeat_age_s), event,
                     r.exit_status ? std::to_string(*r.exit_status) : "-", verdict);
}

void Header(const Snapshot& s, std::size_t width, std::vector<Line>* out) {
  std::string head = fmt::format("job {}  {}  nodes {}", s.root, s.state, s.nodes);
  if (!s.slowest.empty()) head += "  slowest " + s.slowest;
  if (!s.stalest.empty()) head += "  stalest " + s.stalest;
  const bool bad = s.state == "hang" || s.state == "failed" || s.state == "unreadable";
  out->push_back({Cut(head, width), bad ? Style::kBad : Style::kTitle});
  for (const auto& e : s.events) {
    out->push_back({Cut(fmt::format("{} on {} at {} ({}) {}", e.kind, e.node, UtcClock(e.time_unix),
                                    e.trigger, e.headline),
                        width),
                    Style::kBad});
  }
  if (!s.diagnosis.empty()) out->push_back({Cut("diagnosis: " + s.diagnosis, width), Style::kBad});
  for (const auto& p : s.problems) out->push_back({Cut("problem: " + p, width), Style::kStale});
}

}  // namespace

bool RowMatches(const Row& r, std::string_view filter) {
  if (filter.empty()) return true;
  return r.name.find(filter) != std::string::npos ||
         std::string_view(PhaseName(r.phase)).find(filter) != std::string_view::npos ||
         r.verdict.find(filter) != std::string::npos;
}

std::vector<Line> RenderSnapshot(const Snapshot& s, std::size_t width, std::string_view filter,
                                 std::size_t first, std::size_t max_rows) {
  std::vector<Line> out;
  Header(s, width, &out);
  out.push_back(
      {Cut(fmt::format("  {:<16} {:<9} {:>8} {:>7} {:>9}  {:<30} {:>4}  {}", "NODE", "PHASE",
                       "IN PHASE", "OUTPUT", "HEARTBEAT", "LAST EVENT", "EXIT", "VERDICT"),
           width),
       Style::kHeader});
  std::size_t hidden = 0, shown = 0;
  for (const auto& r : s.rows) {
    if (!RowMatches(r, filter)) {
      ++hidden;
      continue;
    }
    if (shown >= first && shown - first < max_rows)
      out.push_back({Cut(RowText(r), width), RowStyle(r)});
    ++shown;
  }
  if (!filter.empty()) {
    out.push_back({fmt::format("filter '{}': {} row(s) hidden", filter, hidden), Style::kDim});
  }
  return out;
}

std::vector<Line> RenderDetail(const Row& r, const std::vector<std::string>& tail,
                               std::size_t width) {
  std::vector<Line> out;
  out.push_back({Cut(fmt::format("{}  {} for {}  exit {}  {}", r.name, PhaseName(r.phase),
                                 FormatAge(r.in_phase_s),
                                 r.exit_status ? std::to_string(*r.exit_status) : "-", r.verdict),
                     width),
                 Style::kTitle});
  for (const auto& p : r.problems) out.push_back({Cut("problem: " + p, width), Style::kStale});
  out.push_back({"bundle: " + (r.bundle.empty() ? std::string("none") : r.bundle), Style::kHeader});
  std::string summary = r.bundle_summary;
  for (std::size_t at = 0; !summary.empty() && at != std::string::npos;) {
    const std::size_t nl = summary.find('\n', at);
    out.push_back({Cut("  " + summary.substr(at, nl == std::string::npos ? nl : nl - at), width)});
    at = nl == std::string::npos ? nl : nl + 1;
  }
  out.push_back({fmt::format("last output lines ({}):", tail.size()), Style::kHeader});
  for (const auto& l : tail) out.push_back({Cut("  " + l, width)});
  return out;
}

std::string PlainText(const std::vector<Line>& lines) {
  std::string text;
  for (const auto& l : lines) text += l.text + "\n";
  return text;
}

}  // namespace sl::watch
