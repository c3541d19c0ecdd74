#pragma once
// The one place a byte stream is cut into lines: the supervisor's pump (job output, forwarded
// byte-exact, handed to the hang scanner in whole lines) and `diagnose`'s log reader (lines
// cleaned afterwards, over-long ones cut) both feed it. Whole lines are handed over straight
// from the bytes fed whenever no partial line is pending: only a line split across two Feed
// calls is copied, so a 1 MiB read of healthy output costs one scan for '\n' and no copy.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace sl {

class LineAssembler {
 public:
  /// What happens to a line longer than max_line.
  enum class LongLine {
    /// Handed over in pieces of max_line bytes without '\n' (the rest follows, the last piece
    /// ends in '\n'). Lines that arrive whole in one Feed are handed over whole at any length:
    /// only what has to be buffered is capped.
    kPieces,
    /// Its first max_line bytes stand for it (handed over with a '\n'), the rest is dropped and
    /// counted in cut_lines().
    kCut,
  };
  struct Options {
    std::size_t max_line = 64 * 1024;
    LongLine long_line = LongLine::kPieces;
    /// kCut mode: a lone '\r' ends a line too (progress bars: a terminal shows what follows it
    /// on a fresh line), and "\r\n" is one line end. Off: only '\n' ends a line.
    bool cr_ends_line = false;
  };
  /// Called with text that ends at a line end ('\n'; "\r\n" passes as is), or with a piece of an
  /// over-long line (kPieces), or with the unterminated last line at Finish(). With
  /// cr_ends_line, a line that ended in a lone '\r' is handed over with '\n' instead of it.
  using TextFn = std::function<void(std::string_view text)>;

  LineAssembler(Options options, TextFn on_text)
      : options_(options), on_text_(std::move(on_text)) {}
  /// Takes the next bytes of the stream.
  void Feed(std::string_view bytes);
  /// Ends the stream: a pending partial line is handed over (without '\n' in kPieces mode, with
  /// one in kCut mode, where every line handed over ends in '\n').
  void Finish();
  /// Line ends handed over so far (kCut mode; kPieces does not count, to keep its one scan).
  std::uint64_t lines() const { return lines_; }
  /// Lines cut at max_line (kCut mode).
  std::uint64_t cut_lines() const { return cut_lines_; }

 private:
  void FeedPieces(std::string_view bytes);
  void FeedCut(std::string_view bytes);
  void DropEol(std::string_view* bytes);
  void EndLine(bool cut);

  Options options_;
  TextFn on_text_;
  std::string partial_;      // the current line's bytes so far
  bool skipping_ = false;    // kCut: inside the dropped rest of an over-long line
  bool pending_cr_ = false;  // the last chunk ended in CR: a '\n' next is its CRLF's
  std::uint64_t lines_ = 0;
  std::uint64_t cut_lines_ = 0;
};

}  // namespace sl
