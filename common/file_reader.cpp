#include "common/file_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

RootedFileReader::RootedFileReader(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string RootedFileReader::HostPath(std::string_view path) const {
  if (root_.empty()) return std::string(path);
  return JoinPath(root_, path);
}

Result<std::string> RootedFileReader::ReadFile(std::string_view path, std::size_t max_bytes) const {
  const std::string host = HostPath(path);
  // O_NONBLOCK: /dev/kmsg returns one record per read() and EAGAIN at the end of its ring
  // instead of blocking; for regular and sysfs files it changes nothing.
  int fd = ::open(host.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
  DIR* dir = ::opendir(host.c_str());
  if (dir == nullptr) {
    int err = errno;
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
  char buf[4096];
  ssize_t n = ::readlink(host.c_str(), buf, sizeof buf - 1);
  if (n < 0) {
    int err = errno;
    return MakeError("cannot read link: " + ErrnoText(err), host, FixFor(err));
  }
  return std::string(buf, static_cast<std::size_t>(n));
}

bool RootedFileReader::Exists(std::string_view path) const {
  struct stat st;
  return ::stat(HostPath(path).c_str(), &st) == 0;
}

bool RootedFileReader::IsDir(std::string_view path) const {
  struct stat st;
  return ::stat(HostPath(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
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

Result<std::uint64_t> MemFileReader::FsSizeBytes(std::string_view path) const {
  return MakeError("filesystem size is not available in an in-memory tree", std::string(path));
}

}  // namespace sl
