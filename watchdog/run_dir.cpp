#include "watchdog/run_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

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

bool IsEmptyDir(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    bool empty = true;
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        empty = false;
        break;
      }
    }
    ::closedir(d);
    return empty;
  }
  return false;
}

}  // namespace

std::string DefaultRunDir(const std::string& explicit_dir, const Environment& env,
                          const std::string& cwd, const std::string& host,
                          std::chrono::system_clock::time_point now, int pid) {
  if (!explicit_dir.empty()) return explicit_dir;
  std::string base = Lookup(env, "SLURM_SUBMIT_DIR").value_or("");
  if (base.empty()) base = cwd.empty() ? "." : cwd;
  std::string id;
  if (auto job = Lookup(env, "SLURM_JOB_ID"); job && !job->empty()) {
    id = *job;
    if (auto step = Lookup(env, "SLURM_STEP_ID"); step && !step->empty()) id += "." + *step;
  } else {
    const std::time_t secs = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    id = std::string(buf) + "-" + std::to_string(pid);
  }
  return base + "/safe-launch-runs/" + Sanitize(id) + "/" + Sanitize(host.empty() ? "host" : host);
}

Result<std::string> CreateRunDir(const std::string& dir) {
  std::string parent =
      dir.substr(0, dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/'));
  if (!parent.empty()) {
    if (auto s = MakeDirs(parent); !s.ok()) return s.error();
  }
  for (int i = 0; i < 1000; ++i) {
    std::string candidate = i == 0 ? dir : dir + "." + std::to_string(i);
    if (::mkdir(candidate.c_str(), 0750) == 0) return candidate;
    int err = errno;
    if (err == EEXIST) {
      struct stat st;
      if (::stat(candidate.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && IsEmptyDir(candidate) &&
          ::access(candidate.c_str(), W_OK) == 0) {
        return candidate;
      }
      continue;
    }
    return MakeError(std::string("cannot create the run directory: ") + std::strerror(err),
                     candidate, FixForErrno(err));
  }
  return MakeError("too many run directories with this name", dir, "use --run-dir DIR");
}

Status WriteRunFile(const std::string& dir, const std::string& name, const std::string& content) {
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    return MakeError(std::string("cannot write: ") + std::strerror(err), tmp, FixForErrno(err));
  }
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return MakeError(std::string("cannot write: ") + std::strerror(err), tmp, FixForErrno(err));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return MakeError(std::string("cannot write: ") + std::strerror(err), path, FixForErrno(err));
  }
  return OkStatus();
}

}  // namespace sl::watchdog
