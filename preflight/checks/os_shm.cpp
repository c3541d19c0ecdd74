// PLACEHOLDER: replaced by the real check (issue 2). Reports "error" so it can never pass.
#include "preflight/check.h"

namespace sl::preflight {

std::vector<Finding> CheckOsShm(const CheckContext& ctx) {
  Finding f;
  f.check_id = "os_shm";
  f.entity = "node";
  f.outcome = Outcome::kError;
  f.message = "check not implemented yet";
  return {f};
}

}  // namespace sl::preflight
