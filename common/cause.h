#pragma once
// The cause vocabulary: the one table of root-cause categories every part names (the diagnosis
// engine, preflight finding codes, warm-up comparisons, Flight Recorder causes, the fitted
// model). doc/causes.md is its text for people; a unit test keeps the two the same.
#include <span>
#include <string_view>

namespace sl {

/// One root cause a person can fix.
struct CauseInfo {
  std::string_view name;     ///< "gid_index"
  std::string_view meaning;  ///< what is wrong, one sentence
  std::string_view fix;      ///< what to change
  std::string_view decide;   ///< what tells it apart from the causes it is confused with
};

/// Every category, in the vocabulary's order (most specific first). `unknown` is not one: it is
/// the answer when the evidence names none.
std::span<const CauseInfo> Causes();

/// nullptr when `name` is not a cause (a symptom such as collective_timeout, or "unknown").
const CauseInfo* FindCause(std::string_view name);

/// The position of `name` in Causes(), Causes().size() when it is not a cause.
std::size_t CauseIndex(std::string_view name);

}  // namespace sl
