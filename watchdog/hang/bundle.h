#pragma once
// The bundle on disk: <run_dir>/<name>/ and <run_dir>/<name>.tar.gz. Everything is first written
// under ".<name>.partial" names and renamed only when complete, so a partial bundle (disk full,
// read-only run dir, safe-launch killed mid-capture) is never presented as complete. Files 0600,
// directories 0700 (the bundle holds stacks, environments and command lines). Every byte goes
// through the Redactor. Thread-safe: collectors write in parallel; writes after Close() are
// refused (a collector that ran past its deadline cannot touch a finished bundle).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "watchdog/hang/redact.h"

namespace sl::hang {

class Bundle {
 public:
  /// Creates <run_dir>/.<name>.partial (0700). Errors name the path and errno.
  static Result<std::unique_ptr<Bundle>> Create(const std::string& run_dir, const std::string& name,
                                                const Redactor* redactor);
  /// Writes `content` (redacted) to <bundle>/<rel>, creating parent directories. Returns the
  /// number of bytes written.
  Result<std::uint64_t> WriteFile(std::string_view rel, std::string_view content);
  /// Copies a host file (at most `max_bytes`, the tail when larger) into <bundle>/<rel>. Only a
  /// regular file: a symlink is not followed (O_NOFOLLOW) and a FIFO or device is refused.
  Result<std::uint64_t> CopyFile(std::string_view rel, const std::string& host_path,
                                 std::uint64_t max_bytes = 64u << 20);
  /// Refuses further writes.
  void Close();
  /// Every write error so far (ENOSPC, EROFS, ...), for the manifest.
  std::vector<std::string> WriteErrors() const;
  /// Packs the partial directory into <name>.tar.gz (via a partial name) and renames both to their
  /// final names. Fails -- leaving only partial names -- when any write failed before.
  Status Finish();

  const std::string& partial_dir() const { return partial_dir_; }
  std::string final_dir() const { return run_dir_ + "/" + name_; }
  std::string final_tar() const { return run_dir_ + "/" + name_ + ".tar.gz"; }
  const std::string& name() const { return name_; }

 private:
  Bundle() = default;
  Status MakeParents(const std::string& path);
  std::string run_dir_, name_, partial_dir_;
  const Redactor* redactor_ = nullptr;
  mutable std::mutex mu_;
  bool closed_ = false;
  std::vector<std::string> errors_;
};

/// Writes a .tar.gz of `dir` with entries under `prefix/`, modes kept (libarchive, pax format).
Status WriteTarGz(const std::string& dir, const std::string& prefix, const std::string& out_path);

}  // namespace sl::hang
