#include "common/file_writer.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sl {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

/// 16 hex digits from getrandom(2); a counter mixed with the pid where it is unavailable.
std::string RandomSuffix() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    static unsigned counter = 0;
    unsigned long v = (static_cast<unsigned long>(::getpid()) << 20) ^ ++counter;
    std::memcpy(bytes, &v, sizeof bytes);
  }
  char out[17];
  for (int i = 0; i < 8; ++i) std::snprintf(out + 2 * i, 3, "%02x", bytes[i]);
  return out;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

struct SplitPath {
  std::string dir, base;
};
SplitPath Split(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

Status DiskFileWriter::WriteAtomic(const std::string& path, std::string_view content,
                                   mode_t mode) const {
  auto [dir, base] = Split(path);
  if (base.empty() || base == "." || base == "..") {
    return MakeError("not a file name", path, "name a file, not a directory");
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    int err = errno;
    struct stat st {};
    bool is_link = ::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
    return MakeError(
        "cannot open the directory to write into: " + ErrnoText(err), dir,
        is_link ? "the directory is a symlink (not followed): use a real directory" : "");
  }
  std::string tmp = "." + base + ".tmp." + RandomSuffix();
  int fd = ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    ::close(dfd);
    return MakeError("cannot create a file: " + ErrnoText(err), dir + "/" + tmp);
  }
  bool ok = WriteAll(fd, content);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::renameat(dfd, tmp.c_str(), dfd, base.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) ::unlinkat(dfd, tmp.c_str(), 0);
  ::close(dfd);
  if (!ok) return MakeError("cannot write: " + ErrnoText(err), path);
  return OkStatus();
}

Status MemFileWriter::WriteAtomic(const std::string& path, std::string_view content,
                                  mode_t mode) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (failing_) return MakeError("cannot write: No space left on device", path);
  files_[path] = File{std::string(content), mode};
  return OkStatus();
}

std::map<std::string, MemFileWriter::File> MemFileWriter::Files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_;
}

void MemFileWriter::SetFailing(bool fail) {
  std::lock_guard<std::mutex> lock(mu_);
  failing_ = fail;
}

const FileWriter& DiskWriter() {
  static const DiskFileWriter writer;
  return writer;
}

Status WriteFileAtomic(const std::string& path, std::string_view content, mode_t mode) {
  return DiskWriter().WriteAtomic(path, content, mode);
}

Result<int> CreateNewFile(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    return MakeError("cannot create a new file: " + ErrnoText(err), path,
                     err == EEXIST ? "it already exists (or is a symlink): remove it or use a "
                                     "fresh directory"
                                   : "");
  }
  return fd;
}

}  // namespace sl
