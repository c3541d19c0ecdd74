#include "common/line_assembler.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using sl::LineAssembler;

namespace {
// Every hand-over, in order, and whether it pointed into the bytes fed (no copy).
struct Seen {
  std::vector<std::string> texts;
  std::vector<bool> straight;
};
Seen Run(LineAssembler::Options o, const std::vector<std::string>& feeds) {
  Seen seen;
  const std::string* feeding = nullptr;
  LineAssembler a(o, [&](std::string_view t) {
    seen.texts.emplace_back(t);
    seen.straight.push_back(feeding != nullptr && t.data() >= feeding->data() &&
                            t.data() < feeding->data() + feeding->size());
  });
  for (const std::string& f : feeds) {
    feeding = &f;
    a.Feed(f);
  }
  feeding = nullptr;
  a.Finish();
  return seen;
}
LineAssembler::Options Pieces(std::size_t cap) {
  return {cap, LineAssembler::LongLine::kPieces, false};
}
LineAssembler::Options Cut(std::size_t cap) { return {cap, LineAssembler::LongLine::kCut, true}; }
}  // namespace

TEST_CASE("whole lines are handed over in one block straight from the bytes fed, no copy") {
  Seen s = Run(Pieces(64), {"a\nbb\nccc\npart", "ial\nd\n"});
  REQUIRE(s.texts == std::vector<std::string>{"a\nbb\nccc\n", "partial\n", "d\n"});
  CHECK(s.straight == std::vector<bool>{true, false, true});
}

TEST_CASE("pieces mode keeps every byte: CR, NUL and an unterminated last line pass as they are") {
  std::string nul("x\0y\r\n", 5);
  Seen s = Run(Pieces(64), {nul, "tail"});
  std::string all;
  for (const auto& t : s.texts) all += t;
  CHECK(all == nul + "tail");
  CHECK(s.texts.back() == "tail");
}

TEST_CASE("a buffered line longer than the cap goes out in cap-sized pieces without newlines") {
  // Split across feeds: the buffered part is capped; the line's last piece ends in '\n'.
  Seen s = Run(Pieces(4), {"abc", "defghij", "k\nnext\n"});
  REQUIRE(s.texts == std::vector<std::string>{"abcd", "efgh", "ijk\n", "next\n"});
  // Arrived whole in one feed: handed over whole, whatever its length (nothing was buffered).
  Seen whole = Run(Pieces(4), {"abcdefghij\n"});
  CHECK(whole.texts == std::vector<std::string>{"abcdefghij\n"});
}

TEST_CASE("cut mode: CRLF and a lone CR end lines, over-long lines are cut and counted") {
  std::vector<std::string> lines;
  LineAssembler a(Cut(8), [&](std::string_view t) {
    std::size_t start = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '\n') {
        lines.emplace_back(t.substr(start, i - start));
        start = i + 1;
      }
    }
    CHECK(start == t.size());  // every hand-over ends at a line end
  });
  for (std::string f : {"one\r", "\ntwo\rthree\n", "0123456789abcdef", "XYZ\rafter\nlast"})
    a.Feed(f);
  a.Finish();
  // "one\r\n" is one line end even split across feeds; the 19-byte line keeps its first 8.
  CHECK(lines == std::vector<std::string>{"one", "two", "three", "01234567", "after", "last"});
  CHECK(a.lines() == 6);
  CHECK(a.cut_lines() == 1);
}
