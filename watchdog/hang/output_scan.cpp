#include "watchdog/hang/output_scan.h"

#include <algorithm>

namespace sl::hang {
namespace {

// Bytes kept on each side of a cut inside a long line: every catalog signature's match is a few
// hundred bytes, so one that straddles a cut lies within this much of it.
constexpr std::size_t kSeamBytes = 4096;

}  // namespace

void OutputScanner::Feed(int stream, std::string_view lines, watchdog::Clock::time_point t) {
  // Feed is ordered per stream, so a plain load/store of the counter is enough.
  const int s = Index(stream);
  auto& counter = lines_[s];
  std::string& seam = seam_tail_[s];
  std::uint64_t base = counter.load(std::memory_order_relaxed);
  if (!seam.empty()) {
    // This block's first line is the one the last piece ended inside: same line number.
    std::string_view head = lines.substr(0, std::min(lines.size(), kSeamBytes));
    head = head.substr(0, std::min(head.size(), head.find('\n')));
    ScanSeam(stream, seam, head, base, t);
    --base;
  }
  // The block's last line is open when the block ends inside it: a match there that the rest of
  // the line may complete is left to the seam scan of the next block (one record, the fuller).
  const bool open_end = !lines.empty() && lines.back() != '\n';
  const char* block_end = lines.data() + lines.size();
  const std::size_t n = matcher_.ScanBlock(lines, [&](std::string_view line, std::size_t index) {
    auto m = matcher_.MatchLine(line);
    if (!m) return;
    // The line that ends where an open block ends is its open line.
    if (open_end && line.data() + line.size() == block_end &&
        diagnose::MayBeCompletedByLaterText(*m->signature)) {
      return;
    }
    on_match_(stream, std::move(*m), base + index + 1, t);
  });
  counter.store(base + n, std::memory_order_relaxed);
  if (lines.empty() || lines.back() == '\n') {
    seam.clear();
    return;
  }
  // The block ends inside a line (a piece): keep that line's last bytes for the next block. A
  // block without '\n' continues the line the seam already holds.
  const std::size_t nl = lines.rfind('\n');
  if (nl != std::string_view::npos) seam.clear();
  std::string_view open_line = nl == std::string_view::npos ? lines : lines.substr(nl + 1);
  if (open_line.size() > kSeamBytes) open_line.remove_prefix(open_line.size() - kSeamBytes);
  seam.append(open_line);
  if (seam.size() > kSeamBytes) seam.erase(0, seam.size() - kSeamBytes);
}

void OutputScanner::ScanSeam(int stream, std::string_view tail, std::string_view head,
                             std::uint64_t line_no, watchdog::Clock::time_point t) {
  std::string window;
  window.reserve(tail.size() + head.size());
  window.append(tail).append(head);
  auto m = matcher_.MatchLine(window);
  if (!m) return;
  // A match wholly on one side was (or is about to be) found in its own block; the tail's
  // matches that later text may complete were held back (Feed) and stand here when nothing
  // completed them.
  for (std::string_view side : {tail, head}) {
    auto alone = matcher_.MatchLine(side);
    if (!alone || alone->signature != m->signature) continue;
    if (side.data() == tail.data() && diagnose::MayBeCompletedByLaterText(*alone->signature)) {
      continue;
    }
    return;
  }
  on_match_(stream, std::move(*m), line_no, t);
}

}  // namespace sl::hang
