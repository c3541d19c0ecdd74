#pragma once
// The job's output as the hang monitor reads it: each block the supervisor's pumps hand over
// (SupervisorHooks::on_output) is scanned against the signature catalog, line by line, and
// every match goes to the monitor with its line number. A line longer than the pump's block
// comes in pieces: the bytes around each cut are scanned too (Feed), for a signature that
// straddles it and so lies wholly in neither piece.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "diagnose/signatures.h"
#include "watchdog/supervisor.h"

namespace sl::hang {

class OutputScanner {
 public:
  /// A match on `stream` (watchdog::kStdout/kStderr) at its 1-based `line_no`, read at `t`.
  using OnMatch = std::function<void(int stream, diagnose::Match match, std::uint64_t line_no,
                                     watchdog::Clock::time_point t)>;
  /// `matcher` must outlive the scanner.
  OutputScanner(const diagnose::LineMatcher& matcher, OnMatch on_match)
      : matcher_(matcher), on_match_(std::move(on_match)) {}

  /// A block of whole lines, or a piece of a long one, of `stream`. Calls for one stream are
  /// ordered (one pump each); the two streams may be fed from two threads at once.
  void Feed(int stream, std::string_view lines, watchdog::Clock::time_point t);

  /// Lines seen so far on `stream` (a line cut in pieces counts once). Any thread.
  std::uint64_t Lines(int stream) const { return lines_[Index(stream)].load(); }

 private:
  static int Index(int stream) { return stream == watchdog::kStderr ? 2 : 1; }
  /// Matches the bytes around the cut between the last piece (`tail`) and the block that
  /// continues it (`head`).
  void ScanSeam(int stream, std::string_view tail, std::string_view head, std::uint64_t line_no,
                watchdog::Clock::time_point t);

  const diagnose::LineMatcher& matcher_;
  OnMatch on_match_;
  std::atomic<std::uint64_t> lines_[3] = {0, 0, 0};  // per stream; Feed is ordered per stream
  // Per stream, touched only by its pump: the last bytes of a block that ended inside a line
  // (a piece of a long line), kept to scan across the cut; empty when the block ended in '\n'.
  std::string seam_tail_[3];
};

}  // namespace sl::hang
