#include "watchdog/watch/reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

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
  // What one look at a name found: the errno, or the stat's type, inode, size, mtime and ctime
  // (ctime: a chmod that makes an unreadable file readable shows). Equal keys: nothing the
  // reader shows of the file changed. Compared, never formatted (1024 nodes x 4 each second).
  struct Key {
    int err = -1;  // -1: never looked at
    mode_t type = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t m_s = 0, m_ns = 0, c_s = 0, c_ns = 0;
    bool operator==(const Key&) const = default;
    bool regular() const { return err == 0 && type == S_IFREG; }
    double mtime() const { return static_cast<double>(m_s) + static_cast<double>(m_ns) / 1e9; }
  };
  std::map<std::string, std::pair<Key, FileRead>> files;                 // path -> (key, read)
  std::map<std::string, std::pair<Key, std::vector<std::string>>> dirs;  // listings
  // node -> the keys of its directory, status.json, live.json and heartbeat when `files` was
  // read; `files` is handed out as it is while all four are the same.
  struct NodeEntry {
    Key dir, status, live, heartbeat;
    std::shared_ptr<const NodeFiles> files;
    std::uint64_t seen = 0;  // the refresh that last looked at it (the others are dropped)
  };
  std::map<std::string, NodeEntry> nodes;
  std::map<std::string, NodeEntry>::iterator node_hint = nodes.end();  // see ReadNodeCached
  std::uint64_t refresh = 0;
  std::string path;  // scratch for "node/file" (no allocation per look)
};

namespace {

using Key = RunRootReader::Cache::Key;

Key KeyOf(const struct stat& st) {
  return Key{.err = 0,
             .type = static_cast<mode_t>(st.st_mode & S_IFMT),
             .ino = st.st_ino,
             .size = st.st_size,
             .m_s = st.st_mtim.tv_sec,
             .m_ns = st.st_mtim.tv_nsec,
             .c_s = st.st_ctim.tv_sec,
             .c_ns = st.st_ctim.tv_nsec};
}

// fstatat(AT_SYMLINK_NOFOLLOW) of `rel` below `dirfd`.
Key StatName(int dirfd, const char* rel, struct stat* st) {
  if (::fstatat(dirfd, rel, st, AT_SYMLINK_NOFOLLOW) != 0) return Key{.err = errno ? errno : EIO};
  return KeyOf(*st);
}

// A name that is not a regular file as the reader shows it: missing, or the problem named.
FileRead NotRegular(const std::string& name, const Key& k) {
  if (k.err == ENOENT) return FileRead{.name = name};
  if (k.err != 0) return Problem(name, std::strerror(k.err));
  return Problem(name, KindOf(k.type));
}

// Opens and reads `rel` below `dirfd`, a regular file when fstatat gave `k`: O_NOFOLLOW and
// O_NONBLOCK (a FIFO planted since does not block the open), then checked on the open file.
FileRead ReadFound(int dirfd, const char* rel, const std::string& name, const Key& k,
                   std::size_t cap, bool tail) {
  FileRead f{.state = FileRead::State::kOk, .name = name, .mtime_unix = k.mtime()};
  if (cap == 0) return f;
  Fd fd(::openat(dirfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.fd < 0) return Problem(name, errno == EACCES ? "permission denied" : std::strerror(errno));
  struct stat again {};
  if (::fstat(fd.fd, &again) != 0 || !S_ISREG(again.st_mode) ||
      again.st_ino != static_cast<ino_t>(k.ino)) {
    return Problem(name, "replaced while being read");
  }
  ReadOpen(fd.fd, again, cap, tail, &f);
  return f;
}

// One file below `dirfd`, bounded, links never followed, cached by its key under `key`.
FileRead ReadAt(int dirfd, const std::string& key, const std::string& name, std::size_t cap,
                bool tail, RunRootReader::Cache* cache, bool own_user = false) {
  struct stat st {};
  const Key k = StatName(dirfd, name.c_str(), &st);
  if (!k.regular()) return NotRegular(name, k);
  if (own_user && st.st_uid != ::geteuid()) return Problem(name, "not owned by us, not trusted");
  auto it = cache->files.find(key);
  if (it != cache->files.end() && it->second.first == k) return it->second.second;
  FileRead f = ReadFound(dirfd, name.c_str(), name, k, cap, tail);
  if (f.ok()) cache->files[key] = {k, f};
  return f;
}

// The names in an open directory (no "." or ".."), listed again only when its key changed.
// The reference stays valid until the cache next lists `key`.
const std::vector<std::string>& List(int dirfd, const std::string& key, RunRootReader::Cache* cache,
                                     std::size_t max, std::string* error) {
  static const std::vector<std::string> kNone;
  struct stat st {};
  if (::fstat(dirfd, &st) != 0) return kNone;
  const Key k = KeyOf(st);
  auto it = cache->dirs.find(key);
  if (it != cache->dirs.end() && it->second.first == k) return it->second.second;
  std::vector<std::string> names;
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
  if (!d) {
    if (dup >= 0) ::close(dup);
    *error = std::strerror(errno);
    return kNone;
  }
  ::rewinddir(d);
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
    if (names.size() >= max) break;
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  auto& slot = cache->dirs[key];
  slot = {k, std::move(names)};
  return slot.second;
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
                           false, cache);
        b.summary.name = name + "/summary.json";
      }
    }
    n->bundles.push_back(std::move(b));
  }
}

// A node's directory opened (O_NOFOLLOW) and its files looked at relative to it; a file whose
// key is the one `before` was read under is not read again. `status`/`live` get the keys of
// what was read.
NodeFiles ReadNode(int rootfd, const std::string& name, const ReaderLimits& lim,
                   RunRootReader::Cache* cache, const RunRootReader::Cache::NodeEntry& before,
                   Key* status, Key* live) {
  NodeFiles n{.name = name};
  Fd fd(OpenDirAt(rootfd, name));
  if (fd.fd < 0) {
    n.problem = errno == EACCES ? "run directory not readable (permission denied)"
                                : std::string("run directory: ") + std::strerror(errno);
    return n;
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) == 0) n.dir_mtime_unix = Mtime(st);
  const NodeFiles* prev = before.files.get();
  auto json_file = [&](const char* file, const FileRead* was, const Key& was_key, Key* k) {
    struct stat fst {};
    *k = StatName(fd.fd, file, &fst);
    if (was && *k == was_key) return *was;
    return k->regular() ? ReadFound(fd.fd, file, file, *k, lim.json_cap, false)
                        : NotRegular(file, *k);
  };
  n.status = json_file("status.json", prev ? &prev->status : nullptr, before.status, status);
  n.live = json_file("live.json", prev ? &prev->live : nullptr, before.live, live);
  if (n.status.state == FileRead::State::kMissing) {
    // Presence and time only, and only before status.json: they date the phases before it.
    n.env_plan = ReadAt(fd.fd, name + "/env-plan.json", "env-plan.json", 0, false, cache);
    n.preflight = ReadAt(fd.fd, name + "/preflight.json", "preflight.json", 0, false, cache);
  }
  // Bundles are directories: with no subdirectory (st_nlink 2) there is nothing to list. A
  // file system that does not count them (st_nlink 1) is listed.
  if (st.st_nlink != 2) {
    std::string error;
    const auto& names = List(fd.fd, name, cache, 4096, &error);
    if (!error.empty()) n.problem = "run directory not listable: " + error;
    ReadBundles(fd.fd, name, names, lim, cache, &n);
  }
  return n;
}

// "node/file" in the cache's scratch string.
const char* RelPath(RunRootReader::Cache* cache, const std::string& node, const char* file) {
  cache->path.assign(node).append("/").append(file);
  return cache->path.c_str();
}

// A new parse memo key: unique in the process, so no two reads of a node share one even across
// the fresh caches that follow a stuck worker.
std::string NextSignature() {
  static std::atomic<std::uint64_t> last{0};
  return "r" + std::to_string(++last);
}

// A node's files, with four fstatat and no open, no copy and no allocation when nothing
// changed: a file is created, renamed (the supervisor's one atomic writer) or removed only by
// changing its directory's mtime, so an unchanged directory leaves only in-place writes to look
// for, of the two files whose text is read (status.json, live.json) and of the heartbeat
// (touched, utime). A running job changes its directory every 2 s (live.json and live.tail
// renamed into place): when status.json is the one read before and the directory has no
// subdirectory (st_nlink 2: no bundle appeared), only live.json is read again, relative to the
// run root, without opening the directory.
NodeList::Ptr ReadNodeCached(int rootfd, const std::string& name, const struct stat& dir_st,
                             const ReaderLimits& lim, RunRootReader::Cache* cache) {
  // Nodes come in the listing's order, the map's: the entry after the last one is the likely one.
  auto& hint = cache->node_hint;
  if (hint == cache->nodes.end() || hint->first != name)
    hint = cache->nodes.try_emplace(name).first;
  RunRootReader::Cache::NodeEntry& e = hint->second;
  ++hint;
  e.seen = cache->refresh;
  const Key dir = KeyOf(dir_st);
  struct stat st {};
  Key status = StatName(rootfd, RelPath(cache, name, "status.json"), &st);
  Key live = StatName(rootfd, RelPath(cache, name, "live.json"), &st);
  const Key heartbeat = StatName(rootfd, RelPath(cache, name, "heartbeat"), &st);
  const NodeFiles* prev = e.files.get();
  if (prev && dir == e.dir && status == e.status && live == e.live && heartbeat == e.heartbeat)
    return e.files;
  NodeFiles n;
  if (prev && status == e.status && status.regular() &&
      (dir == e.dir || (dir_st.st_nlink == 2 && prev->bundles.empty()))) {
    n = *prev;
    if (live != e.live) {
      n.live = live.regular() ? ReadFound(rootfd, RelPath(cache, name, "live.json"), "live.json",
                                          live, lim.json_cap, false)
                              : NotRegular("live.json", live);
    }
    n.dir_mtime_unix = Mtime(dir_st);
  } else {
    n = ReadNode(rootfd, name, lim, cache, e, &status, &live);
    if (!n.problem.empty()) {
      e.files.reset();
      return std::make_shared<const NodeFiles>(std::move(n));
    }
  }
  n.heartbeat = heartbeat.regular() ? FileRead{.state = FileRead::State::kOk,
                                               .name = "heartbeat",
                                               .mtime_unix = heartbeat.mtime()}
                                    : NotRegular("heartbeat", heartbeat);
  n.signature = NextSignature();
  e.dir = dir;
  e.status = status;
  e.live = live;
  e.heartbeat = heartbeat;
  e.files = std::make_shared<const NodeFiles>(std::move(n));
  return e.files;
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
  if (fd.fd < 0) {
    out->rejected.push_back(std::string("not readable: ") + std::strerror(errno));
    return;
  }
  const auto& names = List(fd.fd, ".events", cache, 4096, &error);
  if (!error.empty()) {
    out->rejected.push_back("not readable: " + error);
    return;
  }
  for (const auto& name : names) {
    if (StartsWith(name, ".") || !EndsWith(name, ".json")) continue;
    if (out->events.size() >= lim.max_events) {
      out->rejected.push_back("more than " + std::to_string(lim.max_events) +
                              " events, rest not read");
      break;
    }
    FileRead f = ReadAt(fd.fd, ".events/" + name, name, lim.event_cap, false, cache, true);
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

// Shared by the reader and its workers (a stuck worker may outlive the reader).
struct RunRootReader::Shared {
  std::mutex mu;
  std::condition_variable done;
  std::map<std::string, double> stuck;  // node -> since (unix s) its read has not returned
  double root_stuck_since = 0;          // the run root's own open/listing has not returned
  int stuck_workers = 0;
};

// One refresh, run by a worker. Fields after `cache` are guarded by shared->mu.
struct RunRootReader::Job {
  std::string root;
  ReaderLimits limits;
  std::shared_ptr<Shared> shared;
  std::map<std::string, double> skip;  // stuck nodes when the job started
  std::unique_ptr<Cache> cache;
  RunRootFiles out;
  std::string current;  // the node being read ("" = the run root itself)
  double current_since = 0;
  bool done = false, abandoned = false;
};

namespace {

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string UnreadableText(double since, double now) {
  return "unreadable for " + std::to_string(static_cast<long long>(std::max(0.0, now - since))) +
         "s: a stat or read of its files has not returned (a hung network file system?)";
}

// An abandoned job whose read returned after all (shared->mu held): what it was marked stuck
// on answers again, and the worker ends.
void GiveUp(RunRootReader::Job* job) {
  if (job->current.empty())
    job->shared->root_stuck_since = 0;
  else
    job->shared->stuck.erase(job->current);
  --job->shared->stuck_workers;
  job->done = true;  // nobody waits for it any more
}

// Marks the start of reading `node` (or the root, ""); false when the job was abandoned
// meanwhile, and then the worker ends there.
bool Enter(RunRootReader::Job* job, const std::string& node) {
  std::lock_guard<std::mutex> lock(job->shared->mu);
  if (job->abandoned) {
    GiveUp(job);
    return false;
  }
  job->current = node;
  job->current_since = NowUnix();
  return true;
}

// After a read returned: false (the worker ends) when it was given up meanwhile.
bool Leave(RunRootReader::Job* job) {
  std::lock_guard<std::mutex> lock(job->shared->mu);
  if (!job->abandoned) return true;
  GiveUp(job);
  return false;
}

// The refresh itself (on the worker): the body of what Read() used to do.
bool ReadRoot(RunRootReader::Job* job) {
  RunRootFiles& out = job->out;
  const ReaderLimits& limits = job->limits;
  RunRootReader::Cache* cache = job->cache.get();
  if (!Enter(job, "")) return false;
  Fd root(::open(job->root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0) {
    out.problem = errno == EACCES ? "not readable (permission denied)" : std::strerror(errno);
    return Leave(job);
  }
  std::string error;
  const auto& names = List(root.fd, ".", cache, limits.max_nodes + 64, &error);
  if (!Leave(job)) return false;
  if (!error.empty()) out.problem = "not listable: " + error;
  const double now = NowUnix();
  ++cache->refresh;
  cache->node_hint = cache->nodes.begin();
  out.nodes.items().reserve(names.size());
  for (const auto& name : names) {
    if (StartsWith(name, ".")) continue;
    if (auto it = job->skip.find(name); it != job->skip.end()) {
      out.nodes.push_back({.name = name, .problem = UnreadableText(it->second, now)});
      continue;
    }
    if (!Enter(job, name)) return false;
    if (limits.before_node) limits.before_node(name);
    struct stat st {};
    const bool seen = ::fstatat(root.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (!seen || S_ISREG(st.st_mode)) {  // regular: diagnosis.*, per-task verdict files
      if (!Leave(job)) return false;
      continue;
    }
    if (out.nodes.size() >= limits.max_nodes) {
      ++out.nodes_left_out;
    } else if (!S_ISDIR(st.st_mode)) {
      out.nodes.push_back(
          {.name = name, .problem = std::string("run directory is ") + KindOf(st.st_mode)});
    } else {
      out.nodes.Add(ReadNodeCached(root.fd, name, st, limits, cache));
    }
    if (!Leave(job)) return false;
  }
  std::erase_if(cache->nodes, [&](const auto& e) { return e.second.seen != cache->refresh; });
  cache->node_hint = cache->nodes.end();
  if (!Enter(job, "")) return false;
  ReadEvents(root.fd, limits, cache, &out);
  out.diagnosis =
      ReadAt(root.fd, "diagnosis.json", "diagnosis.json", 4 * limits.json_cap, false, cache);
  return Leave(job);
}

void RunJob(const std::shared_ptr<RunRootReader::Job>& job) {
  if (!ReadRoot(job.get())) return;
  std::lock_guard<std::mutex> lock(job->shared->mu);
  if (job->abandoned) GiveUp(job.get());  // given up just as it finished
  job->done = true;
  job->shared->done.notify_all();
}

}  // namespace

RunRootReader::RunRootReader(std::string root, ReaderLimits limits)
    : root_(std::move(root)),
      limits_(std::move(limits)),
      cache_(std::make_unique<Cache>()),
      shared_(std::make_shared<Shared>()) {}
RunRootReader::~RunRootReader() = default;

// The last complete refresh, with what is stuck now said on it.
const RunRootFiles& RunRootReader::Stale(double now) {
  stale_ = last_;
  RunRootFiles& out = stale_;
  out.root = root_;
  std::lock_guard<std::mutex> lock(shared_->mu);
  if (shared_->root_stuck_since > 0)
    out.problem = "the run root is " + UnreadableText(shared_->root_stuck_since, now) +
                  "; showing the last refresh";
  else if (shared_->stuck_workers >= kMaxStuckWorkers)
    out.problem = std::to_string(shared_->stuck_workers) +
                  " reads are stuck on this file system; showing the last refresh";
  auto& nodes = out.nodes.items();
  for (const auto& [name, since] : shared_->stuck) {
    auto stuck = std::make_shared<const NodeFiles>(
        NodeFiles{.name = name, .problem = UnreadableText(since, now)});
    // By the copy's name: clang before 16 cannot capture a structured binding.
    auto it = std::find_if(nodes.begin(), nodes.end(),
                           [&stuck](const NodeList::Ptr& n) { return n->name == stuck->name; });
    if (it == nodes.end())
      nodes.push_back(std::move(stuck));
    else
      *it = std::move(stuck);
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeList::Ptr& a, const NodeList::Ptr& b) { return a->name < b->name; });
  return stale_;
}

const RunRootFiles& RunRootReader::Read() {
  const double now = NowUnix();
  auto job = std::make_shared<Job>();
  bool blocked = false;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    // The run root itself does not answer, or too many workers are stuck: no new worker.
    blocked = shared_->root_stuck_since > 0 || shared_->stuck_workers >= kMaxStuckWorkers;
    job->skip = shared_->stuck;
  }
  if (blocked) return Stale(now);
  job->root = root_;
  job->limits = limits_;
  job->shared = shared_;
  job->cache = cache_ ? std::move(cache_) : std::make_unique<Cache>();
  job->out.root = root_;
  {
    // The worker takes no signal: the screen's SIGINT/SIGTERM handlers stay on this thread.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread([job] { RunJob(job); }).detach();
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->done.wait_for(lock, std::chrono::milliseconds(limits_.read_deadline_ms),
                         [&] { return job->done; });
  if (job->done) {
    cache_ = std::move(job->cache);
    last_ = std::move(job->out);
    return last_;
  }
  // Stuck: the worker keeps its cache (the next refresh starts a fresh one) and is given up.
  job->abandoned = true;
  ++shared_->stuck_workers;
  if (job->current.empty())
    shared_->root_stuck_since = job->current_since;
  else
    shared_->stuck.emplace(job->current, job->current_since);
  lock.unlock();
  return Stale(now);
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
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (auto it = shared_->stuck.find(node); it != shared_->stuck.end())
      return {UnreadableText(it->second, NowUnix())};
    if (shared_->root_stuck_since > 0) return {};
  }
  if (!cache_) cache_ = std::make_unique<Cache>();
  Fd root(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd fd(root.fd >= 0 ? OpenDirAt(root.fd, node) : -1);
  if (fd.fd < 0) return out;
  for (const char* name : files) {
    FileRead f = ReadAt(fd.fd, node + "/" + name, name, limits_.tail_cap, true, cache_.get());
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
  const auto& names = List(dir.fd, base, &cache, 100000, &list_error);
  for (const auto& name : names) {
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
