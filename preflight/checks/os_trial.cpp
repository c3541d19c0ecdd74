// os.trial: a scratch check to count the places an addition touches (reverted).
#include "preflight/check.h"

namespace sl::preflight {
namespace {

constexpr FindingCode kCodes[] = {
    {"os.trial/ok", Outcome::kPass, Outcome::kPass, "the trial check passed", ""},
};

std::vector<Finding> CheckOsTrial(const CheckContext& ctx) {
  Finding f;
  f.check_id = "os.trial";
  f.entity = "node";
  f.outcome = Outcome::kPass;
  f.code = "os.trial/ok";
  f.message = "hostname " + ctx.facts.hostname;
  return {f};
}

}  // namespace

extern const CheckInfo kOsTrialCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kOsTrialCheck = {"os.trial", "a trial check", CheckOsTrial, kCodes};

}  // namespace sl::preflight
