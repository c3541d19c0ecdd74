#pragma once
// The signature catalog: one table of known failure lines (PyTorch watchdog, NCCL WARN, Gloo,
// c10d store, CUDA, torchrun, kernel log) and a matcher that recognises them line by line.
// The table is data so the offline `diagnose` command can reuse it. Matching costs one substring
// search per signature per line; the regex (extraction only) runs only on lines that passed the
// substring prefilter, which in a healthy job is almost none.
#include <bitset>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sl::diagnose {

class AnchorFilter;

enum class Severity { kInfo, kWarning, kError, kHang };
std::string_view SeverityName(Severity s);

/// What a row's line tells: a cause a person can fix, a symptom the cause produced (a watchdog
/// timeout, "NCCL error"), or a fact that is evidence in combination (a transport line without
/// /GDRDMA, the NCCL version, the bootstrap interface).
enum class EvidenceKind { kSymptom, kCause, kFact };
std::string_view EvidenceKindName(EvidenceKind k);

/// One row of the catalog.
struct Signature {
  std::string_view id;         ///< stable id, "torch.watchdog_timeout"
  std::string_view prefilter;  ///< substring that must occur in the line (cheap first test)
  std::string_view also;       ///< second substring that must occur too ("" = none)
  std::string_view pattern;    ///< ECMAScript regex run only after the prefilter ("" = none)
  std::string_view fields;     ///< comma-separated names of the regex groups, in order
  std::string_view category;   ///< root-cause category, e.g. "shm_too_small"
  Severity severity;           ///< kHang triggers a capture while the job is alive
  int priority;          ///< verdict weight: a root cause (shm, IB status) outranks its consequence
                         ///< (a watchdog timeout), which outranks generic errors
  std::string_view fix;  ///< next step for the engineer
  EvidenceKind kind = EvidenceKind::kSymptom;
  /// Where the message format comes from and for which releases, e.g.
  /// "nccl src/transport/net_ib.cc 2.12-2.28" or "torch ProcessGroupNCCL.cpp 2.4-2.11".
  std::string_view provenance = "";
};

/// The whole catalog, most specific rows first (the first row that matches a line wins).
std::span<const Signature> Catalog();

// A row that matches the start of a longer message as well as the whole of an elided one
// (`torch.watchdog_timeout_text`: the watchdog line without its WorkNCCL fields). Where the line
// may go on (a wrapped log line, a piece of a long output line), the text after it can complete
// it into a fuller row's match, which then stands instead.
bool MayBeCompletedByLaterText(const Signature& s);

/// A recognised line with what was extracted from it.
struct Match {
  const Signature* signature = nullptr;
  std::string line;                           ///< the line as seen (trimmed of "\r\n")
  std::map<std::string, std::string> fields;  ///< regex fields + rank/pg/host/pid when present
  std::string source;                         ///< "stdout", "stderr", or a file name
  std::uint64_t line_number = 0;              ///< 1-based within its source
  double at_s = 0;                            ///< seconds since job start (0 when offline)
  std::string Field(std::string_view name) const;
};

/// The start of torch's watchdog message, which terminals and pasted logs wrap: a line holding
/// it that matches nothing alone is joined with the lines after it (RecognizeWrapped), so the
/// skip scan hands over every line that holds it, anchor or not.
inline constexpr std::string_view kWrappedWatchdogText = "Watchdog caught collective";

/// The 0-based numbers of lines in a block, counted only as far as asked, forward: a skip-scan
/// candidate that needs its line's number asks for it (a repeat that is only counted does not,
/// and the block's line ends are then never counted at all).
class LineIndex {
 public:
  explicit LineIndex(std::string_view block) : block_(block) {}
  /// The index of the line that starts at `line.data()` (a view into the block, at or after
  /// every line asked for before).
  std::size_t Of(std::string_view line);
  /// How many lines the block has (the last may lack its '\n').
  std::size_t Total();

 private:
  std::string_view block_;
  std::size_t counted_ = 0;  // the line ends before block_[counted_] are in index_
  std::size_t index_ = 0;
};

/// Recognises lines against the catalog. Regexes are compiled once, at construction.
class LineMatcher {
 public:
  LineMatcher();
  ~LineMatcher();
  LineMatcher(const LineMatcher&) = delete;
  LineMatcher& operator=(const LineMatcher&) = delete;
  /// The first matching signature with its fields, or nullopt. Never throws.
  std::optional<Match> MatchLine(std::string_view line) const;
  /// One skip scan over a block of lines (split at '\n'; the last may lack it): calls
  /// `on_candidate(line, index)` for each line that holds a catalog anchor (every line MatchLine
  /// can match is one, and every line that holds kWrappedWatchdogText; `index` is its 0-based
  /// number in the block) and returns how many lines the block has. Healthy lines cost no
  /// per-line work at all: the scan skips across line ends.
  std::size_t ScanBlock(
      std::string_view block,
      const std::function<void(std::string_view line, std::size_t index)>& on_candidate) const;
  /// The same scan; a candidate's index is counted only when it asks `index.Of(line)`, and the
  /// block's lines are not counted.
  void ScanBlockLazily(
      std::string_view block,
      const std::function<void(std::string_view line, LineIndex& index)>& on_candidate) const;

  /// How the skip scan finds the lines that hold an anchor; every kernel hands over the same.
  enum class ScanKernel {
    kScalar,          ///< Wu-Manber over 3-byte steps, 8 lanes (any CPU; the reference)
    kFilter,          ///< AnchorFilter's vector kernel (AVX-512 VBMI), portable where it lacks
    kFilterPortable,  ///< AnchorFilter's tables a byte at a time (tests)
  };
  /// The kernel ScanBlock and ScanBlockLazily run: kFilter where the CPU has it (checked at run
  /// time) unless PreferScalarScan(true), else kScalar.
  ScanKernel Kernel() const;
  /// Process-wide: run the scalar scan even where the vector kernel would do (`run` and
  /// `diagnose` set it from SAFE_LAUNCH_SCAN=scalar, for before/after comparisons).
  static void PreferScalarScan(bool scalar);
  /// ScanBlockLazily with the given kernel.
  void ScanBlockWith(
      ScanKernel kernel, std::string_view block,
      const std::function<void(std::string_view line, LineIndex& index)>& on_candidate) const;

  /// Every row's anchor in the skip scan is kAnchor bytes of its prefilter or of its second
  /// substring (both must occur in a line it matches).
  static constexpr std::size_t kAnchor = 6;
  /// The anchor the skip scan looks for on behalf of catalog row `row` (for tests).
  std::string_view AnchorOf(std::size_t row) const { return anchors_[row]; }

 private:
  struct Compiled;
  std::vector<Compiled*> compiled_;  // parallel to Catalog()
  // Multi-pattern skip scan (Wu-Manber) over one anchor of kAnchor bytes per row, each picked
  // where healthy text is thin (catalog/healthy_sample.inc). At each position the scan looks at
  // the 3 bytes ending there and moves by the smaller of two safe shifts, from the two tables in
  // shifts_: by a 16-bit hash of those 3 bytes (where they sit in some anchor), and by the last 2
  // (the start of an anchor, or its first byte). A healthy line is crossed about kAnchor - 1
  // bytes per step; only where a shift is 0 (the 3 bytes end an anchor) is the window looked up.
  static constexpr std::size_t kMaxRows = 512;
  std::vector<std::string> anchors_;  // parallel to Catalog(); "" for a row without one
  std::vector<std::uint8_t> shifts_;  // 2 x 65536 entries
  std::unordered_map<std::uint64_t, std::bitset<kMaxRows>> rows_by_window_;
  // One bit per 16-bit hash of each anchor: most windows that end on an anchor's last 3 bytes are
  // not anchors, and this 8 KiB bitmap says so without a lookup; then anchor_slots_ (the anchors'
  // windows, open addressing) says for sure.
  std::uint64_t anchor_bits_[1024] = {};
  std::vector<std::uint64_t> anchor_slots_;
  std::size_t SlotOf(std::uint64_t window) const;
  bool IsAnchor(std::uint64_t window) const;
  std::bitset<kMaxRows> short_rows_;  // rows without an anchor of kAnchor bytes: always tried
  // The same anchors for the vector kernel, built on the first scan that runs it (choosing its
  // buckets costs ~1-2 ms: a process that never scans does not pay it). call_once: the matcher
  // is shared by threads.
  std::string wrapped_anchor_;
  mutable std::once_flag filter_once_;
  mutable std::unique_ptr<AnchorFilter> filter_;
  const AnchorFilter& Filter() const;
  void ScanScalar(std::string_view block, std::vector<std::string_view>* hits) const;
  std::bitset<kMaxRows> Candidates(std::string_view line) const;
};

/// Fields common to most lines, found without regex: "rank" from "[rank3]:" / "[Rank 3]" /
/// "rank: 3", "pg" from "PG ID 0", "host"/"pid" from NCCL's "host:pid:tid [dev]" prefix.
void ExtractCommonFields(std::string_view line, std::map<std::string, std::string>* fields);

}  // namespace sl::diagnose
