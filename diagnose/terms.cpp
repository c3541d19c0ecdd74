#include "diagnose/terms.h"

#include <algorithm>
#include <iterator>

namespace sl::diagnose {
namespace {

constexpr Term kTerms[] = {
// clang-format off
#include "diagnose/catalog/terms.inc"
    // clang-format on
};

}  // namespace

std::span<const Term> Terms() { return kTerms; }

std::vector<std::string_view> TermsIn(std::string_view line) {
  std::vector<std::string_view> out;
  for (const Term& t : kTerms) {
    if (line.find(t.text) == std::string_view::npos) continue;
    if (std::find(out.begin(), out.end(), t.id) == out.end()) out.push_back(t.id);
  }
  return out;
}

}  // namespace sl::diagnose
