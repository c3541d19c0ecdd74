#include "watchdog/watch/reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/strings.h"

namespace sl::watch {
namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

double Mtime(const struct stat& st) { return st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9; }

std::string Sig(const struct stat& st) {
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

const char* KindOf(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link, not followed";
  if (S_ISFIFO(m)) return "a FIFO, not read";
  if (S_ISSOCK(m)) return "a socket, not read";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device, not read";
  if (S_ISDIR(m)) return "a directory, not a file";
  return "not a regular file, not read";
}

FileRead Problem(const std::string& name, std::string why) {
  FileRead f;
  f.state = FileRead::State::kProblem;
  f.name = name;
  f.problem = std::move(why);
  return f;
}

// Reads up to `cap` bytes of an open regular file (its last `cap` with `tail`).
void ReadOpen(int fd, const struct stat& st, std::size_t cap, bool tail, FileRead* f) {
  const auto size = static_cast<std::size_t>(st.st_size);
  off_t at = tail && size > cap ? static_cast<off_t>(size - cap) : 0;
  f->truncated = size > cap;
  if (f->truncated && !tail) return;  // a JSON file cut anywhere is no use
  f->text.resize(std::min(size, cap));
  std::size_t got = 0;
  while (got < f->text.size()) {
    ssize_t n =
        ::pread(fd, f->text.data() + got, f->text.size() - got, at + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  f->text.resize(got);
}

}  // namespace

struct RunRootReader::Cache {
  std::map<std::string, std::pair<std::string, FileRead>> files;  // path -> (stat sig, read)
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> dirs;  // listings
};

namespace {

// One file below `dirfd`, bounded, links never followed, cached by stat signature.
FileRead ReadAt(int dirfd, const std::string& key, const std::string& name, std::size_t cap,
                bool tail, RunRootReader::Cache* cache, std::string* sig_out,
                bool own_user = false) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return FileRead{.name = name};
    return Problem(name, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return Problem(name, KindOf(st.st_mode));
  if (own_user && st.st_uid != ::geteuid()) return Problem(name, "not owned by us, not trusted");
  const std::string sig = Sig(st);
  if (sig_out) *sig_out += name + "=" + sig + ";";
  auto it = cache->files.find(key);
  if (it != cache->files.end() && it->second.first == sig) return it->second.second;
  FileRead f{.state = FileRead::State::kOk, .name = name, .mtime_unix = Mtime(st)};
  if (!(cap == 0)) {
    Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (fd.fd < 0)
      return Problem(name, errno == EACCES ? "permission denied" : std::strerror(errno));
    struct stat again {};
    if (::fstat(fd.fd, &again) != 0 || !S_ISREG(again.st_mode) || again.st_ino != st.st_ino) {
      return Problem(name, "replaced while being read");
    }
    ReadOpen(fd.fd, again, cap, tail, &f);
  }
  cache->files[key] = {sig, f};
  return f;
}

// The names in an open directory (no "." or ".."), listed again only when its mtime changed.
std::vector<std::string> List(int dirfd, const std::string& key, RunRootReader::Cache* cache,
                              std::size_t max, std::string* error) {
  struct stat st {};
  if (::fstat(dirfd, &st) != 0) return {};
  const std::string sig = Sig(st);
  auto it = cache->dirs.find(key);
  if (it != cache->dirs.end() && it->second.first == sig) return it->second.second;
  std::vector<std::string> names;
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
  if (!d) {
    if (dup >= 0) ::close(dup);
    *error = std::strerror(errno);
    return {};
  }
  ::rewinddir(d);
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
    if (names.size() >= max) break;
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  cache->dirs[key] = {sig, names};
  return names;
}

int OpenDirAt(int dirfd, const std::string& name) {
  return ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

bool IsBundleName(const std::string& n, bool* complete) {
  const bool dot = StartsWith(n, ".");
  const std::string_view body = dot ? std::string_view(n).substr(1) : std::string_view(n);
  if (!StartsWith(body, "hang-") && !StartsWith(body, "failure-")) return false;
  if (EndsWith(n, ".tar.gz") || EndsWith(n, ".tar.gz.partial")) return false;
  *complete = !dot;
  return dot ? EndsWith(n, ".partial") : true;
}

void ReadBundles(int nodefd, const std::string& key, const std::vector<std::string>& names,
                 const ReaderLimits& lim, RunRootReader::Cache* cache, NodeFiles* n) {
  for (const auto& name : names) {
    bool complete = false;
    if (!IsBundleName(name, &complete) || n->bundles.size() >= lim.max_bundles) continue;
    struct stat st {};
    if (::fstatat(nodefd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
      continue;
    }
    BundleEntry b{.name = name, .complete = complete, .mtime_unix = Mtime(st)};
    if (complete) {
      Fd bfd(OpenDirAt(nodefd, name));
      if (bfd.fd >= 0) {
        b.summary = ReadAt(bfd.fd, key + "/" + name + "/summary.json", "summary.json", lim.json_cap,
                           false, cache, &n->signature);
        b.summary.name = name + "/summary.json";
      }
    }
    n->signature += name + ";";
    n->bundles.push_back(std::move(b));
  }
}

NodeFiles ReadNode(int rootfd, const std::string& name, const ReaderLimits& lim,
                   RunRootReader::Cache* cache) {
  NodeFiles n{.name = name};
  Fd fd(OpenDirAt(rootfd, name));
  if (fd.fd < 0) {
    n.problem = errno == EACCES ? "run directory not readable (permission denied)"
                                : std::string("run directory: ") + std::strerror(errno);
    return n;
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) == 0) {
    n.dir_mtime_unix = Mtime(st);
    n.signature = Sig(st) + ";";
  }
  auto read = [&](const char* file, std::size_t cap) {
    return ReadAt(fd.fd, name + "/" + file, file, cap, false, cache, &n.signature);
  };
  n.status = read("status.json", lim.json_cap);
  n.live = read("live.json", lim.json_cap);
  n.env_plan = read("env-plan.json", 0);  // presence and time only
  n.preflight = read("preflight.json", 0);
  n.heartbeat = read("heartbeat", 0);
  std::string error;
  auto names = List(fd.fd, name, cache, 4096, &error);
  if (!error.empty()) n.problem = "run directory not listable: " + error;
  ReadBundles(fd.fd, name, names, lim, cache, &n);
  return n;
}

void ReadEvents(int rootfd, const ReaderLimits& lim, RunRootReader::Cache* cache,
                RunRootFiles* out) {
  struct stat st {};
  if (::fstatat(rootfd, ".events", &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    out->rejected.push_back(std::string(".events is ") + KindOf(st.st_mode));
    return;
  }
  Fd fd(OpenDirAt(rootfd, ".events"));
  std::string error;
  auto names =
      fd.fd >= 0 ? List(fd.fd, ".events", cache, 4096, &error) : std::vector<std::string>{};
  if (fd.fd < 0 || !error.empty()) {
    out->rejected.push_back(std::string("not readable: ") + std::strerror(errno));
    return;
  }
  for (const auto& name : names) {
    if (StartsWith(name, ".") || !EndsWith(name, ".json")) continue;
    if (out->events.size() >= lim.max_events) {
      out->rejected.push_back("more than " + std::to_string(lim.max_events) +
                              " events, rest not read");
      break;
    }
    FileRead f = ReadAt(fd.fd, ".events/" + name, name, lim.event_cap, false, cache, nullptr, true);
    if (f.ok() && !f.truncated) {
      out->events.push_back(std::move(f));
    } else if (f.ok()) {
      out->rejected.push_back(name + ": over " + std::to_string(lim.event_cap) +
                              " bytes, not read");
    } else if (f.state == FileRead::State::kProblem) {
      out->rejected.push_back(name + ": " + f.problem);
    }
  }
}

}  // namespace

RunRootReader::RunRootReader(std::string root, ReaderLimits limits)
    : root_(std::move(root)), limits_(limits), cache_(std::make_unique<Cache>()) {}
RunRootReader::~RunRootReader() = default;

RunRootFiles RunRootReader::Read() {
  RunRootFiles out{.root = root_};
  Fd root(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0) {
    out.problem = errno == EACCES ? "not readable (permission denied)" : std::strerror(errno);
    return out;
  }
  std::string error;
  auto names = List(root.fd, ".", cache_.get(), limits_.max_nodes + 64, &error);
  if (!error.empty()) out.problem = "not listable: " + error;
  for (const auto& name : names) {
    if (StartsWith(name, ".")) continue;
    struct stat st {};
    if (::fstatat(root.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) continue;  // diagnosis.*, per-task verdict files
    if (out.nodes.size() >= limits_.max_nodes) {
      ++out.nodes_left_out;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      out.nodes.push_back(
          {.name = name, .problem = std::string("run directory is ") + KindOf(st.st_mode)});
      continue;
    }
    out.nodes.push_back(ReadNode(root.fd, name, limits_, cache_.get()));
  }
  ReadEvents(root.fd, limits_, cache_.get(), &out);
  out.diagnosis = ReadAt(root.fd, "diagnosis.json", "diagnosis.json", 4 * limits_.json_cap, false,
                         cache_.get(), nullptr);
  return out;
}

std::vector<std::string> RunRootReader::Tail(const std::string& node, std::size_t lines) {
  auto live = TailOf(node, {"live.tail"}, lines);
  return live.empty() ? EndTail(node, lines) : live;
}

std::vector<std::string> RunRootReader::EndTail(const std::string& node, std::size_t lines) {
  return TailOf(node, {"stdout.tail", "stderr.tail"}, lines);
}

std::vector<std::string> RunRootReader::TailOf(const std::string& node,
                                               std::initializer_list<const char*> files,
                                               std::size_t lines) {
  std::vector<std::string> out;
  Fd root(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd fd(root.fd >= 0 ? OpenDirAt(root.fd, node) : -1);
  if (fd.fd < 0) return out;
  for (const char* name : files) {
    FileRead f =
        ReadAt(fd.fd, node + "/" + name, name, limits_.tail_cap, true, cache_.get(), nullptr);
    if (f.state == FileRead::State::kProblem) out.push_back(std::string(name) + ": " + f.problem);
    if (!f.ok()) continue;
    auto all = SplitLines(f.text);
    if (f.truncated && !all.empty()) all.erase(all.begin());  // cut inside the first line
    const std::size_t from = all.size() > lines ? all.size() - lines : 0;
    for (std::size_t i = from; i < all.size(); ++i) out.push_back(Printable(all[i], 400));
  }
  return out;
}

std::string FindJobRoot(const std::string& base, const std::string& job_id, std::string* error) {
  Fd dir(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0) {
    *error = base + ": " + std::strerror(errno) +
             " (run from the job's submit directory, or give RUN_ROOT)";
    return "";
  }
  RunRootReader::Cache cache;
  std::string list_error;
  std::string best;
  double best_mtime = -1;
  for (const auto& name : List(dir.fd, base, &cache, 100000, &list_error)) {
    if (name != job_id && !StartsWith(name, job_id + ".")) continue;
    struct stat st {};
    if (::fstatat(dir.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      continue;
    if (name == job_id) return base + "/" + name;
    if (Mtime(st) > best_mtime) {
      best_mtime = Mtime(st);
      best = name;
    }
  }
  if (best.empty()) *error = "no run root for job " + job_id + " under " + base;
  return best.empty() ? "" : base + "/" + best;
}

}  // namespace sl::watch
