#include "watchdog/run_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/file_writer.h"

namespace sl::watchdog {

namespace {

std::string FixForErrno(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
      return "choose a writable place with --run-dir DIR";
    case EROFS:
      return "the file system is read-only; choose another with --run-dir DIR";
    case ENOSPC:
    case EDQUOT:
      return "the file system is full (or over quota); free space or use --run-dir DIR";
    default:
      return "check the path or choose another with --run-dir DIR";
  }
}

// Safe as a path component: Slurm ids and host names are, but an odd env value must not escape.
std::string Sanitize(std::string s) {
  for (char& c : s) {
    if (c == '/' || c == '\0' || c == ' ') c = '_';
  }
  if (s.empty() || s == "." || s == "..") s = "_";
  return s;
}

Status MakeDirs(const std::string& dir) {
  std::string path;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      int err = errno;
      return MakeError(std::string("cannot create the run directory: ") + std::strerror(err), path,
                       FixForErrno(err));
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError("the run directory path exists but is not a directory", dir,
                     "choose another with --run-dir DIR");
  }
  return OkStatus();
}

}  // namespace

std::string DefaultRunDir(const std::string& explicit_dir, const Environment& env,
                          const std::string& cwd, const std::string& host,
                          std::chrono::system_clock::time_point now, int pid,
                          const std::string& task) {
  if (!explicit_dir.empty()) return explicit_dir;
  std::string base = Lookup(env, "SLURM_SUBMIT_DIR").value_or("");
  if (base.empty()) base = cwd.empty() ? "." : cwd;
  std::string id = LaunchId(env);
  if (id.empty()) {
    const std::time_t secs = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    id = std::string(buf) + "-" + std::to_string(pid);
  }
  // Several slurmd may serve one host (NodeName=... Port=...): the node's name keys the
  // directory as well as the host, so two nodes' safe-launch never meet in one directory.
  std::string leaf = host.empty() ? "host" : host;
  if (auto node = Lookup(env, "SLURMD_NODENAME"); node && !node->empty() && *node != leaf)
    leaf += "_" + *node;
  if (!task.empty()) leaf += "-rank" + task;
  return base + "/safe-launch-runs/" + Sanitize(id) + "/" + Sanitize(leaf);
}

Result<std::string> CreateRunDir(const std::string& dir) {
  const auto slash = dir.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : dir.substr(0, slash);
  const std::string leaf = slash == std::string::npos ? dir : dir.substr(slash + 1);
  if (leaf.empty() || leaf == "." || leaf == "..") {
    return MakeError("the run directory must name a directory", dir, "pass --run-dir DIR");
  }
  if (auto s = MakeDirs(parent); !s.ok()) return s.error();
  // Every candidate is made and checked relative to one parent fd, so a parent swapped for a
  // link midway cannot send later candidates elsewhere.
  int pfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0) {
    int err = errno;
    return MakeError(std::string("cannot open the run directory's parent: ") + std::strerror(err),
                     parent, FixForErrno(err));
  }
  for (int i = 0; i < 1000; ++i) {
    const std::string name = i == 0 ? leaf : leaf + "." + std::to_string(i);
    const std::string candidate = parent == "/" ? "/" + name : parent + "/" + name;
    // mkdirat fails with EEXIST on any existing name, a dangling symlink included.
    if (::mkdirat(pfd, name.c_str(), kRunDirMode) == 0) {
      ::close(pfd);
      return slash == std::string::npos ? name : candidate;
    }
    int err = errno;
    // Never reused, even empty and ours: it may be a second safe-launch's on this node (srun
    // --overlap, two steps, --ntasks-per-node=2) that has not written its first file yet, and
    // both would then share warmup/plan.json and status.json.
    if (err == EEXIST) continue;
    ::close(pfd);
    return MakeError(std::string("cannot create the run directory: ") + std::strerror(err),
                     candidate, FixForErrno(err));
  }
  ::close(pfd);
  return MakeError("too many run directories with this name", dir, "use --run-dir DIR");
}

Status WriteRunFile(const std::string& dir, const std::string& name, const std::string& content) {
  auto s = sl::WriteFileAtomic(dir + "/" + name, content, kRunFileMode);
  if (s.ok()) return s;
  Error e = s.error();
  // The writer's fix says what is wrong with the place; here there is always one more way out.
  e.fix = e.fix.empty() ? FixForErrno(0) : e.fix + ", or choose another with --run-dir DIR";
  return e;
}

}  // namespace sl::watchdog
