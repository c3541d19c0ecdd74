#pragma once
// The only way checks read the machine: absolute node paths ("/sys/class/infiniband") resolved
// under a root. RootedFileReader("/") reads the live node; RootedFileReader(DIR) reads a fixture
// tree laid out like the real one (--sysroot). MemFileReader is an in-memory fake for unit tests.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl {

class FileReader {
 public:
  virtual ~FileReader() = default;
  /// Whole content of a file. Works for sysfs/procfs attributes, binary files (PCI config space)
  /// and /dev/kmsg (read record by record without blocking, stops at the end of the buffer).
  /// Reads at most `max_bytes`. Errors name the host path and the errno text.
  virtual Result<std::string> ReadFile(std::string_view path,
                                       std::size_t max_bytes = 64u << 20) const = 0;
  /// Sorted entry names of a directory (without "." and ".."); follows symlinks.
  virtual Result<std::vector<std::string>> ListDir(std::string_view path) const = 0;
  /// Target of a symlink, as stored (relative or absolute).
  virtual Result<std::string> ReadLink(std::string_view path) const = 0;
  virtual bool Exists(std::string_view path) const = 0;
  virtual bool IsDir(std::string_view path) const = 0;
  /// Size in bytes of the filesystem holding `path` (statvfs), for the live node only.
  virtual Result<std::uint64_t> FsSizeBytes(std::string_view path) const = 0;
  /// The path as it is on this machine (root prefix included), for error messages.
  virtual std::string HostPath(std::string_view path) const = 0;
  /// True when reading a fixture tree instead of the live node.
  virtual bool IsSysroot() const = 0;
};

/// How a RootedFileReader keeps paths inside its root.
enum class ResolveMode {
  kAuto,  ///< openat2(RESOLVE_IN_ROOT) where the kernel has it (5.6+), else kWalk
  kWalk,  ///< the same resolution done component by component in user space
};

/// Under a root (--sysroot), every path resolves as if the root were "/", as openat2's
/// RESOLVE_IN_ROOT does: an absolute symlink target starts at the root and ".." stops there, so
/// a fixture tree (or a copied /sys with absolute links) never reads the host's files.
class RootedFileReader final : public FileReader {
 public:
  /// `root` "" or "/" means the live node.
  explicit RootedFileReader(std::string root, ResolveMode mode = ResolveMode::kAuto);
  Result<std::string> ReadFile(std::string_view path,
                               std::size_t max_bytes = 64u << 20) const override;
  Result<std::vector<std::string>> ListDir(std::string_view path) const override;
  Result<std::string> ReadLink(std::string_view path) const override;
  bool Exists(std::string_view path) const override;
  bool IsDir(std::string_view path) const override;
  Result<std::uint64_t> FsSizeBytes(std::string_view path) const override;
  std::string HostPath(std::string_view path) const override;
  bool IsSysroot() const override { return !root_.empty(); }
  const std::string& root() const { return root_; }

 private:
  /// An fd for `path` opened with `flags` (O_PATH, O_RDONLY, ...), resolved inside the root; the
  /// last component's symlink is followed unless `follow_last` is false. -1 with errno set.
  int Open(std::string_view path, int flags, bool follow_last = true) const;

  std::string root_;  // no trailing slash; empty for the live node
  ResolveMode mode_;
};

/// In-memory tree: files by absolute path; directories are implied by file paths or added.
class MemFileReader final : public FileReader {
 public:
  MemFileReader& AddFile(std::string path, std::string content);
  MemFileReader& AddDir(std::string path);
  MemFileReader& AddLink(std::string path, std::string target);
  Result<std::string> ReadFile(std::string_view path,
                               std::size_t max_bytes = 64u << 20) const override;
  Result<std::vector<std::string>> ListDir(std::string_view path) const override;
  Result<std::string> ReadLink(std::string_view path) const override;
  bool Exists(std::string_view path) const override;
  bool IsDir(std::string_view path) const override;
  Result<std::uint64_t> FsSizeBytes(std::string_view path) const override;
  std::string HostPath(std::string_view path) const override { return std::string(path); }
  bool IsSysroot() const override { return true; }

 private:
  std::map<std::string, std::string, std::less<>> files_;
  std::map<std::string, std::string, std::less<>> links_;
  std::map<std::string, bool, std::less<>> dirs_;
};

/// A file's text read up to a limit, and whether the file held more.
struct BoundedText {
  std::string text;        ///< the first max_bytes bytes at most
  bool truncated = false;  ///< the file (or /dev/kmsg's ring) went on past max_bytes
};

/// ReadFile that says when it cut: reads one byte (one kmsg record) past `max_bytes` to know.
/// A cut text may end inside a line (a record); callers that parse lines drop the last one then.
Result<BoundedText> ReadFileBounded(const FileReader& fs, std::string_view path,
                                    std::size_t max_bytes);

/// Joins node paths: JoinPath("/sys/class", "net") == "/sys/class/net".
std::string JoinPath(std::string_view a, std::string_view b);

}  // namespace sl
