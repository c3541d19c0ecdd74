#pragma once
// `safe-launch watch`: the snapshot as lines of text, each with a style the screen maps to
// colours (or to nothing: NO_COLOR, a dumb terminal, --once). Pure, so the plain snapshot and
// the live screen show the same thing and tests read it as text.
#include <string>
#include <string_view>
#include <vector>

#include "watchdog/watch/snapshot.h"

namespace sl::watch {

enum class Style { kNormal, kHeader, kTitle, kBad, kStale, kGood, kDim };

struct Line {
  std::string text;
  Style style = Style::kNormal;
};

/// The header (job state, nodes, slowest, stalest, events, diagnosis, problems), the column
/// titles and one line per row (worst first) whose name contains `filter` (all when empty).
/// Lines are cut to `width` columns (0 = no limit). A stale or failed row starts with '!'.
/// Only the shown rows `first` .. `first + max_rows` (counted after the filter) are formatted:
/// a screen of 50 lines over 1024 nodes formats 50.
std::vector<Line> RenderSnapshot(const Snapshot& snapshot, std::size_t width,
                                 std::string_view filter = {}, std::size_t first = 0,
                                 std::size_t max_rows = static_cast<std::size_t>(-1));

/// One row's detail (Enter): its last output lines (`tail`), bundle summary and problems.
std::vector<Line> RenderDetail(const Row& row, const std::vector<std::string>& tail,
                               std::size_t width);

/// The lines as plain text, one per line.
std::string PlainText(const std::vector<Line>& lines);

/// Whether `row` is shown under `filter` (a substring of its name, phase or verdict).
bool RowMatches(const Row& row, std::string_view filter);

}  // namespace sl::watch
