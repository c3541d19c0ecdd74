#include "common/file_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "common/strings.h"

namespace sl {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

std::string FixFor(int err) {
  if (err == EACCES || err == EPERM) return "run as a user allowed to read it (or as root)";
  if (err == ENOENT) return "check the path exists on this node (or in the --sysroot tree)";
  return {};
}

}  // namespace

std::string JoinPath(std::string_view a, std::string_view b) {
  std::string out(a);
  if (out.empty() || out.back() != '/') out.push_back('/');
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  out.append(b);
  return out;
}

RootedFileReader::RootedFileReader(std::string root, ResolveMode mode)
    : root_(std::move(root)), mode_(mode) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string RootedFileReader::HostPath(std::string_view path) const {
  if (root_.empty()) return std::string(path);
  return JoinPath(root_, path);
}

namespace {

// Closes an fd on every return path.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// openat2(2) with RESOLVE_IN_ROOT: the kernel resolves `rel` as if `root_fd` were "/". -1 with
// errno ENOSYS where the kernel (< 5.6) or a seccomp filter does not offer it.
int OpenAt2InRoot(int root_fd, const std::string& rel, int flags) {
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (;;) {
    long fd = ::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how);
    // EAGAIN: a concurrent rename under the root made the kernel give up; try again.
    if (fd < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    // Containers' seccomp filters often answer EPERM for syscalls they do not know.
    if (fd < 0 && errno == EPERM) errno = ENOSYS;
    return static_cast<int>(fd);
  }
#else
  (void)root_fd, (void)rel, (void)flags;
  errno = ENOSYS;
  return -1;
#endif
}

// The user-space form of RESOLVE_IN_ROOT: walks `path` component by component from `root_fd`,
// expanding symlinks (an absolute target restarts at the root, ".." never climbs above it) and
// returns the path relative to the root that holds no symlink (the last component excepted when
// `follow_last` is false) and no "..". A missing component is kept: the open reports it.
Result<std::string> WalkInRoot(int root_fd, std::string_view path, bool follow_last) {
  constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS
  std::vector<std::string> done;
  std::deque<std::string> todo;
  for (const auto& c : Split(path, '/')) todo.push_back(c);
  int links = 0;
  while (!todo.empty()) {
    std::string comp = std::move(todo.front());
    todo.pop_front();
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::string candidate;
    for (const auto& d : done) candidate += d + "/";
    candidate += comp;
    struct stat st {};
    const bool last = todo.empty();
    if (::fstatat(root_fd, candidate.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISLNK(st.st_mode) || (last && !follow_last)) {
      done.push_back(std::move(comp));
      continue;
    }
    if (++links > kMaxLinks) return MakeError(ErrnoText(ELOOP));
    char buf[4096];
    ssize_t n = ::readlinkat(root_fd, candidate.c_str(), buf, sizeof buf);
    if (n < 0) return MakeError(ErrnoText(errno));
    std::string_view target(buf, static_cast<std::size_t>(n));
    if (!target.empty() && target.front() == '/') done.clear();
    auto parts = Split(target, '/');
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  std::string rel;
  for (const auto& d : done) rel += (rel.empty() ? "" : "/") + d;
  return rel.empty() ? std::string(".") : rel;
}

}  // namespace

int RootedFileReader::Open(std::string_view path, int flags, bool follow_last) const {
  flags |= O_CLOEXEC | (follow_last ? 0 : O_NOFOLLOW);
  if (root_.empty()) return ::open(std::string(path).c_str(), flags);
  Fd root(::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0) return -1;
  std::string rel(path);
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  if (rel.empty()) rel = ".";
  if (mode_ == ResolveMode::kAuto) {
    int fd = OpenAt2InRoot(root.fd, rel, flags);
    if (fd >= 0 || errno != ENOSYS) return fd;
  }
  auto walked = WalkInRoot(root.fd, rel, follow_last);
  if (!walked.ok()) {
    errno = ELOOP;
    return -1;
  }
  // The walk left no symlink to follow: O_NOFOLLOW turns one swapped in meanwhile into ELOOP.
  return ::openat(root.fd, walked->c_str(), flags | (follow_last ? O_NOFOLLOW : 0));
}

Result<std::string> RootedFileReader::ReadFile(std::string_view path, std::size_t max_bytes) const {
  const std::string host = HostPath(path);
  // O_NONBLOCK: /dev/kmsg returns one record per read() and EAGAIN at the end of its ring
  // instead of blocking; for regular and sysfs files it changes nothing.
  int fd = Open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    return MakeError("cannot open: " + ErrnoText(err), host, FixFor(err));
  }
  std::string out;
  char buf[16384];
  while (out.size() < max_bytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(std::min<std::size_t>(n, max_bytes - out.size())));
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) break;    // end of /dev/kmsg ring buffer
    if (errno == EPIPE) continue;  // /dev/kmsg: records overwritten while reading; go on
    int err = errno;
    ::close(fd);
    if (err == EISDIR) return MakeError("is a directory, expected a file", host);
    return MakeError("cannot read: " + ErrnoText(err), host, FixFor(err));
  }
  ::close(fd);
  return out;
}

Result<std::vector<std::string>> RootedFileReader::ListDir(std::string_view path) const {
  const std::string host = HostPath(path);
  int fd = Open(path, O_RDONLY | O_DIRECTORY);
  DIR* dir = fd < 0 ? nullptr : ::fdopendir(fd);
  if (dir == nullptr) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    return MakeError("cannot list directory: " + ErrnoText(err), host, FixFor(err));
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> RootedFileReader::ReadLink(std::string_view path) const {
  const std::string host = HostPath(path);
  // The link itself (O_PATH|O_NOFOLLOW), found through its resolved parent; readlinkat(fd, "")
  // reads it.
  Fd fd(Open(path, O_PATH, /*follow_last=*/false));
  char buf[4096];
  ssize_t n = -1;
  struct stat st {};
  if (fd.fd >= 0 && ::fstat(fd.fd, &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      n = ::readlinkat(fd.fd, "", buf, sizeof buf - 1);
    } else {
      errno = EINVAL;  // as readlink(2) says for a path that is not a symlink
    }
  }
  if (n < 0) {
    int err = errno;
    return MakeError("cannot read link: " + ErrnoText(err), host, FixFor(err));
  }
  return std::string(buf, static_cast<std::size_t>(n));
}

bool RootedFileReader::Exists(std::string_view path) const {
  Fd fd(Open(path, O_PATH));
  return fd.fd >= 0;
}

bool RootedFileReader::IsDir(std::string_view path) const {
  Fd fd(Open(path, O_PATH));
  struct stat st {};
  return fd.fd >= 0 && ::fstat(fd.fd, &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::uint64_t> RootedFileReader::FsSizeBytes(std::string_view path) const {
  if (!root_.empty()) {
    return MakeError("filesystem size is not available inside a --sysroot tree", HostPath(path));
  }
  struct statvfs st;
  if (::statvfs(std::string(path).c_str(), &st) != 0) {
    int err = errno;
    return MakeError("statvfs failed: " + ErrnoText(err), std::string(path), FixFor(err));
  }
  return static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
}

MemFileReader& MemFileReader::AddFile(std::string path, std::string content) {
  for (std::size_t pos = path.find('/', 1); pos != std::string::npos;
       pos = path.find('/', pos + 1)) {
    dirs_[path.substr(0, pos)] = true;
  }
  dirs_["/"] = true;
  files_[std::move(path)] = std::move(content);
  return *this;
}

MemFileReader& MemFileReader::AddDir(std::string path) {
  AddFile(JoinPath(path, ".keep"), "");
  files_.erase(JoinPath(path, ".keep"));
  dirs_[std::move(path)] = true;
  return *this;
}

MemFileReader& MemFileReader::AddLink(std::string path, std::string target) {
  AddFile(path, "");
  files_.erase(path);
  links_[std::move(path)] = std::move(target);
  return *this;
}

Result<std::string> MemFileReader::ReadFile(std::string_view path, std::size_t max_bytes) const {
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (dirs_.count(path)) return MakeError("is a directory, expected a file", std::string(path));
    return MakeError("cannot open: No such file or directory", std::string(path));
  }
  return it->second.substr(0, max_bytes);
}

Result<std::vector<std::string>> MemFileReader::ListDir(std::string_view path) const {
  if (!dirs_.count(path)) {
    return MakeError("cannot list directory: No such file or directory", std::string(path));
  }
  std::string prefix = JoinPath(path, "");
  std::vector<std::string> names;
  auto collect = [&](const auto& map) {
    for (const auto& [p, _] : map) {
      if (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0 &&
          p.find('/', prefix.size()) == std::string::npos) {
        names.push_back(p.substr(prefix.size()));
      }
    }
  };
  collect(files_);
  collect(dirs_);
  collect(links_);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<std::string> MemFileReader::ReadLink(std::string_view path) const {
  auto it = links_.find(path);
  if (it == links_.end()) return MakeError("cannot read link: Invalid argument", std::string(path));
  return it->second;
}

bool MemFileReader::Exists(std::string_view path) const {
  return files_.count(path) || dirs_.count(path) || links_.count(path);
}

bool MemFileReader::IsDir(std::string_view path) const { return dirs_.count(path) > 0; }

Result<BoundedText> ReadFileBounded(const FileReader& fs, std::string_view path,
                                    std::size_t max_bytes) {
  auto text = fs.ReadFile(path, max_bytes + 1);
  if (!text.ok()) return text.error();
  BoundedText out;
  out.truncated = text->size() > max_bytes;
  if (out.truncated) text->resize(max_bytes);
  out.text = std::move(*text);
  return out;
}

Result<std::uint64_t> MemFileReader::FsSizeBytes(std::string_view path) const {
  return MakeError("filesystem size is not available in an in-memory tree", std::string(path));
}

}  // namespace sl
