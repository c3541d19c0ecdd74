#include "preflight/finding_codes.h"

#include <fmt/format.h>

#include <vector>

#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The runner's own condition; every other row lives in its check's file.
constexpr FindingCode kRunnerCodes[] = {
    {"preflight/check_crashed", Outcome::kError, Outcome::kError,
     "a check failed unexpectedly (a bug)", kFixReadSource},
};

std::vector<FindingCode> JoinCodes() {
  std::vector<FindingCode> all;
  for (const CheckInfo& check : Registry())
    all.insert(all.end(), check.codes.begin(), check.codes.end());
  all.insert(all.end(), std::begin(kRunnerCodes), std::end(kRunnerCodes));
  return all;
}

}  // namespace

std::span<const FindingCode> FindingCodes() {
  static const std::vector<FindingCode> kAll = JoinCodes();
  return kAll;
}

const FindingCode* FindFindingCode(std::string_view code) {
  for (const FindingCode& c : FindingCodes()) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

std::string CodesText() {
  std::size_t width = 0;
  for (const FindingCode& c : FindingCodes()) width = std::max(width, c.code.size());
  std::string out;
  for (const FindingCode& c : FindingCodes()) {
    std::string outcome(OutcomeName(c.outcome));
    if (c.also != c.outcome) outcome += "/" + std::string(OutcomeName(c.also));
    out += fmt::format("{:<{}}  {:<9}  {}\n", c.code, width, outcome, c.message);
    if (!c.next_step.empty()) out += fmt::format("{:<{}}  next: {}\n", "", width, c.next_step);
  }
  return out;
}

}  // namespace sl::preflight
