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

#include "diagnose/signatures.h"

namespace sl::diagnose {

/// What started the capture.
enum class Trigger { kNone, kSignature, kStall, kHeartbeat, kJobFailed };
std::string_view TriggerName(Trigger t);

/// Accumulates matches. Keeps the first few lines of every signature and counts the rest, so
/// memory stays bounded however long the job floods the same warning.
class Evidence {
 public:
  static constexpr std::size_t kKeepPerSignature = 8;
  void Add(Match m);
  /// Feeds every line of `text` (a file) through `matcher`, tagging matches with `source`.
  void AddText(const LineMatcher& matcher, std::string_view text, const std::string& source);
  const std::vector<Match>& matches() const { return matches_; }
  std::size_t Count(std::string_view signature_id) const;
  std::size_t total() const { return total_; }
  /// A cross-rank desync found in NCCL collective traces (same opCount, different count/type).
  const Match* Desync() const { return desync_ ? &*desync_ : nullptr; }

 private:
  std::vector<Match> matches_;
  std::map<std::string, std::size_t, std::less<>> counts_;
  std::size_t total_ = 0;
  // opcount|coll|nranks -> first (count,datatype,root) seen and the line.
  std::map<std::string, Match> coll_first_;
  std::optional<Match> desync_;
};

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

/// Decides. `trigger` is what fired; the category comes from the strongest evidence, falling
/// back to "stall" or "job_failed" when no line was recognised.
Verdict Decide(const Evidence& evidence, Trigger trigger, const JobTiming& timing);

nlohmann::json SummaryJson(const Verdict& v, const JobTiming& timing);
std::string SummaryMarkdown(const Verdict& v, const JobTiming& timing);

}  // namespace sl::diagnose
