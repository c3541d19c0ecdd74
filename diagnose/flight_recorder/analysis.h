#pragma once
// Cross-rank analysis of Flight Recorder dumps, per process group. Entries are matched by
// sequence id (collective_seq_id for collectives, p2p_seq_id for p2p, apart; entries sharing an id
// -- a coalesced group -- are compared together), never by program order or file order, so a
// faulty rank whose file sorts first does not make the healthy ranks look wrong: who is odd is
// decided by majority.
//
// Gloo keeps every entry "scheduled" even when completed (and reports the timed-out collective as
// completed in pg_status), so for Gloo dumps an entry counts as completed when the same rank has
// issued a later collective in the same group; what each rank *entered* decides.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/file_reader.h"
#include "common/result.h"
#include "diagnose/flight_recorder/records.h"

namespace sl::diagnose::fr {

struct FrOptions {
  const FileReader* reader = nullptr;  ///< nullptr: the local file system
  int threads = 0;                     ///< reader threads; 0: one per core (at most 16)
  std::map<int, std::string> hosts;    ///< host per rank, beyond what the bundles say
};

/// What one process group's dumps say.
enum class PgVerdict {
  kHealthy,      ///< every collective in the dumps completed on every rank
  kDesync,       ///< ranks entered different ops/sizes/dtypes under one sequence id
  kLaggard,      ///< some ranks never entered the collective the others wait in
  kMissingDump,  ///< every dumped rank waits; the ranks that did not dump are the suspects
  kStuckAll,     ///< every rank entered, none completed: the transport/fabric is the suspect
  kPartial,      ///< every rank entered, some completed, others not
};
std::string_view PgVerdictName(PgVerdict v);

/// A rank in an odd collective: which entry it has there.
struct OddRank {
  int rank = -1;
  std::uint32_t op = 0, shape = 0;
};

/// The analysis of one process group (collectives or p2p).
struct PgFinding {
  std::string pg, desc;
  bool p2p = false;
  PgVerdict verdict = PgVerdict::kHealthy;
  std::int64_t seq = -1;  ///< the first collective not completed everywhere (or first desync)
  std::uint32_t op = 0, shape = 0;  ///< what most ranks entered there
  std::string mismatch;             ///< "op", "sizes", "dtypes" for kDesync
  std::vector<int> members, entered, completed, never_entered, no_dump;
  /// Entered, not completed, and recorded as started on the GPU (state "started"): NCCL only.
  /// torch records a start only with TORCH_NCCL_ENABLE_TIMING=1 (starts_recorded says whether
  /// this group's dumps hold any); without it "scheduled" means "not completed yet".
  std::vector<int> started;
  bool states_kept = false;      ///< NCCL dumps: entry states are kept (Gloo leaves "scheduled")
  bool starts_recorded = false;  ///< some entry of the group has a start time or state "started"
  std::vector<OddRank> odd;      ///< kDesync: ranks in a different op/shape
  /// Evidence: (rank, entry index) of one rank on each side, most telling first.
  std::vector<std::pair<int, std::uint32_t>> samples;
  std::int64_t first_created_ns = 0;  ///< earliest time_created of the stuck collective
  std::int64_t window_lo = 0;         ///< lowest seq every dumped member still holds
};

/// Everything read and found.
struct FrAnalysis {
  std::unique_ptr<Strings> strings = std::make_unique<Strings>();
  std::unique_ptr<Stacks> stacks = std::make_unique<Stacks>();
  std::vector<RankDump> dumps;        ///< one per rank, by rank
  std::map<std::string, PgInfo> pgs;  ///< by name
  std::vector<DumpError> errors;      ///< unreadable dumps (the rest is still analysed)
  std::vector<std::string> notes;     ///< duplicates, skipped files
  std::vector<int> missing;           ///< ranks in a group's config with no readable dump
  int world_size = 0;
  std::vector<PgFinding> findings;  ///< one per group and kind, the most important first
  double read_s = 0, analyse_s = 0;

  const std::string& Str(std::uint32_t id) const { return strings->at(id); }
  const RankDump* DumpOf(int rank) const;
  std::string HostOf(int rank) const;
  /// "node gpu07 (ranks 56-63)", "ranks 3, 9-11 on gpu01", "rank 5", "ranks 0-7".
  std::string DescribeRanks(const std::vector<int>& ranks) const;
  /// The finding that explains the hang, nullptr when every group is healthy.
  const PgFinding* Top() const;

  std::map<int, std::string> extra_hosts;
  std::map<int, std::size_t> by_rank;
};

/// "56-63", "0, 3, 5-7".
std::string RankRanges(const std::vector<int>& ranks);

/// Reads every dump under `paths` (files, or directories searched up to 4 levels deep for
/// `<prefix><rank>`, `.pkl`, `.json` files that are pickles or JSON), in parallel, and analyses
/// them. A dump that cannot be read is an entry of `errors` naming the file and byte; the other
/// ranks are still analysed. Errors only when no dump was found at all.
Result<FrAnalysis> AnalyzeFlightRecorder(const std::vector<std::string>& paths,
                                         const FrOptions& options);

/// The analysis over dumps already read (what AnalyzeFlightRecorder does after reading).
void AnalyseDumps(FrAnalysis* a);

}  // namespace sl::diagnose::fr
