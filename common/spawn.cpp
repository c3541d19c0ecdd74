// Spawn and the phase waits. Why fork+execve and not posix_spawn: the child must set
// PR_SET_PDEATHSIG and check its parent is still alive, which posix_spawn cannot; the exec-errno
// pipe then tells 126 from 127 exactly as a shell does.
#include "common/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex g_mask_mu;
sigset_t g_original_mask;
bool g_mask_saved = false;

std::mutex g_stop_mu;
std::optional<StopSignal> g_stop;

bool NotFoundErrno(int err) { return err == ENOENT || err == ENOTDIR || err == ENAMETOOLONG; }

// Everything the child touches, built before fork (after fork only async-signal-safe calls).
struct ExecImage {
  std::vector<std::string> candidates, env_strings, args;
  std::vector<char*> argv, envp;
  std::string path_searched;
  explicit ExecImage(const SpawnSpec& spec) {
    candidates = ExecCandidates(spec.argv[0], spec.env, &path_searched);
    for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    args = spec.argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
  }
};

// The child after fork: only async-signal-safe calls from here to execve/_exit.
[[noreturn]] void ExecChild(const SpawnSpec& spec, ExecImage& image, const sigset_t& mask,
                            pid_t parent, int devnull, int exec_fd) {
  if (spec.death_signal > 0) {
    ::prctl(PR_SET_PDEATHSIG, spec.death_signal);
    if (::getppid() != parent) ::_exit(1);  // the parent died before PDEATHSIG took effect
  }
  if (spec.own_process_group) ::setpgid(0, 0);
  const int fds[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    const int fd = fds[target] == kDevNullFd ? devnull : fds[target];
    if (fd >= 0 && fd != target) ::dup2(fd, target);
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  int err = ENOENT;
  bool significant = false;  // as execvp: EACCES somewhere beats ENOENT elsewhere
  for (const auto& c : image.candidates) {
    ::execve(c.c_str(), image.argv.data(), image.envp.data());
    if (NotFoundErrno(errno)) {
      if (!significant) err = errno;
    } else {
      err = errno;
      significant = true;
      if (errno != EACCES) break;
    }
  }
  (void)!::write(exec_fd, &err, sizeof err);
  ::_exit(NotFoundErrno(err) ? 127 : 126);
}

void KillAll(const std::vector<ChildEnd>& ends, const std::vector<bool>& done, int sig,
             std::vector<ChildEnd>* mark, bool groups = false) {
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (done[i]) continue;
    // A leader not reaped yet holds its group id: no other process can have it.
    ::kill(groups ? -ends[i].pid : ends[i].pid, sig);
    if (mark && sig == SIGKILL) (*mark)[i].killed = true;
  }
}

// Sleeps up to `timeout`, waking early on SIGCHLD or a stop signal when they are blocked and
// `take_signals` (a stop signal is latched). Otherwise only the timeout wakes it: a tick.
void WaitTick(std::chrono::milliseconds timeout, bool take_signals) {
  if (!take_signals) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  sigset_t current, wanted;
  pthread_sigmask(SIG_BLOCK, nullptr, &current);
  sigemptyset(&wanted);
  bool any = false;
  for (int s : {SIGCHLD, SIGTERM, SIGINT}) {
    if (sigismember(&current, s)) {
      sigaddset(&wanted, s);
      any = true;
    }
  }
  if (!any) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>(timeout.count() % 1000) * 1000000L};
  siginfo_t info{};
  const int sig = ::sigtimedwait(&wanted, &info, &ts);
  if (sig == SIGTERM || sig == SIGINT) {
    std::lock_guard lock(g_stop_mu);
    if (!g_stop) g_stop = StopSignal{sig, info.si_pid};
  }
}

}  // namespace

int SpawnedChild::ExecExitCode() const {
  if (exec_errno == 0) return 0;
  return NotFoundErrno(exec_errno) ? 127 : 126;
}

std::vector<std::string> ExecCandidates(const std::string& file, const Environment& env,
                                        std::string* path_searched) {
  std::vector<std::string> out;
  if (file.find('/') != std::string::npos) {
    out.push_back(file);
    if (path_searched) path_searched->clear();
    return out;
  }
  const std::string path = Lookup(env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  if (path_searched) *path_searched = path;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t colon = path.find(':', start);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(start, colon - start);
    out.push_back(dir.empty() ? file : dir + "/" + file);
    start = colon + 1;
  }
  return out;
}

Result<SpawnedChild> Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return MakeError("nothing to run: empty command");
  ExecImage image(spec);
  const sigset_t mask = ChildSignalMask();
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    return MakeError(std::string("pipe: ") + std::strerror(errno), spec.argv[0],
                     "raise the open-files limit (ulimit -n)");
  }
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) ExecChild(spec, image, mask, parent, devnull, exec_pipe[1]);
  const int fork_errno = errno;
  ::close(exec_pipe[1]);
  if (devnull >= 0) ::close(devnull);
  if (pid < 0) {
    ::close(exec_pipe[0]);
    return MakeError(std::string("fork: ") + std::strerror(fork_errno), spec.argv[0],
                     "the node is out of processes or memory: check ulimit -u, the cgroup's "
                     "pids.max and free memory");
  }
  // setpgid in the parent too: whichever runs first, the group exists before we signal it.
  if (spec.own_process_group) ::setpgid(pid, pid);
  SpawnedChild child;
  child.pid = pid;
  child.path_searched = image.path_searched;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &child.exec_errno, sizeof child.exec_errno);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof child.exec_errno) child.exec_errno = 0;  // EOF: exec closed the pipe (CLOEXEC)
  ::close(exec_pipe[0]);
  return child;
}

void BlockLoopSignals(const std::vector<int>& signals) {
  std::lock_guard lock(g_mask_mu);
  sigset_t set, old;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  if (!g_mask_saved) {
    g_original_mask = old;
    g_mask_saved = true;
  }
}

sigset_t ChildSignalMask() {
  std::lock_guard lock(g_mask_mu);
  if (g_mask_saved) return g_original_mask;
  sigset_t current;
  pthread_sigmask(SIG_BLOCK, nullptr, &current);
  return current;
}

std::optional<StopSignal> TakeStopSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  timespec zero{0, 0};
  siginfo_t info{};
  const int sig = ::sigtimedwait(&set, &info, &zero);
  std::lock_guard lock(g_stop_mu);
  if ((sig == SIGTERM || sig == SIGINT) && !g_stop) g_stop = StopSignal{sig, info.si_pid};
  return g_stop;
}

std::optional<StopSignal> StopSignalSeen() {
  std::lock_guard lock(g_stop_mu);
  return g_stop;
}

void ClearStopSignal() {
  std::lock_guard lock(g_stop_mu);
  g_stop.reset();
}

std::optional<Reaped> TryReap(pid_t pid, bool* no_child) {
  int st = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &st, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (no_child) *no_child = r < 0 && errno == ECHILD;
  if (r <= 0) return std::nullopt;
  return Reaped{r, st};
}

namespace {

// One pass over the children not reaped yet; returns how many still run.
std::size_t ReapPass(const WaitPolicy& policy, WaitOutcome& out, std::vector<bool>& done) {
  std::size_t left = 0;
  for (std::size_t i = 0; i < out.ends.size(); ++i) {
    if (done[i]) continue;
    if (policy.reap) {
      if (auto st = policy.reap(out.ends[i].pid)) {
        out.ends[i].wait_status = *st;
        done[i] = true;
      }
    } else {
      bool gone = false;  // ECHILD: not ours (any more); nothing to wait for
      if (auto r = TryReap(out.ends[i].pid, &gone)) {
        out.ends[i].wait_status = r->wait_status;
        done[i] = true;
      } else if (gone) {
        done[i] = true;
      }
    }
    if (!done[i]) ++left;
  }
  return left;
}

}  // namespace

WaitOutcome WaitChildren(const std::vector<pid_t>& pids, Clock::time_point deadline,
                         const WaitPolicy& policy) {
  WaitOutcome out;
  for (pid_t p : pids) out.ends.push_back(ChildEnd{p, 0, false});
  std::vector<bool> done(pids.size(), false);
  std::optional<Clock::time_point> kill_at;
  std::optional<StopSignal> stop;
  auto end = deadline;  // a stop with a stop_leaves policy brings it forward
  bool deadline_hit = false;
  while (true) {
    if (ReapPass(policy, out, done) == 0) return out;
    const auto now = Clock::now();
    // One taken now or latched before.
    if (policy.take_signals && !stop && (stop = TakeStopSignal())) {
      if (policy.stop_leaves) {
        end = std::min(end, now + *policy.stop_leaves);
      } else {
        out.stopped = stop;
        KillAll(out.ends, done, SIGTERM, nullptr, policy.kill_groups);
        kill_at = now + policy.stop_grace;
      }
    }
    if (now >= end && !deadline_hit) {
      deadline_hit = true;
      if (end < deadline) out.stopped = stop;  // the time a stop left ran out
      out.deadline_passed = !out.stopped;
      kill_at = now;
    }
    if (kill_at && now >= *kill_at) {
      KillAll(out.ends, done, SIGKILL, &out.ends, policy.kill_groups);
      kill_at = now + std::chrono::milliseconds(200);  // again if one survived a round
    }
    auto wait = policy.tick;
    for (auto t : {std::optional(end), kill_at}) {
      if (t) {
        wait = std::min(wait, std::max(std::chrono::milliseconds(1),
                                       std::chrono::duration_cast<std::chrono::milliseconds>(
                                           *t - now + std::chrono::microseconds(999))));
      }
    }
    WaitTick(wait, policy.take_signals);
  }
}

Result<RunChildResult> RunChild(SpawnSpec spec, std::chrono::milliseconds deadline,
                                bool capture_stderr, std::size_t max_output,
                                std::chrono::milliseconds tick) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return MakeError(std::string("pipe: ") + std::strerror(errno),
                     spec.argv.empty() ? "" : spec.argv[0]);
  }
  spec.stdin_fd = kDevNullFd;
  spec.stdout_fd = out[1];
  spec.stderr_fd = capture_stderr ? out[1] : kDevNullFd;
  // A helper dies with us (a SIGKILLed safe-launch leaves no probe behind) and leads its own
  // process group, so its deadline takes the children it started too (a shell's, scontrol's).
  spec.own_process_group = true;
  if (spec.death_signal == 0) spec.death_signal = SIGKILL;
  auto child = Spawn(spec);
  ::close(out[1]);
  if (!child.ok()) {
    ::close(out[0]);
    return child.error();
  }
  RunChildResult result;
  result.exec_errno = child->exec_errno;
  const auto end = Clock::now() + deadline;
  char buf[16384];
  int status = 0;
  bool reaped = false;
  while (!(result.stopped = TakeStopSignal())) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fd{out[0], POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(std::min(left, tick).count())) <= 0) {
      // Quiet for a tick: a child that exited while a grandchild holds its stdout is done.
      if (auto r = TryReap(child->pid)) {
        status = r->wait_status;
        reaped = true;
        break;
      }
      continue;
    }
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: it closed its stdout (normally: it exited)
    result.output.append(
        buf, std::min<std::size_t>(static_cast<std::size_t>(n),
                                   max_output - std::min(max_output, result.output.size())));
  }
  ::close(out[0]);
  // Past its deadline or on a stop signal, the whole group goes at once (the leader is not
  // reaped yet, so its group id cannot have been reused). A leader that exited on its own while
  // a child of its still held the pipe leaves that child in the group: it goes too.
  if (result.timed_out || result.stopped || reaped) ::kill(-child->pid, SIGKILL);
  bool killed = false;
  if (!reaped) {
    // After EOF the child normally exits at once; it still gets the rest of the deadline.
    auto waited = WaitChildren({child->pid}, result.timed_out ? Clock::now() : end, tick);
    if (waited.deadline_passed) result.timed_out = true;
    if (waited.stopped) result.stopped = waited.stopped;
    status = waited.ends[0].wait_status;
    killed = waited.ends[0].killed;
  }
  if (!killed && !result.timed_out) {
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return result;
}

Result<RunChildResult> RunCallInChild(const std::function<int()>& fn,
                                      std::chrono::milliseconds deadline, WaitPolicy policy) {
  const pid_t parent = ::getpid();
  std::fflush(nullptr);  // what is buffered would be written twice, by the child too
  const pid_t pid = ::fork();
  if (pid < 0) {
    return MakeError(std::string("fork: ") + std::strerror(errno), "",
                     "raise the process limit (ulimit -u, the cgroup's pids.max) or free memory");
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before PDEATHSIG took effect
    ::setpgid(0, 0);
    const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && devnull >= 0; ++fd) ::dup2(devnull, fd);
    int rc = 70;
    try {
      rc = fn();
    } catch (...) {
    }
    ::_exit(rc & 0xff);  // no atexit handlers, no static destructors: they are the parent's
  }
  ::setpgid(pid, pid);  // the group exists before a kill can be aimed at it (either may run first)
  policy.kill_groups = true;
  const WaitOutcome waited = WaitChildren({pid}, Clock::now() + deadline, policy);
  RunChildResult result;
  result.timed_out = waited.deadline_passed;
  result.stopped = waited.stopped;
  const int st = waited.ends[0].wait_status;
  if (!waited.ends[0].killed) {
    result.exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return result;
}

}  // namespace sl
