#pragma once
// The only way safe-launch writes files (run directory, bundles, caches, warm-up results).
// Every write replaces its target atomically: the bytes go to a fresh, unpredictable temp name in
// the target's directory, created with O_CREAT|O_EXCL|O_NOFOLLOW and the caller's mode, and are
// renamed over the target relative to a directory fd opened with O_DIRECTORY|O_NOFOLLOW. So a
// reader never sees half a file, a planted symlink at the temp name or the directory itself is
// never followed, and a file is never created with wider permissions than asked.
#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace sl {

/// Modes the run directory uses: its files may hold job output, so owner-only by default.
inline constexpr mode_t kPrivateFile = 0600;
inline constexpr mode_t kPrivateDir = 0700;

class FileWriter {
 public:
  virtual ~FileWriter() = default;
  /// Replaces `path` with `content` atomically (see the top of this file), with permissions
  /// `mode` (umask applies on disk). Errors name the path and the errno text, and carry
  /// WriteFixForErrno's next step as the fix.
  virtual Status WriteAtomic(const std::string& path, std::string_view content,
                             mode_t mode = kPrivateFile) const = 0;
};

/// Writes to the local file system.
class DiskFileWriter final : public FileWriter {
 public:
  Status WriteAtomic(const std::string& path, std::string_view content,
                     mode_t mode = kPrivateFile) const override;
};

/// The process-wide disk writer.
const FileWriter& DiskWriter();

/// DiskWriter().WriteAtomic(path, content, mode).
Status WriteFileAtomic(const std::string& path, std::string_view content,
                       mode_t mode = kPrivateFile);

/// Writes `content` to a new file dir/<prefix><16 random hex digits><suffix>, created with
/// O_CREAT|O_EXCL|O_NOFOLLOW relative to `dir` opened with O_DIRECTORY|O_NOFOLLOW (mkstemps'
/// guarantee, and more: a planted symlink at any name is never followed). For fallbacks in shared
/// places such as $TMPDIR, where a predictable name lets another user plant a link. Returns the
/// path written.
Result<std::string> WriteUniqueFile(const std::string& dir, const std::string& prefix,
                                    const std::string& suffix, std::string_view content,
                                    mode_t mode = kPrivateFile);

/// A next step for a failed write by errno (EACCES/EPERM, EROFS, ENOSPC/EDQUOT, ELOOP); "" when
/// none applies. The writer puts it in Error::fix; callers may add their own option after it.
std::string WriteFixForErrno(int err);

/// Creates a new file for streaming writes (a rank log, an archive being built): O_CREAT|O_EXCL|
/// O_NOFOLLOW|O_CLOEXEC with `mode`, so an existing file or a planted symlink is an error, never
/// truncated or followed. Returns the open fd; the caller closes it.
Result<int> CreateNewFile(const std::string& path, mode_t mode = kPrivateFile);

/// Appends one record (a JSON line) to the shared file `path`, created with `mode` when new:
/// O_APPEND|O_NOFOLLOW (a planted link is an error, never written through), a regular file only,
/// under an exclusive flock(2) held for the whole record, which goes out in one write(2). So
/// concurrent appenders (two jobs' bench runs) never lose or interleave records. A file whose
/// last byte is not '\n' (a torn earlier write) gets one before the record.
Status AppendRecord(const std::string& path, std::string_view record, mode_t mode = kPrivateFile);

}  // namespace sl
