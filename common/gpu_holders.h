#pragma once
// Processes holding an NVIDIA device node open (/proc/<pid>/fd/* -> /dev/nvidia*): what a job
// leaves behind on a node. Read through a FileReader (a --sysroot fixture tree works); the
// gpu.leftover_procs check (preflight/checks/) decides on it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_reader.h"
#include "common/result.h"

namespace sl {

/// One process holding an NVIDIA device node open.
struct GpuHolder {
  int pid = 0;
  std::string user;                  ///< user name (or the uid when it has no name)
  std::string command;               ///< its command line, NULs as spaces, bounded
  std::vector<std::string> devices;  ///< "/dev/nvidia0", "/dev/nvidiactl", ... as on the node
};

/// Daemons that hold the GPUs between jobs by design (persistence daemon, DCGM, fabric
/// manager): never leftovers.
bool IsGpuDaemon(std::string_view comm);

/// Scans /proc/<pid>/fd of every process for links to /dev/nvidia*. Under a sysroot the links a
/// real process shows point into the sysroot (<root>/dev/nvidia0): they are mapped back to node
/// paths. Skips `self_pid` (0: none), GPU daemons and processes that vanish or cannot be read
/// meanwhile. User names come from NSS on the live node, else from the tree's /etc/passwd. An
/// error (naming /proc) only when /proc itself cannot be listed: then nothing is known.
Result<std::vector<GpuHolder>> FindGpuHolders(const FileReader& fs, std::string_view sysroot,
                                              int self_pid);

}  // namespace sl
