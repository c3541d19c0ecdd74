#pragma once
// The result model shared by preflight, warm-up and diagnose: one Finding per decided thing.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sl {

/// pass/warn/fail are decisions about the node; skip = not applicable here;
/// error = could not decide (unreadable file, garbage value) -- never confused with pass.
enum class Outcome { kPass, kWarn, kFail, kSkip, kError };

std::string_view OutcomeName(Outcome o);
/// Parses "pass", "warn", ...; returns false on an unknown name.
bool ParseOutcome(std::string_view name, Outcome* out);
/// Ordering for "worst of": pass < skip < warn < error < fail.
int Severity(Outcome o);

struct Evidence {
  std::string source;  ///< file path (as on the node, e.g.
                       ///< /sys/class/infiniband/mlx5_0/ports/1/state) or variable
  std::string value;   ///< the raw value read, trimmed
};

struct Finding {
  std::string check_id{};  ///< stable id such as "ib.port.state"
  std::string entity{};    ///< "mlx5_0:1", "node", "NCCL_IB_HCA", "gpu0", host name ...
  Outcome outcome = Outcome::kPass;
  std::string message{};    ///< what was decided, one line
  std::string next_step{};  ///< the fix; empty for pass/skip
  std::vector<Evidence> evidence{};
  bool waived = false;  ///< set by the runner when the user or a recipe waived this check
  /// Stable condition code "<check id>/<condition>" from the catalog
  /// (preflight/finding_codes.cpp), e.g. "os.memlock/soft_below_min". Last, so aggregate
  /// initialisers written before it existed keep their meaning.
  std::string code{};

  Finding& With(std::string source, std::string value) {
    evidence.push_back({std::move(source), std::move(value)});
    return *this;
  }
};

/// `f` with its condition code set (for building a finding in one expression).
inline Finding Coded(Finding f, std::string code) {
  f.code = std::move(code);
  return f;
}

/// A finding without evidence yet; add evidence with With().
Finding MakeFinding(std::string check_id, std::string entity, Outcome outcome, std::string message,
                    std::string next_step = {});

void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);

/// Worst outcome over a set of findings, ignoring waived ones; kPass for an empty set.
Outcome Worst(const std::vector<Finding>& findings);

/// Whether a --only/--waive pattern selects a check or comparison id: the id itself, or a group
/// prefix ("ib" or "ib." selects "ib.port.state").
bool IdSelects(std::string_view pattern, std::string_view id);

}  // namespace sl
