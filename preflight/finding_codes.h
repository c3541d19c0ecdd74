#pragma once
// The catalog of finding codes, as DCGM does: every condition a check can report has a stable
// code "<check id>/<condition>" (os.memlock/soft_below_min), its outcome, a message template and
// a next step, so operators can key alerts on the code instead of on message text.
#include <span>
#include <string_view>

#include "common/finding.h"

namespace sl::preflight {

struct FindingCode {
  std::string_view code;       ///< "ib.port.state/no_link_partner"
  Outcome outcome;             ///< what the condition gives
  Outcome also;                ///< a second outcome it may give (== outcome when none)
  std::string_view message;    ///< what the condition means
  std::string_view next_step;  ///< the general fix; the finding's next_step is specific
  bool Allows(Outcome o) const { return o == outcome || o == also; }
};

/// Every code, in registry order.
std::span<const FindingCode> FindingCodes();
/// The row of `code`, nullptr when it is not catalogued.
const FindingCode* FindFindingCode(std::string_view code);

}  // namespace sl::preflight
