#pragma once
// The process tree from /proc/<pid>/stat: parsing is pure (tested on literal strings), reading
// goes through the rooted FileReader (tested on an in-memory /proc). Descendants are found by the
// ppid walk, not by process group or session: torchrun starts each worker with setsid.
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/file_reader.h"
#include "common/result.h"

namespace sl::watchdog {

struct ProcStat {
  pid_t pid = 0;
  std::string comm;  ///< may contain spaces and ')' -- parsed up to the last ')'
  char state = '?';  ///< R, S, D, Z (zombie), T, ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  unsigned long long start_time = 0;  ///< clock ticks after boot (field 22)
};

/// Parses one /proc/<pid>/stat line. Error names `where` on malformed text.
Result<ProcStat> ParseProcStat(std::string_view text, std::string_view where = "/proc/<pid>/stat");

/// Every process readable under `proc_dir` ("/proc" on the node). Processes that vanish while
/// reading are skipped silently (they exited), as are malformed entries.
std::vector<ProcStat> ListProcesses(const FileReader& reader, std::string_view proc_dir = "/proc");

/// Pids of all descendants of `root` (not `root` itself), parents before children. Processes in
/// `exclude` and their subtrees are left out.
std::vector<pid_t> DescendantsOf(const std::vector<ProcStat>& procs, pid_t root,
                                 const std::vector<pid_t>& exclude = {});

/// Live descendants of `root` on this node, zombies excluded (they are only waiting to be reaped).
std::vector<pid_t> LiveDescendants(pid_t root, const std::vector<pid_t>& exclude = {});

}  // namespace sl::watchdog
