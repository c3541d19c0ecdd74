#pragma once
// A literal prefilter derived from a catalog row's regex: the text every match starts with. The
// row's regex is then tried only where that text occurs, anchored there, instead of from every
// byte of the line (libstdc++ sets its executor up again at each start position: on a 100-byte
// line that was most of diagnose's CPU). Derived from any row's pattern, so new rows need
// nothing; a pattern without a sure literal is searched in full as before.
#include <regex>
#include <string>
#include <string_view>

namespace sl::diagnose {

/// The literal text every match of the ECMAScript `pattern` starts with, "" when there is none
/// to be sure of (a top-level alternation, a class or group first). "Channel (\\d+)" -> "Channel ",
/// "NET/IB ?:" -> "NET/IB", "\\[Rank" -> "[Rank".
std::string RegexLeadingLiteral(std::string_view pattern);

/// Whether every match of `pattern` starts at the line's first byte: it begins with '^' and has no
/// alternation at the top level. Such a regex is tried once, at the start, not from every byte.
bool RegexAnchoredAtStart(std::string_view pattern);

/// regex_search of `re` over `line`, tried only from the occurrences of `lead` (the pattern's
/// RegexLeadingLiteral; "" = every position): the same result and groups as a full search.
bool SearchFromLead(std::string_view line, std::string_view lead, const std::regex& re,
                    std::match_results<std::string_view::const_iterator>* mr);

}  // namespace sl::diagnose
