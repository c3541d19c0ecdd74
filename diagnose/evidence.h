#pragma once
// The evidence store both verdict paths share: the supervisor feeds it live from the job's
// output and the bundle collectors, `safe-launch diagnose` feeds it from files. Bounded however
// long the job floods the same line.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/signatures.h"

namespace sl::diagnose {

/// The progress output (catalog rows of category "progress": iteration counters, checkpoint
/// saves, evaluation phases) of one process in one file, for the straggler rules.
struct Progress {
  std::string source;  ///< the file
  std::string who;     ///< rank, else "host:pid" (NCCL's prefix), else pod, else "" (unknown)
  std::size_t lines = 0;
  Match first, last;        ///< the first and the latest progress line (text cut at 2 KiB)
  long long max_step = -1;  ///< the highest "step" field seen, -1 when none
};

/// Where the collective timeouts (rows of category "collective_timeout") were seen.
struct TimeoutSeen {
  std::string source;
  Match first;  ///< the first timeout line of that file
};

/// Accumulates matches. Keeps the first few lines of every signature and counts the rest, and
/// the first line of each distinct value of the fields that tell nodes and ranks apart (a NCCL
/// version per node, a GID per host, a rank's last enqueued op), so memory stays bounded.
class Evidence {
 public:
  static constexpr std::size_t kKeepPerSignature = 8;
  /// Distinct values kept per (signature, field).
  static constexpr std::size_t kKeepDistinct = 64;
  void Add(Match m);
  /// Counts one more line of `sig` when that changes nothing else Add would: the caller vouches
  /// that an identical Match (signature, fields, source; only the line number differs) was
  /// Added before. True when counted; false when the line must go through Add (fewer than
  /// kKeepPerSignature kept yet, or a row whose every line moves a record: collective traces,
  /// progress, collective timeouts). A log of one line repeated a million times then builds a
  /// few Match objects, not a million.
  bool CountRepeat(const Signature& sig);
  /// Feeds every line of `text` (a file) through `matcher`, tagging matches with `source`.
  void AddText(const LineMatcher& matcher, std::string_view text, const std::string& source);
  const std::vector<Match>& matches() const { return matches_; }
  std::size_t Count(std::string_view signature_id) const;
  std::size_t total() const { return total_; }
  /// A cross-rank desync found in NCCL collective traces (same opCount, different count/type).
  const Match* Desync() const { return desync_ ? &*desync_ : nullptr; }
  /// The first line of each distinct value of `field` among the lines of signature `id`, in the
  /// order the values were first seen.
  std::vector<const Match*> Distinct(std::string_view id, std::string_view field) const;
  /// Progress records per (file, process), at most kKeepProgress of them.
  const std::vector<Progress>& progress() const { return progress_; }
  /// The first collective timeout of each file (at most kKeepProgress files).
  const std::vector<TimeoutSeen>& timeouts() const { return timeouts_; }
  /// The processes (see Progress::who) that reported a collective timeout, at most kKeepProgress.
  const std::vector<std::string>& timed_out() const { return timed_out_; }
  static constexpr std::size_t kKeepProgress = 256;
  /// The identity the progress and timeout records use for the process that printed `m`.
  static std::string Who(const Match& m);

 private:
  void AddDistinct(const Match& m);
  void CheckCollectiveName(const Match& m);
  void SetDesync(const Match& first, const Match& m, const std::string& field);
  void AddProgress(const Match& m);
  void AddTimeout(const Match& m);
  std::vector<Match> matches_;
  std::map<std::string, std::size_t, std::less<>> counts_;
  std::size_t total_ = 0;
  // opcount|coll|nranks -> first (count,datatype,root) seen and the line.
  std::map<std::string, Match> coll_first_;
  // The first trace line per (opCount, nranks), whatever its collective: another process of a
  // communicator of that size in another collective at the same opCount did not call the same.
  std::map<std::string, Match> op_first_;
  std::optional<Match> desync_;
  // "id|field" -> values in first-seen order with their first line.
  std::map<std::string, std::vector<std::pair<std::string, Match>>, std::less<>> distinct_;
  std::vector<Progress> progress_;
  std::map<std::string, std::size_t> progress_index_;  // source + '\n' + who -> progress_
  std::vector<TimeoutSeen> timeouts_;
  std::vector<std::string> timed_out_;
};

}  // namespace sl::diagnose
