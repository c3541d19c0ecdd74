#include "common/input_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/file_reader.h"
#include "common/strings.h"
#include "common/timed_read.h"

namespace sl {

namespace {

using Clock = std::chrono::steady_clock;
// One read() of at most 1 MiB that returns nothing for this long is stuck, not slow.
constexpr auto kReadStall = std::chrono::seconds(60);

std::string Errno(int err) { return std::strerror(err); }

std::string TypeName(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link, not followed";
  if (S_ISFIFO(mode)) return "a FIFO, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device, not a regular file";
  if (S_ISSOCK(mode)) return "a socket, not a regular file";
  if (S_ISDIR(mode)) return "a directory, expected a file";
  return "not a regular file";
}

std::string SizeText(std::uint64_t n) {
  if (n >= (std::uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(n) / (1 << 30));
  if (n >= (std::uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", double(n) / (1 << 20));
  return fmt::format("{} bytes", n);
}

std::uint64_t CapOf(const InputRule& rule) {
  return rule.max_bytes != 0 ? rule.max_bytes : InputCap(rule.kind);
}

// Whose files a read that the user did not name takes: the caller's own and the trusted uid's
// (the owner of the directory the user named). A third user's file planted in the tree is not
// read. (A hard link to a file of the caller's, root's /etc/shadow, cannot be planted by another
// user where fs.protected_hardlinks is 1, every distribution's default.)
bool OwnerTrusted(uid_t uid, uid_t trusted) {
  const uid_t me = ::geteuid();
  return uid == me || (trusted != static_cast<uid_t>(-1) && uid == trusted);
}

// The checks on an open descriptor; `fd` is closed on error.
Result<InputFile> Admit(int fd, const std::string& display, const InputRule& rule) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return MakeError("cannot stat: " + Errno(err), display);
  }
  auto refuse = [&](std::string why) -> Result<InputFile> {
    ::close(fd);
    return MakeError(std::move(why), display);
  };
  if (!S_ISREG(st.st_mode)) return refuse(TypeName(st.st_mode));
  if (!rule.explicit_path && !OwnerTrusted(st.st_uid, rule.trusted_uid)) {
    return refuse(
        fmt::format("owned by uid {}, another user: not read unless named explicitly", st.st_uid));
  }
  const std::uint64_t cap = CapOf(rule);
  if (static_cast<std::uint64_t>(st.st_size) > cap) {
    return refuse(fmt::format("{}, over the {} cap for this kind of file",
                              SizeText(static_cast<std::uint64_t>(st.st_size)), SizeText(cap)));
  }
  // Back to blocking reads: O_NONBLOCK was only for the open (a FIFO's open waits for a writer).
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return InputFile(fd, static_cast<std::uint64_t>(st.st_size), display, rule);
}

constexpr int kOpenFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

// Why an open failed; ELOOP from O_NOFOLLOW means the last component is a link.
std::string OpenError(int err) {
  if (err == ELOOP) return "a symbolic link, not followed (name its target)";
  if (err == ENXIO) return "a socket or FIFO without a writer, not a regular file";
  return "cannot open: " + Errno(err);
}

bool SafeComponent(std::string_view c) { return !c.empty() && c != "." && c != ".."; }

}  // namespace

std::uint64_t InputCap(InputKind kind) {
  switch (kind) {
    case InputKind::kLog:
      return std::uint64_t(16) << 30;  // streamed, never held whole
    case InputKind::kDump:
      return std::uint64_t(4) << 30;
    case InputKind::kManifest:
      return std::uint64_t(8) << 20;
    case InputKind::kEvent:
      return std::uint64_t(64) << 10;
    case InputKind::kHistory:
      return std::uint64_t(64) << 20;
    case InputKind::kImport:
      return std::uint64_t(256) << 20;
  }
  return std::uint64_t(64) << 20;
}

std::chrono::milliseconds InputDeadline(InputKind kind) {
  using std::chrono::seconds;
  switch (kind) {
    case InputKind::kLog:
      return seconds(600);  // 16 GiB at ~30 MB/s off a slow shared file system
    case InputKind::kDump:
      return seconds(120);
    default:
      return seconds(10);
  }
}

InputFile::InputFile(int fd, std::uint64_t size, std::string display, const InputRule& rule)
    : fd_(fd),
      size_(size),
      cap_(CapOf(rule)),
      deadline_(Clock::now() +
                (rule.deadline.count() > 0 ? rule.deadline : InputDeadline(rule.kind))),
      display_(std::move(display)) {}

InputFile::InputFile(InputFile&& o) noexcept { *this = std::move(o); }

InputFile& InputFile::operator=(InputFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    read_ = o.read_;
    cap_ = o.cap_;
    deadline_ = o.deadline_;
    display_ = std::move(o.display_);
    o.fd_ = -1;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

template <typename ReadFn>
Result<std::size_t> InputFile::TimedReadChecked(ReadFn read) {
  if (fd_ < 0) return MakeError("not open", display_);
  if (Clock::now() > deadline_) {
    return MakeError("reading took longer than its deadline (a hung file system?)", display_);
  }
  // On a helper thread: a read() stuck on a dead NFS server (uninterruptible, poll says
  // readable) ends at the deadline, or after kReadStall without a byte, whichever is first.
  const auto start = Clock::now();
  Result<TimedReadResult> got = read(std::min(deadline_, start + kReadStall));
  if (!got.ok()) return MakeError("cannot read: " + got.error().message, display_, got.error().fix);
  if (got->timed_out) {
    fd_ = -1;  // the stuck helper owns it now and closes it if the read ever returns
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    return MakeError(
        fmt::format("timed out reading after {:.1f} s: read() did not return (a hung network "
                    "file system?); {} read(s) stuck now",
                    waited, StuckReads()),
        display_,
        "check the file system holding it (`stat -f`, dmesg 'server not responding'); copy the "
        "file to a local disk and read that copy");
  }
  read_ += got->bytes;
  if (read_ > cap_) {
    return MakeError(fmt::format("grew past the {} cap while being read", SizeText(cap_)),
                     display_);
  }
  return got->bytes;
}

Result<std::size_t> InputFile::Read(char* buf, std::size_t n) {
  return TimedReadChecked(
      [&](Clock::time_point deadline) { return TimedRead(fd_, buf, n, deadline); });
}

Result<std::size_t> InputFile::Read(const std::shared_ptr<char[]>& buf, std::size_t offset,
                                    std::size_t n) {
  return TimedReadChecked(
      [&](Clock::time_point deadline) { return TimedRead(fd_, buf, offset, n, deadline); });
}

Result<std::string> InputFile::ReadAll() {
  std::string out;
  // One allocation of the size fstat gave (a 1.5 GB dump is not copied per doubling); the cap
  // was checked on that size.
  out.resize(static_cast<std::size_t>(size_ > read_ ? size_ - read_ : 0) + 1);
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.size() + (std::size_t(1) << 16));
    auto n = Read(out.data() + used, out.size() - used);
    if (!n.ok()) return n.error();
    if (*n == 0) break;
    used += *n;
  }
  out.resize(used);
  return out;
}

Result<InputBytes> InputFile::ReadAllBytes() {
  InputBytes out;
  // new char[] leaves the bytes uninitialised; the helper reads straight into them (the buffer
  // is shared with it, so a read abandoned at the deadline writes only to memory given up).
  std::size_t capacity = static_cast<std::size_t>(size_ > read_ ? size_ - read_ : 0) + 1;
  out.data = std::shared_ptr<char[]>(new char[capacity]);
  for (;;) {
    if (out.size == capacity) {  // the file grew since fstat: a bigger buffer, the bytes moved
      std::size_t bigger = capacity + (std::size_t(1) << 16) + capacity / 2;
      std::shared_ptr<char[]> next(new char[bigger]);
      std::memcpy(next.get(), out.data.get(), out.size);
      out.data = std::move(next);
      capacity = bigger;
    }
    auto n = Read(out.data, out.size, capacity - out.size);
    if (!n.ok()) return n.error();
    if (*n == 0) break;
    out.size += *n;
  }
  return out;
}

Result<InputFile> OpenInput(const std::string& path, const InputRule& rule) {
  int fd = ::open(path.c_str(), kOpenFlags);
  if (fd < 0) return MakeError(OpenError(errno), path);
  return Admit(fd, path, rule);
}

Result<InputFile> OpenInputUnder(const std::string& root, std::string_view rel,
                                 const InputRule& rule) {
  const std::string display = JoinPath(root, rel);
  int dfd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return MakeError("cannot open directory: " + Errno(errno), root);
  std::vector<std::string> parts;
  for (const std::string& c : Split(rel, '/')) {
    if (c.empty() || c == ".") continue;
    if (!SafeComponent(c)) {
      ::close(dfd);
      return MakeError("'..' in a path below the root", display);
    }
    parts.push_back(c);
  }
  if (parts.empty()) {
    ::close(dfd);
    return MakeError("no file name", display);
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(dfd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    ::close(dfd);
    if (next < 0) {
      return MakeError(err == ELOOP || err == ENOTDIR
                           ? fmt::format("{} is a symbolic link or not a directory", parts[i])
                           : "cannot open: " + Errno(err),
                       display);
    }
    dfd = next;
  }
  int fd = ::openat(dfd, parts.back().c_str(), kOpenFlags);
  int err = errno;
  ::close(dfd);
  if (fd < 0) return MakeError(OpenError(err), display);
  return Admit(fd, display, rule);
}

Result<std::string> ReadInputFile(const std::string& path, const InputRule& rule) {
  auto f = OpenInput(path, rule);
  if (!f.ok()) return f.error();
  return f->ReadAll();
}

Result<std::string> ReadInputUnder(const std::string& root, std::string_view rel,
                                   const InputRule& rule) {
  auto f = OpenInputUnder(root, rel, rule);
  if (!f.ok()) return f.error();
  return f->ReadAll();
}

Result<InputBytes> ReadInputFileBytes(const std::string& path, const InputRule& rule) {
  auto f = OpenInput(path, rule);
  if (!f.ok()) return f.error();
  return f->ReadAllBytes();
}

Result<InputBytes> ReadInputUnderBytes(const std::string& root, std::string_view rel,
                                       const InputRule& rule) {
  auto f = OpenInputUnder(root, rel, rule);
  if (!f.ok()) return f.error();
  return f->ReadAllBytes();
}

namespace {

struct Walker {
  const WalkOptions& opt;
  WalkResult* out;
  std::string root;

  void Dir(int dfd, const std::string& rel, int depth) {
    DIR* d = ::fdopendir(dfd);
    if (d == nullptr) {
      out->unreadable_dirs.push_back(JoinPath(root, rel) + ": " + Errno(errno));
      ::close(dfd);
      return;
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    std::sort(names.begin(), names.end());
    const int fd = ::dirfd(d);
    for (const std::string& n : names) {
      const std::string child = rel.empty() ? n : rel + "/" + n;
      const std::string path = JoinPath(root, child);
      struct stat st {};
      if (::fstatat(fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        out->skipped.push_back(path + ": " + Errno(errno));
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        if (std::find(opt.skip_dirs.begin(), opt.skip_dirs.end(), n) != opt.skip_dirs.end()) {
          continue;
        }
        if (depth >= opt.max_depth) {
          out->skipped.push_back(path + ": deeper than " + std::to_string(opt.max_depth) +
                                 " levels, not entered");
          continue;
        }
        int sub = ::openat(fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
          out->unreadable_dirs.push_back(path + ": " + Errno(errno));
          continue;
        }
        Dir(sub, child, depth + 1);
        continue;
      }
      if (!S_ISREG(st.st_mode)) {
        out->skipped.push_back(path + ": " + TypeName(st.st_mode));
        continue;
      }
      if (!OwnerTrusted(st.st_uid, out->owner)) {
        out->skipped.push_back(fmt::format(
            "{}: owned by uid {}, neither yours nor the directory owner's (uid {}): not read", path,
            st.st_uid, out->owner));
        continue;
      }
      if (out->files.size() >= opt.max_files) {
        out->skipped.push_back(path + ": past " + std::to_string(opt.max_files) + " files");
        continue;
      }
      out->files.push_back({path, child, static_cast<std::uint64_t>(st.st_size)});
    }
    ::closedir(d);
  }
};

}  // namespace

Result<WalkResult> WalkInputs(const std::string& root, const WalkOptions& options) {
  int dfd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return MakeError("cannot open directory: " + Errno(errno), root);
  struct stat st {};
  if (::fstat(dfd, &st) != 0) {
    int err = errno;
    ::close(dfd);
    return MakeError("cannot stat: " + Errno(err), root);
  }
  WalkResult out;
  out.owner = st.st_uid;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  Walker w{options, &out, r};
  w.Dir(dfd, "", 0);
  std::sort(out.files.begin(), out.files.end(),
            [](const WalkedFile& a, const WalkedFile& b) { return a.path < b.path; });
  return out;
}

InputTreeReader::InputTreeReader(const std::vector<std::string>& roots) {
  for (std::string r : roots) {
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    struct stat st {};
    if (::stat(r.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) roots_.emplace_back(r, st.st_uid);
  }
}

Result<std::string> InputTreeReader::ReadFile(std::string_view path, std::size_t max_bytes) const {
  InputRule rule = InputRule::Named(InputKind::kManifest);
  rule.max_bytes = max_bytes;
  for (const auto& [root, uid] : roots_) {
    if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
        path[root.size()] == '/') {
      rule.explicit_path = false;
      rule.trusted_uid = uid;
      return ReadInputUnder(root, path.substr(root.size() + 1), rule);
    }
  }
  return ReadInputFile(std::string(path), rule);
}

Result<std::vector<std::string>> InputTreeReader::ListDir(std::string_view path) const {
  const std::string p(path);
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | (IsRoot(path) ? 0 : O_NOFOLLOW) | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    return MakeError("cannot list directory: " + Errno(err), p);
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> InputTreeReader::ReadLink(std::string_view path) const {
  return MakeError("links in an input tree are not followed", std::string(path));
}

bool InputTreeReader::IsRoot(std::string_view path) const {
  for (const auto& r : roots_) {
    if (r.first == path) return true;
  }
  return false;
}

// A root was named by the user and is followed as named; nothing below it is.
bool InputTreeReader::Exists(std::string_view path) const {
  struct stat st {};
  const std::string p(path);
  return (IsRoot(path) ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st)) == 0 &&
         !S_ISLNK(st.st_mode);
}

bool InputTreeReader::IsDir(std::string_view path) const {
  struct stat st {};
  const std::string p(path);
  return (IsRoot(path) ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st)) == 0 &&
         S_ISDIR(st.st_mode);
}

Result<std::uint64_t> InputTreeReader::FsSizeBytes(std::string_view path) const {
  return MakeError("not available for an input tree", std::string(path));
}

}  // namespace sl
