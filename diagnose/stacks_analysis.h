#pragma once
// Stacks across ranks as evidence. A hang bundle holds each rank's Python stacks (faulthandler,
// through safe-launch's sitecustomize, and py-spy when installed: stacks/rank_N_pid_P.py.txt and
// stacks/rank_N_pid_P.txt) and its kernel view (/proc wchan). Where each rank's *main thread*
// is tells who held the job:
//   - most ranks wait in one collective and a rank's main thread is elsewhere (sleep, file I/O,
//     a checkpoint save, the data loader): that rank is late -> straggler_or_slow_rank;
//   - ranks wait in different collectives -> desync_collective_mismatch;
//   - every rank waits in the same collective, nobody elsewhere, and the job made no progress
//     (it was declared hung) -> the fabric (retry_exceeded_network), weakly.
// The claims join the engine (diagnose/engine.h) with source "stacks"; their rule ids are stable.
#include <string>
#include <string_view>
#include <vector>

#include "common/file_reader.h"
#include "diagnose/engine.h"
#include "diagnose/py_stacks.h"

namespace sl::diagnose {

/// One rank's stacks as a bundle holds them.
struct RankStacks {
  int rank = -1;
  long pid = -1;
  std::string node;  ///< the bundle's host ("" when unknown)
  std::string file;  ///< the file the Python stacks came from (cited as evidence)
  PyStacks stacks;
  std::string wchan;    ///< what the main thread waits on in the kernel (/proc), "" when unknown
  bool pasted = false;  ///< pasted into a log (StacksInLog): `rank` is its place, not a rank
};

/// Where a rank's main thread is.
struct MainPlace {
  std::string key;       ///< what ranks are compared by: "collective all_reduce", or file:function
  bool waiting = false;  ///< inside a collective (or a wait on one): waiting for the others
  std::string collective;  ///< "all_reduce", "barrier", ... when waiting
  std::string activity;    ///< "sleep", "checkpoint save", "file I/O", "data loading",
                           ///< "evaluation"; "" when the frames do not say
  std::string where;       ///< "train.py:29 in <module>": the innermost frame outside torch
};

/// Where `r`'s main thread is; nullopt when its stacks have no main thread.
std::optional<MainPlace> PlaceOf(const RankStacks& r);

/// The claims the ranks' stacks support (none when fewer than two ranks have a main thread).
/// Rule ids: stacks.main_thread_elsewhere, stacks.different_collectives,
/// stacks.all_wait_in_same_collective.
std::vector<CauseClaim> StacksClaims(const std::vector<RankStacks>& ranks);

/// Python stacks pasted into a log, as users paste them into a report: py-spy dump output, one
/// section per process ("Process 4242: python train.py" opens each), or one faulthandler or
/// py-spy dump. One RankStacks per process that has threads (`pasted`; `pid` from py-spy's
/// header; frame line numbers are the log's). None when the text holds no stack.
std::vector<RankStacks> StacksInLog(std::string_view text, const std::string& file);

/// The claims of stacks pasted into one log: StacksClaims across its processes; with one
/// process only, a main thread busy outside any collective (data loading, a checkpoint save,
/// sleep, file I/O, evaluation) -- the dump a user takes of the rank that holds the others --
/// is stacks.pasted_main_thread_busy (straggler_or_slow_rank, weakly).
std::vector<CauseClaim> PastedStacksClaims(std::string_view text, const std::string& file);

/// Every rank's stacks in the bundles under `paths` (directories searched 4 levels deep for a
/// bundle's stacks/ folder; a bundle is a directory holding manifest.json, whose host names the
/// node). The same rank in several bundles: the last bundle by name (the latest capture) wins.
std::vector<RankStacks> ReadBundleStacks(const std::vector<std::string>& paths,
                                         const FileReader& reader);

/// The wchan of thread `tid` from the stacks collector's /proc section ("## tid N" then
/// "wchan: X"); "" when absent or "0".
std::string WchanOf(std::string_view proc_text, long tid);

}  // namespace sl::diagnose
