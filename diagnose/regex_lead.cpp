#include "diagnose/regex_lead.h"

namespace sl::diagnose {

namespace {

// An alternation at the top level ("a|b") lets a match start at either branch.
bool TopLevelAlternation(std::string_view pattern) {
  int depth = 0;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (c == '|' && depth == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool RegexAnchoredAtStart(std::string_view pattern) {
  return !pattern.empty() && pattern.front() == '^' && !TopLevelAlternation(pattern);
}

std::string RegexLeadingLiteral(std::string_view pattern) {
  if (TopLevelAlternation(pattern)) return "";
  static constexpr std::string_view kMeta = "\\^$.|?*+()[]{}";
  static constexpr std::string_view kEscapedLiteral = "\\^$.|?*+()[]{}/-:=!,<> \"'#%&~@";
  std::string lead;
  std::size_t i = 0;
  while (i < pattern.size()) {
    const char c = pattern[i];
    std::size_t width = 1;
    char literal = c;
    if (c == '\\') {
      // "\[" is a literal '['; "\d", "\s", "\b" and the like are classes or assertions.
      if (i + 1 >= pattern.size() || kEscapedLiteral.find(pattern[i + 1]) == std::string::npos) {
        break;
      }
      literal = pattern[i + 1];
      width = 2;
    } else if (kMeta.find(c) != std::string::npos) {
      break;
    }
    // A quantifier after this character makes it optional or repeated: the literal ends before.
    const std::size_t next = i + width;
    if (next < pattern.size() &&
        std::string_view("?*+{").find(pattern[next]) != std::string::npos) {
      break;
    }
    lead.push_back(literal);
    i = next;
  }
  return lead;
}

// A match starts at an occurrence of `lead`, so each occurrence in order is tried anchored
// (match_prev_avail keeps \b and ^ seeing the byte before), and the first that matches is the
// leftmost match a full search finds.
bool SearchFromLead(std::string_view line, std::string_view lead, const std::regex& re,
                    std::match_results<std::string_view::const_iterator>* mr) {
  if (lead.empty()) return std::regex_search(line.begin(), line.end(), *mr, re);
  for (std::size_t at = line.find(lead); at != std::string_view::npos;
       at = line.find(lead, at + 1)) {
    auto flags = std::regex_constants::match_continuous;
    if (at > 0) flags |= std::regex_constants::match_prev_avail;
    if (std::regex_search(line.begin() + static_cast<std::ptrdiff_t>(at), line.end(), *mr, re,
                          flags)) {
      return true;
    }
  }
  return false;
}

}  // namespace sl::diagnose
