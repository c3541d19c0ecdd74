#pragma once
// A read() that ends at its deadline even when the kernel never returns from it: a hard-mounted
// NFS server that went away leaves the reader in uninterruptible sleep, where no signal or poll
// helps (poll always says a regular file is readable). So the read runs on a helper thread and
// the caller waits for it until the deadline; past it the caller gets an error and the helper is
// abandoned with the descriptor and a buffer of its own (nothing it does later touches the
// caller's memory), and closes them if the read ever returns. At most kMaxStuckReads helpers may
// be stuck at once; beyond that a read is refused at once rather than leak another thread.
// A caller that streams a large file lends the helper its buffer instead (a shared one): the
// read lands in it without a second copy, and an abandoned helper keeps the buffer alive until
// its read returns.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/result.h"

namespace sl {

/// Helpers that may be stuck in a read at once (each is one thread and one descriptor).
inline constexpr int kMaxStuckReads = 8;
/// The name of the helper threads (at most 15 bytes: the kernel's comm).
inline constexpr const char* kTimedReadThreadName = "sl-timed-read";

/// What one timed read gave.
struct TimedReadResult {
  std::size_t bytes = 0;
  bool timed_out = false;  ///< the deadline passed: `fd` now belongs to the stuck helper
};

/// Reads up to `n` bytes (at most 1 MiB per call) from `fd` into `buf`, waiting until
/// `deadline`. An Error for a failed read (errno text) or when kMaxStuckReads helpers are stuck
/// already; `timed_out` when the deadline passed first, and then the caller must neither use
/// nor close `fd` (the helper closes it).
Result<TimedReadResult> TimedRead(int fd, char* buf, std::size_t n,
                                  std::chrono::steady_clock::time_point deadline);

/// The same, read straight into `buf` at `offset` (no copy through the helper's buffer). `buf`
/// is shared with the helper: when `timed_out`, the read may still write to [offset, offset + n)
/// whenever it returns, so the caller must not use those bytes again, nor the buffer for another
/// read (it gives the buffer up with `fd`; the helper keeps it alive as long as it needs it).
Result<TimedReadResult> TimedRead(int fd, const std::shared_ptr<char[]>& buf, std::size_t offset,
                                  std::size_t n, std::chrono::steady_clock::time_point deadline);

/// Helpers abandoned in a read that has not returned yet.
int StuckReads();

}  // namespace sl
