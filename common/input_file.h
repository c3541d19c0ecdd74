#pragma once
// The one way safe-launch reads a file it did not write itself: job logs, Flight Recorder dumps,
// bundles and their manifests, another node's events, a bench history, an nccl-tests output.
// Such a file may be planted by another user or written by a broken node, so:
//   - only regular files: a FIFO (hangs a read forever), /dev/zero (never ends), a socket or a
//     device is an error, found by fstat on the open descriptor (opened O_NONBLOCK, so opening a
//     FIFO does not wait for a writer);
//   - the last component is opened with O_NOFOLLOW, and below a walked root every component is
//     opened with openat(O_NOFOLLOW) from the root's descriptor: a link is never followed, so a
//     walk never leaves the root it was given;
//   - a size cap per kind, checked on st_size before any byte is read (a sparse 30 GB file is
//     refused at once) and again while reading (a file that grows);
//   - a deadline per read (a hung network file system becomes an error, not a hang);
//   - inside a walk, a file owned by neither the caller nor the root directory's owner is
//     skipped (and said): a third user's file planted in a job's run root is not read. A path
//     the user named explicitly is read whoever owns it.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_reader.h"
#include "common/result.h"

namespace sl {

/// What an input is, for its size cap (InputCap).
enum class InputKind {
  kLog,       ///< a job log or any text file of a run directory (streamed)
  kDump,      ///< a Flight Recorder dump (torch writes up to ~1.5 GB for 2000 entries x 1000s)
  kManifest,  ///< a bundle's manifest.json, status.json, a node's facts
  kEvent,     ///< one .events/ post
  kHistory,   ///< a bench history (JSON lines) or baseline
  kImport,    ///< an nccl-tests output given to bench --import
};

/// The size cap of a kind, in bytes.
std::uint64_t InputCap(InputKind kind);
/// How long reading one file of a kind may take, open to last byte.
std::chrono::milliseconds InputDeadline(InputKind kind);

/// How one input is read.
struct InputRule {
  std::uint64_t max_bytes = 0;  ///< 0: InputCap(kind)
  InputKind kind = InputKind::kLog;
  /// Whole read (open to last byte); longer is an error. 0: InputDeadline(kind).
  std::chrono::milliseconds deadline{0};
  /// The user named this path: another user's file is read. Otherwise only files of the caller
  /// and of `trusted_uid`.
  bool explicit_path = false;
  uid_t trusted_uid = static_cast<uid_t>(-1);  ///< -1: the caller alone

  static InputRule Named(InputKind kind) {
    InputRule r;
    r.kind = kind;
    r.explicit_path = true;
    return r;
  }
};

/// A file's bytes in a buffer of its own (ReadAllBytes).
struct InputBytes {
  std::shared_ptr<char[]> data;
  std::size_t size = 0;
  std::string_view view() const { return {data.get(), size}; }
};

/// An open input: a regular file that passed the rule's checks. Closes on destruction.
class InputFile {
 public:
  InputFile() = default;
  InputFile(int fd, std::uint64_t size, std::string display, const InputRule& rule);
  InputFile(InputFile&& o) noexcept;
  InputFile& operator=(InputFile&& o) noexcept;
  ~InputFile();
  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }  ///< st_size when opened
  const std::string& display() const { return display_; }
  /// Up to `n` more bytes (fewer at the end); an error past the cap or the deadline.
  Result<std::size_t> Read(char* buf, std::size_t n);
  /// The same into `buf` at `offset`, without a copy through the reading thread's buffer (see
  /// TimedRead: after a read that timed out, the caller must not use `buf` again).
  Result<std::size_t> Read(const std::shared_ptr<char[]>& buf, std::size_t offset, std::size_t n);
  /// The rest of the file, in one allocation of its size.
  Result<std::string> ReadAll();
  /// The same into a buffer that is neither zero-filled first nor copied through the reading
  /// thread's buffer (a Flight Recorder job's dumps are gigabytes: both were a tenth of reading
  /// them).
  Result<InputBytes> ReadAllBytes();

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t read_ = 0;
  std::uint64_t cap_ = 0;
  std::chrono::steady_clock::time_point deadline_{};
  std::string display_;
  template <typename ReadFn>
  Result<std::size_t> TimedReadChecked(ReadFn read);
};

/// Opens `path` (a path the caller was given) under `rule`: last component O_NOFOLLOW.
Result<InputFile> OpenInput(const std::string& path, const InputRule& rule);
/// Opens `rel` below the directory `root` without following any link under it (the root itself
/// is opened as named). `rel` holds no ".." component.
Result<InputFile> OpenInputUnder(const std::string& root, std::string_view rel,
                                 const InputRule& rule);
/// OpenInput then ReadAll.
Result<std::string> ReadInputFile(const std::string& path, const InputRule& rule);
/// OpenInputUnder then ReadAll.
Result<std::string> ReadInputUnder(const std::string& root, std::string_view rel,
                                   const InputRule& rule);
/// OpenInput then ReadAllBytes.
Result<InputBytes> ReadInputFileBytes(const std::string& path, const InputRule& rule);
/// OpenInputUnder then ReadAllBytes.
Result<InputBytes> ReadInputUnderBytes(const std::string& root, std::string_view rel,
                                       const InputRule& rule);

/// One file a walk found.
struct WalkedFile {
  std::string path;  ///< root + "/" + rel, for messages and as the file's name
  std::string rel;   ///< below the root, '/'-separated, no "." or ".." component
  std::uint64_t size = 0;
};

/// What a walk found, and what it passed over and why ("path: symbolic link, not followed").
struct WalkResult {
  std::vector<WalkedFile> files;             ///< sorted by path
  std::vector<std::string> skipped;          ///< "path: reason", in walk order
  std::vector<std::string> unreadable_dirs;  ///< directories that could not be opened/listed
  uid_t owner = 0;                           ///< the root directory's owner
};

struct WalkOptions {
  int max_depth = 8;  ///< levels below the root
  std::size_t max_files = 100000;
  /// Directory names not entered ("fr" is entered; ".events" holds coordination posts).
  std::vector<std::string> skip_dirs;
};

/// The one directory walk for logs, dumps and bundles. Lists every regular file below `root`
/// (opened as named) with openat(O_NOFOLLOW|O_DIRECTORY) per directory: symbolic links, FIFOs,
/// devices and sockets are listed in `skipped`, never opened, and the walk never leaves `root`.
/// Files owned by neither the caller nor the root's owner are skipped.
/// An error only when `root` itself cannot be opened as a directory.
Result<WalkResult> WalkInputs(const std::string& root, const WalkOptions& options = {});

/// The FileReader face of the rules above, for code that reads a run directory through a
/// FileReader (job facts, bundle manifests): ReadFile opens with OpenInput's checks, ListDir
/// lists without following a link at the last component, IsDir/Exists never follow one. A file
/// below one of `roots` is trusted when owned by that root's owner; any other path is taken as
/// named by the user.
class InputTreeReader final : public FileReader {
 public:
  explicit InputTreeReader(const std::vector<std::string>& roots);
  Result<std::string> ReadFile(std::string_view path,
                               std::size_t max_bytes = 64u << 20) const override;
  Result<std::vector<std::string>> ListDir(std::string_view path) const override;
  Result<std::string> ReadLink(std::string_view path) const override;
  bool Exists(std::string_view path) const override;
  bool IsDir(std::string_view path) const override;
  Result<std::uint64_t> FsSizeBytes(std::string_view path) const override;
  std::string HostPath(std::string_view path) const override { return std::string(path); }
  bool IsSysroot() const override { return false; }

 private:
  bool IsRoot(std::string_view path) const;
  std::vector<std::pair<std::string, uid_t>> roots_;
};

}  // namespace sl
