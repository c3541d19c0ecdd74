#pragma once
// The catalog of finding codes, as DCGM does: every condition a check can report has a stable
// code "<check id>/<condition>" (os.memlock/soft_below_min), its outcome, a message template and
// a next step, so operators can key alerts on the code instead of on message text. Each check
// keeps the rows of its own conditions in its file (its CheckInfo points at them); this header
// joins them into one catalog.
#include <span>
#include <string>
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

/// The general next step of a condition whose source file could not be read or parsed.
inline constexpr std::string_view kFixReadSource =
    "read the file named in the message on the node (permissions, mounts, driver); the finding's "
    "next_step has the details";
/// The general next step of a condition whose fix depends on the node: the finding's has it.
inline constexpr std::string_view kFixInFinding = "see the finding's next_step";

/// Every code: the checks' in registry order, then the runner's own.
std::span<const FindingCode> FindingCodes();
/// The row of `code`, nullptr when it is not catalogued.
const FindingCode* FindFindingCode(std::string_view code);
/// `preflight --list --codes`: one line per code (code, outcome, message) and its next step.
std::string CodesText();

}  // namespace sl::preflight
