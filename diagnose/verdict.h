#pragma once
// From recognised lines to a verdict: which category, which evidence, which ranks/hosts, which
// collective. Pure: fed with Match values (live from the supervisor, or offline from files) and
// rendered as summary.json / summary.md. The verdict is the highest-priority match, so a root
// cause (an IB retry-exceeded completion) beats its consequence (the watchdog timeout).
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/evidence.h"
#include "diagnose/signatures.h"

namespace sl::diagnose {

/// What started the capture.
/// kPeerHang: another node of the job declared a hang and this one captured on its notice.
enum class Trigger { kNone, kSignature, kStall, kHeartbeat, kJobFailed, kPeerHang };
std::string_view TriggerName(Trigger t);

struct Verdict {
  std::string category = "unknown";  ///< from the catalog, or "stall" / "job_failed"
  std::string signature;             ///< id of the deciding signature, "" when none
  std::string severity = "info";
  std::string fix;
  std::string headline;  ///< one sentence for the log and summary.md
  Trigger trigger = Trigger::kNone;
  std::vector<const Match*> evidence;  ///< most important first, points into Evidence
  std::set<std::string> ranks, hosts;
  std::string seq, op, numel_in, numel_out, timeout_ms, pg;
  std::vector<std::string> categories_seen;  ///< every distinct category, by priority
  /// The engine's ranked causes (Diagnose): the verdict's category is the first when one was
  /// named; values, so the verdict outlives the evidence.
  std::vector<Cause> causes;
};

/// Facts about the job the verdict and summary need.
struct JobTiming {
  double since_start_s = 0;        ///< detection time minus job start
  double since_progress_s = 0;     ///< detection time minus last output/heartbeat
  std::optional<int> exit_status;  ///< when the job had already ended (wait-status decoded)
  std::string stall_source;        ///< "output" or "heartbeat" for a stall
  double stall_timeout_s = 0;
  std::string host;
};

/// Decides with the engine (Diagnose): the category is the best cause it names; when it names
/// none, the strongest symptom's category (collective_timeout, ...), else "stall" or
/// "job_failed" from what fired. `trigger` is what fired.
Verdict Decide(const Evidence& evidence, Trigger trigger, const JobTiming& timing);

nlohmann::json SummaryJson(const Verdict& v, const JobTiming& timing);
std::string SummaryMarkdown(const Verdict& v, const JobTiming& timing);

}  // namespace sl::diagnose
