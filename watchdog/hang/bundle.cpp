#include "watchdog/hang/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/file_writer.h"

namespace sl::hang {

namespace fs = std::filesystem;

namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<Bundle>> Bundle::Create(const std::string& run_dir, const std::string& name,
                                               const Redactor* redactor) {
  std::unique_ptr<Bundle> b(new Bundle);
  b->run_dir_ = run_dir;
  b->name_ = name;
  b->redactor_ = redactor;
  b->partial_dir_ = run_dir + "/." + name + ".partial";
  if (mkdir(b->partial_dir_.c_str(), 0700) != 0) {
    return MakeError(Errno("cannot create bundle directory", b->partial_dir_), b->partial_dir_,
                     "make the run directory writable and check free space (df -h), or pass "
                     "--run-dir on a writable file system");
  }
  chmod(b->partial_dir_.c_str(), 0700);  // umask may have removed bits we do not want anyway
  return b;
}

Status Bundle::MakeParents(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  std::vector<std::string> todo;
  while (dir.size() > partial_dir_.size() && access(dir.c_str(), F_OK) != 0) {
    todo.push_back(dir);
    dir = fs::path(dir).parent_path().string();
  }
  for (auto it = todo.rbegin(); it != todo.rend(); ++it) {
    if (mkdir(it->c_str(), kPrivateDir) != 0 && errno != EEXIST) {
      return MakeError(Errno("cannot create directory", *it));
    }
  }
  return OkStatus();
}

Result<std::uint64_t> Bundle::WriteFile(std::string_view rel, std::string_view content) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return MakeError(fmt::format("bundle closed; {} not written", rel));
  }
  std::string redacted = redactor_ ? redactor_->Redact(content) : std::string(content);
  std::string path = partial_dir_ + "/" + std::string(rel);
  auto fail = [this](std::string msg) -> Error {
    std::lock_guard lock(mu_);
    errors_.push_back(msg);
    return MakeError(std::move(msg));
  };
  if (auto s = MakeParents(path); !s.ok()) return fail(s.error().message);
  // The one writer: O_EXCL|O_NOFOLLOW temp name, renamed relative to the directory's fd.
  if (auto s = WriteFileAtomic(path, redacted, kPrivateFile); !s.ok()) {
    return fail(s.error().Describe());
  }
  {
    std::lock_guard lock(mu_);
    if (closed_) {
      unlink(path.c_str());  // a late writer lost the race against Close()
      return MakeError(fmt::format("bundle closed; {} not written", rel));
    }
  }
  return static_cast<std::uint64_t>(redacted.size());
}

Result<std::uint64_t> Bundle::CopyFile(std::string_view rel, const std::string& host_path,
                                       std::uint64_t max_bytes) {
  // Host paths come from the job's environment (TORCH_FR_DUMP_TEMP_FILE, ...) and often lie in
  // shared directories: a link planted there must not bring /etc/shadow in, nor a FIFO block us.
  int fd = open(host_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return MakeError(Errno("cannot open (links are not followed)", host_path));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return MakeError(fmt::format("not a regular file, not copied: {}", host_path));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  off_t off = static_cast<off_t>(size > max_bytes ? size - max_bytes : 0);
  std::string data;
  std::vector<char> buf(1 << 16);
  while (data.size() < max_bytes) {
    ssize_t n = pread(fd, buf.data(), buf.size(), off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf.data(), static_cast<std::size_t>(n));
    off += n;
  }
  close(fd);
  if (data.size() > max_bytes) data.erase(0, data.size() - max_bytes);  // it grew meanwhile
  return WriteFile(rel, data);
}

void Bundle::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
}

std::vector<std::string> Bundle::WriteErrors() const {
  std::lock_guard lock(mu_);
  return errors_;
}

Status WriteTarGz(const std::string& dir, const std::string& prefix, const std::string& out_path) {
  // A new file only: an existing name or a planted symlink is an error, never truncated.
  auto created = CreateNewFile(out_path, kPrivateFile);
  if (!created.ok()) return created.error();
  const int fd = *created;
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  std::string err;
  if (archive_write_open_fd(a, fd) != ARCHIVE_OK) err = archive_error_string(a);
  std::vector<fs::path> paths;
  std::error_code ec;
  if (err.empty()) {
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      paths.push_back(it->path());
    }
    if (ec) err = "cannot list " + dir + ": " + ec.message();
    std::sort(paths.begin(), paths.end());
  }
  std::vector<char> buf(1 << 16);
  for (const fs::path& p : paths) {
    if (!err.empty()) break;
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
    archive_entry* e = archive_entry_new();
    std::string rel = fs::relative(p, dir).string();
    archive_entry_set_pathname(e, (prefix + "/" + rel).c_str());
    archive_entry_set_filetype(e, S_ISDIR(st.st_mode) ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(e, S_ISDIR(st.st_mode) ? 0700 : 0600);
    archive_entry_set_size(e, S_ISREG(st.st_mode) ? st.st_size : 0);
    archive_entry_set_mtime(e, st.st_mtime, 0);
    if (archive_write_header(a, e) != ARCHIVE_OK) err = archive_error_string(a);
    if (err.empty() && S_ISREG(st.st_mode)) {
      int in = open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (in < 0) {
        err = Errno("cannot read", p.string());
      } else {
        ssize_t n;
        while ((n = read(in, buf.data(), buf.size())) > 0) {
          if (archive_write_data(a, buf.data(), static_cast<std::size_t>(n)) < 0) {
            err = archive_error_string(a);
            break;
          }
        }
        close(in);
      }
    }
    archive_entry_free(e);
  }
  if (archive_write_close(a) != ARCHIVE_OK && err.empty()) {
    err = archive_error_string(a) ? archive_error_string(a) : "archive close failed";
  }
  archive_write_free(a);
  if (close(fd) != 0 && err.empty()) err = Errno("cannot close", out_path);
  if (!err.empty()) {
    unlink(out_path.c_str());
    return MakeError(fmt::format("cannot write {}: {}", out_path, err), out_path,
                     "check free space in the run directory (df -h)");
  }
  return OkStatus();
}

Status Bundle::Finish() {
  Close();
  auto errors = WriteErrors();
  if (!errors.empty()) {
    return MakeError(
        fmt::format("{} file(s) could not be written, first: {}", errors.size(), errors.front()),
        partial_dir_, "free space in the run directory (df -h) or make it writable");
  }
  std::string tar_partial = run_dir_ + "/." + name_ + ".tar.gz.partial";
  if (auto s = WriteTarGz(partial_dir_, name_, tar_partial); !s.ok()) return s;
  if (rename(partial_dir_.c_str(), final_dir().c_str()) != 0) {
    std::string msg = Errno("cannot rename to", final_dir());
    unlink(tar_partial.c_str());
    return MakeError(msg, partial_dir_);
  }
  if (rename(tar_partial.c_str(), final_tar().c_str()) != 0) {
    std::string msg = Errno("cannot rename to", final_tar());
    unlink(tar_partial.c_str());
    return MakeError(msg, tar_partial);
  }
  return OkStatus();
}

}  // namespace sl::hang
