#pragma once
// nccl-tests output (all_reduce_perf and the other *_perf programs): text in, values out; never
// throws. The layout is nccl-tests' src/common.cu: a "# nThread ..." line, one "#  Rank ..." line
// per rank, two header lines naming the columns, one row per size, then "# Out of bounds values"
// and "# Avg bus bandwidth". Columns are found by name, not position, so the older layouts (no
// redop/root, "error" instead of "#wrong") and the newer ones (#bitdiff, per-iteration columns,
// timestamps) read the same way. Deciding what the numbers mean is the caller's business.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

/// One half of a row: the out-of-place or the in-place measurement.
struct NcclTestsHalf {
  bool present = false;           ///< the row had these columns
  std::optional<double> time_us;  ///< nullopt when printed as N/A
  std::optional<double> algbw_gbps, busbw_gbps;
  /// "#wrong": elements that differed from the expected result; nullopt for N/A (run with -c 0).
  std::optional<std::int64_t> wrong;
  std::optional<double> max_error;  ///< the older "error" column (max deviation), when printed
};

/// One size of the sweep.
struct NcclTestsRow {
  int line = 0;  ///< 1-based line in the text
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  std::string type;   ///< "float", "half", ...
  std::string redop;  ///< "sum", "none", "" when the layout has no such column
  int root = -1;
  NcclTestsHalf out_of_place, in_place;
  /// The better of the two busbw figures (nccl-tests' own "Avg bus bandwidth" averages both).
  std::optional<double> BestBusbw() const;
  /// Elements wrong in either half (0 when none or N/A).
  std::int64_t Wrong() const;
};

/// One "#  Rank  N Group  G Pid  P on HOST device  D [BUS] NAME" line.
struct NcclTestsRank {
  int rank = 0;
  int group = -1;  ///< absent before nccl-tests 2.13's Group column
  int pid = 0;
  std::string host;
  int device = 0;
  std::string bus_id;       ///< "0x07" or "0000:07:00", as printed
  std::string device_name;  ///< "NVIDIA H100 80GB HBM3"
};

struct NcclTestsOutput {
  std::string program;  ///< "all_reduce_perf" (from the command line or "Collective test
                        ///< starting"), "" when the text does not say
  std::string version;  ///< "# nccl-tests version 2.17.1 ..." when printed
  int nthread = 0, ngpus = 0;
  std::uint64_t min_bytes = 0, max_bytes = 0;
  int iters = 0, warmup_iters = 0;
  std::optional<int> validation;  ///< the header's "validation: N"
  std::vector<NcclTestsRank> ranks;
  std::vector<std::string> columns;  ///< the column names, as the header printed them
  std::vector<NcclTestsRow> rows;
  std::optional<std::int64_t> out_of_bounds;  ///< "# Out of bounds values : N OK|FAILED"
  std::optional<double> avg_busbw_gbps;       ///< "# Avg bus bandwidth : X"
  /// Lines that looked like part of the output but did not read: "line 12: ..." (a truncated
  /// row, a garbled number). The rows that read are still returned.
  std::vector<std::string> problems;
  /// "# error: ...", "Test NCCL failure ...", "Test CUDA failure ..." lines as printed.
  std::vector<std::string> errors;

  /// True when the summary ("Avg bus bandwidth") was printed: the run finished.
  bool Complete() const { return avg_busbw_gbps.has_value(); }
  /// Elements wrong over every row and the out-of-bounds count (data corruption when > 0).
  std::int64_t WrongTotal() const;
};

/// Parses nccl-tests' text output. Error only when there is no result table at all (no column
/// header, or no row under it, and no summary): a truncated or partly garbled output still
/// returns the rows that read, with `problems` naming the others.
Result<NcclTestsOutput> ParseNcclTests(std::string_view text);

}  // namespace sl
