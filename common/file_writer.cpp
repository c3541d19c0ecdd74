#include "common/file_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sl {
namespace {

std::string WriteErrnoText(int err) { return std::strerror(err); }

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

// Opens `dir` for *at() calls without following a symlink at its last component.
Result<int> OpenDirNoFollow(const std::string& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd >= 0) return dfd;
  int err = errno;
  struct stat st {};
  bool is_link = ::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  return MakeError("cannot open the directory to write into: " + WriteErrnoText(err), dir,
                   is_link ? "the directory is a symlink (not followed): use a real directory"
                           : WriteFixForErrno(err));
}

// Writes and closes `fd`; on failure unlinks dfd/name. Returns 0 or the errno.
int FillAndClose(int fd, std::string_view content, int dfd, const std::string& name) {
  bool ok = WriteAll(fd, content);
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) ::unlinkat(dfd, name.c_str(), 0);
  return err;
}

struct SplitPath {
  std::string dir, base;
};
SplitPath SplitDirBase(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

Status DiskFileWriter::WriteAtomic(const std::string& path, std::string_view content,
                                   mode_t mode) const {
  auto [dir, base] = SplitDirBase(path);
  if (base.empty() || base == "." || base == "..") {
    return MakeError("not a file name", path, "name a file, not a directory");
  }
  auto opened = OpenDirNoFollow(dir);
  if (!opened.ok()) return opened.error();
  const int dfd = *opened;
  std::string tmp = "." + base + ".tmp." + RandomSuffix();
  int fd = ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    ::close(dfd);
    return MakeError("cannot create a file: " + WriteErrnoText(err), dir + "/" + tmp,
                     WriteFixForErrno(err));
  }
  int err = FillAndClose(fd, content, dfd, tmp);
  if (err == 0 && ::renameat(dfd, tmp.c_str(), dfd, base.c_str()) != 0) {
    err = errno;
    ::unlinkat(dfd, tmp.c_str(), 0);
  }
  ::close(dfd);
  if (err != 0)
    return MakeError("cannot write: " + WriteErrnoText(err), path, WriteFixForErrno(err));
  return OkStatus();
}

const FileWriter& DiskWriter() {
  static const DiskFileWriter writer;
  return writer;
}

Status WriteFileAtomic(const std::string& path, std::string_view content, mode_t mode) {
  return DiskWriter().WriteAtomic(path, content, mode);
}

Result<std::string> WriteUniqueFile(const std::string& dir, const std::string& prefix,
                                    const std::string& suffix, std::string_view content,
                                    mode_t mode) {
  if (prefix.find('/') != std::string::npos || suffix.find('/') != std::string::npos) {
    return MakeError("a file name part holds '/'", prefix + "*" + suffix, "pass a plain name");
  }
  auto opened = OpenDirNoFollow(dir.empty() ? "." : dir);
  if (!opened.ok()) return opened.error();
  const int dfd = *opened;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string name = prefix + RandomSuffix() + suffix;
    int fd =
        ::openat(dfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) continue;  // someone holds that name: draw another
    if (fd < 0) {
      int err = errno;
      ::close(dfd);
      return MakeError("cannot create a file: " + WriteErrnoText(err), dir + "/" + name,
                       WriteFixForErrno(err));
    }
    int err = FillAndClose(fd, content, dfd, name);
    ::close(dfd);
    if (err != 0) {
      return MakeError("cannot write: " + WriteErrnoText(err), dir + "/" + name,
                       WriteFixForErrno(err));
    }
    return dir + "/" + name;
  }
  ::close(dfd);
  return MakeError("no free unique name after 16 tries", dir, "clean up the directory");
}

std::string WriteFixForErrno(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
      return "make the directory writable for this user, or write elsewhere";
    case EROFS:
      return "the file system is read-only; write elsewhere";
    case ENOSPC:
    case EDQUOT:
      return "the file system is full (or over quota); free space (df -h) or write elsewhere";
    case ELOOP:
      return "a symlink is in the way (never followed): remove it or use a fresh directory";
    default:
      return "";
  }
}

Result<int> CreateNewFile(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    return MakeError("cannot create a new file: " + WriteErrnoText(err), path,
                     err == EEXIST ? "it already exists (or is a symlink): remove it or use a "
                                     "fresh directory"
                                   : WriteFixForErrno(err));
  }
  return fd;
}

Status AppendRecord(const std::string& path, std::string_view record, mode_t mode) {
  int fd =
      ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    return MakeError("cannot open to append: " + WriteErrnoText(err), path, WriteFixForErrno(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return MakeError("not a regular file: not appended to", path);
  }
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      int err = errno;
      ::close(fd);
      return MakeError("cannot lock: " + WriteErrnoText(err), path);
    }
  }
  std::string out;
  out.reserve(record.size() + 2);
  // The last byte, read under the lock (pread ignores O_APPEND).
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    char last = '\n';
    if (::pread(fd, &last, 1, st.st_size - 1) != 1) last = '\n';
    if (last != '\n') out.push_back('\n');
  }
  out.append(record);
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  // One write(2): with O_APPEND the kernel places it at the end atomically against other
  // appenders, and the lock keeps a reader of the whole file from seeing half of it.
  ssize_t n = -1;
  do {
    n = ::write(fd, out.data(), out.size());
  } while (n < 0 && errno == EINTR);
  int err = errno;
  Status result = OkStatus();
  if (n != static_cast<ssize_t>(out.size())) {
    result =
        MakeError(n < 0 ? "cannot append: " + WriteErrnoText(err) : "short append (disk full?)",
                  path, n < 0 ? WriteFixForErrno(err) : "");
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return result;
}

}  // namespace sl
