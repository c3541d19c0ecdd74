// The supervisor loop. Why it does not use Boost.Process for the job: as a child subreaper we must
// reap every child with waitpid(-1) (orphaned setsid'd torchrun workers are re-parented to us), and
// that steals the status Boost.Process' child::wait() expects (it then reports ECHILD); we also
// need, between fork and exec, PR_SET_PDEATHSIG, the restored signal mask, our own process group
// and an exec-errno pipe that tells 126 from 127 -- plain fork+execve does all that in a few
// async-signal-safe calls. See doc/manual.md, "Running a job".
#include "watchdog/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/log.h"
#include "common/strings.h"
#include "watchdog/process_tree.h"

extern char** environ;

namespace sl::watchdog {

namespace {

sigset_t g_original_mask;
bool g_blocked = false;
std::mutex g_block_mu;

constexpr int kHandledSignals[] = {SIGTERM, SIGINT,   SIGHUP,  SIGQUIT, SIGUSR1,
                                   SIGUSR2, SIGWINCH, SIGALRM, SIGCHLD, SIGPIPE};

sigset_t HandledSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kHandledSignals) sigaddset(&set, s);
  return set;
}

std::string ErrnoText(int err) { return std::strerror(err); }

std::string IsoUtc(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string ProcComm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

bool WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Writes `path` through a temporary name and rename, so readers never see half a file.
void WriteFileAtomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    log::Warn("cannot write {}: {}", tmp, ErrnoText(errno));
    return;
  }
  bool ok = WriteAll(fd, content.data(), content.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    log::Warn("cannot write {}: {}", path, ErrnoText(errno));
    ::unlink(tmp.c_str());
  }
}

// The last bytes of a stream. The pump reads straight into it (no copy at all): before a read
// the region about to be overwritten is reserved and left out of Contents(); the bytes just read
// stay in place, contiguous, for the line hook. Lines are cut only when somebody asks.
class ReadRing {
 public:
  static constexpr std::size_t kSize = 1 << 20;
  // The largest read. A pump blocked in read() on a silent (hung) job keeps its reservation, so
  // this bounds what the tail loses meanwhile: at least kSize - kMaxRead bytes stay readable.
  static constexpr std::size_t kMaxRead = 256 << 10;
  ReadRing() : buf_(new char[kSize]) {}
  /// Pump thread: where the next read goes and how much of it may be filled.
  std::pair<char*, std::size_t> Reserve() {
    std::lock_guard lock(mu_);
    reserved_ = std::min(kSize - pos_, kMaxRead);
    return {buf_.get() + pos_, reserved_};
  }
  /// Pump thread: `n` bytes were read into the reserved region.
  void Commit(std::size_t n) {
    std::lock_guard lock(mu_);
    reserved_ = 0;
    pos_ += n;
    if (pos_ == kSize) {
      pos_ = 0;
      full_ = true;
    }
  }
  std::string Contents() const {
    std::lock_guard lock(mu_);
    if (!full_) return std::string(buf_.get(), pos_);
    const std::size_t old = pos_ + reserved_;  // oldest byte not being overwritten
    return std::string(buf_.get() + old, kSize - old) + std::string(buf_.get(), pos_);
  }
  bool Truncated() const {
    std::lock_guard lock(mu_);
    return full_;
  }

 private:
  mutable std::mutex mu_;
  std::unique_ptr<char[]> buf_;
  std::size_t pos_ = 0;
  std::size_t reserved_ = 0;
  bool full_ = false;
};

// Interrupts a pump's blocking read when it must give up waiting for end of stream. A no-op
// handler installed without SA_RESTART makes read() fail with EINTR in the thread it is sent to.
int PumpWakeSignal() { return SIGRTMIN + 1; }
void NoopHandler(int) {}

std::vector<std::string> LastLines(const std::string& bytes, bool truncated, std::size_t n) {
  std::vector<std::string> lines = SplitLines(bytes);
  // SplitLines may drop empty lines; that is fine for a tail. When the ring wrapped, its first
  // line is probably a fragment: drop it.
  if (truncated && !lines.empty()) lines.erase(lines.begin());
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

}  // namespace

void BlockSupervisorSignals() {
  std::lock_guard lock(g_block_mu);
  sigset_t set = HandledSet();
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &set, &old);
  if (!g_blocked) {
    g_original_mask = old;
    g_blocked = true;
  }
}

const std::vector<int>& ForwardedSignals() {
  static const std::vector<int> kSignals{SIGTERM, SIGINT,  SIGHUP,   SIGQUIT,
                                         SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM};
  return kSignals;
}

std::string SignalName(int signal) {
  static const std::map<int, const char*> kNames{
      {SIGHUP, "SIGHUP"},     {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"},   {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"},   {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"},   {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"},
      {SIGCONT, "SIGCONT"},   {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
      {SIGTTOU, "SIGTTOU"},   {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
      {SIGWINCH, "SIGWINCH"}, {SIGSYS, "SIGSYS"}};
  auto it = kNames.find(signal);
  return it != kNames.end() ? it->second : "signal " + std::to_string(signal);
}

// ---------------------------------------------------------------------------------------------

struct Supervisor::Impl {
  struct Pump {
    int stream = 0;
    int in_fd = -1;   // read end of the job's pipe
    int out_fd = -1;  // our stdout / stderr
    ReadRing ring;
    std::thread thread;
    std::mutex done_mu;
    std::condition_variable done_cv;
    bool done = false;
    std::uint64_t bytes = 0;
    bool out_broken = false;
  };

  Supervisor* self = nullptr;
  int sig_fd = -1;
  int wake_fd = -1;  // eventfd: RequestStop from another thread wakes the main loop
  std::atomic<bool> pump_stop{false};  // pumps give up waiting for EOF (see PumpWakeSignal)
  Pump pumps[2];
  std::atomic<Clock::rep> last_output{0};
  Clock::time_point start;
  std::chrono::system_clock::time_point start_wall;

  // Reaping and RunHelper children.
  std::mutex reap_mu;
  std::set<pid_t> helpers;
  std::map<pid_t, int> helper_status;  // raw wait status of helpers reaped by the main loop

  // Stop state. Requests from any thread land here; the main thread acts on them.
  std::mutex stop_mu;
  bool stop_requested = false;
  bool stop_acted = false;
  std::string stopped_by;
  std::string stop_reason;
  std::optional<int> status_override;
  int stop_signals = 0;  // SIGINT/SIGTERM received so far
  std::optional<Clock::time_point> grace_deadline;
  std::optional<Clock::time_point> kill_deadline;
  bool escalated = false;

  nlohmann::json events = nlohmann::json::array();
  std::mutex events_mu;

  void Event(std::string what) {
    log::Info("{}", what);
    std::lock_guard lock(events_mu);
    events.push_back({{"at", IsoUtc(std::chrono::system_clock::now())}, {"what", std::move(what)}});
  }

  std::vector<pid_t> HelperPids() {
    std::lock_guard lock(reap_mu);
    return {helpers.begin(), helpers.end()};
  }

  void RunPump(Pump& p, const std::function<void(int, std::string_view, Clock::time_point)>& hook);
};

void Supervisor::Impl::RunPump(
    Pump& p, const std::function<void(int, std::string_view, Clock::time_point)>& hook) {
  // This thread alone takes the wake signal (every other thread inherits it blocked).
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, PumpWakeSignal());
  pthread_sigmask(SIG_UNBLOCK, &wake, nullptr);
  std::string partial;
  // Blocking reads, as cat does them: under heavy output one syscall per chunk and no poll; the
  // read goes straight into the tail ring.
  while (true) {
    auto [into, room] = p.ring.Reserve();
    ssize_t n = ::read(p.in_fd, into, room);
    p.ring.Commit(n > 0 ? static_cast<std::size_t>(n) : 0);
    if (n < 0) {
      if (errno == EINTR && !pump_stop.load()) continue;
      break;  // told to stop (EINTR) or a read error
    }
    if (n == 0) break;  // every writer closed: end of stream
    const auto now = Clock::now();
    last_output.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    // Forward first: blocking here is the backpressure (the pipe fills, the job's write blocks),
    // nothing is ever dropped while our stdout is merely slow.
    if (!p.out_broken && !WriteAll(p.out_fd, into, static_cast<std::size_t>(n))) {
      p.out_broken = true;
      log::Warn("cannot write the job's {} to ours ({}); still reading it for the run directory",
                p.stream == kStdout ? "stdout" : "stderr", ErrnoText(errno));
    }
    p.bytes += static_cast<std::size_t>(n);
    if (!hook) continue;
    // Whole lines go to the hook in one block, straight from the read buffer when no partial
    // line is pending; only the unterminated tail of a read is copied (to `partial`).
    std::string_view data(into, static_cast<std::size_t>(n));
    if (!partial.empty()) {  // finish the pending line first
      const std::size_t nl = data.find('\n');
      const std::size_t take = nl == std::string_view::npos ? data.size() : nl + 1;
      partial.append(data.substr(0, take));
      data.remove_prefix(take);
      if (nl != std::string_view::npos) {
        hook(p.stream, partial, now);
        partial.clear();
      }
    }
    if (partial.empty()) {  // `data` starts at a line start
      const void* last = data.empty() ? nullptr : ::memrchr(data.data(), '\n', data.size());
      if (last != nullptr) {
        const std::size_t whole = static_cast<const char*>(last) - data.data() + 1;
        hook(p.stream, data.substr(0, whole), now);
        data.remove_prefix(whole);
      }
      partial.append(data);
    }
    while (partial.size() >= kMaxHookLine) {
      hook(p.stream, std::string_view(partial).substr(0, kMaxHookLine), now);
      partial.erase(0, kMaxHookLine);
    }
  }
  if (hook && !partial.empty()) hook(p.stream, partial, Clock::now());
  std::lock_guard lock(p.done_mu);
  p.done = true;
  p.done_cv.notify_all();
}

// ---------------------------------------------------------------------------------------------

Supervisor::Supervisor(SupervisorOptions options, SupervisorHooks hooks)
    : options_(std::move(options)), hooks_(std::move(hooks)), impl_(std::make_unique<Impl>()) {
  impl_->self = this;
  impl_->start = Clock::now();
  impl_->last_output = impl_->start.time_since_epoch().count();
}

Supervisor::~Supervisor() {
  for (auto& p : impl_->pumps) {
    if (p.thread.joinable()) p.thread.detach();
  }
  for (int fd : {impl_->sig_fd, impl_->wake_fd}) {
    if (fd >= 0) ::close(fd);
  }
}

void Supervisor::RequestStop(std::string reason, std::optional<int> exit_status,
                             std::string requested_by) {
  {
    std::lock_guard lock(impl_->stop_mu);
    if (!impl_->stop_requested) {
      impl_->stop_requested = true;
      impl_->stop_reason = std::move(reason);
      impl_->stopped_by = std::move(requested_by);
      impl_->status_override = exit_status;
    } else if (exit_status && !impl_->status_override) {
      impl_->status_override = exit_status;
    }
  }
  if (impl_->wake_fd >= 0) {
    std::uint64_t one = 1;
    (void)!::write(impl_->wake_fd, &one, sizeof one);
  }
}

std::vector<pid_t> Supervisor::Descendants() const {
  return LiveDescendants(::getpid(), impl_->HelperPids());
}

Clock::time_point Supervisor::LastOutput() const {
  return Clock::time_point(Clock::duration(impl_->last_output.load(std::memory_order_relaxed)));
}

Clock::time_point Supervisor::StartTime() const { return impl_->start; }

std::vector<std::string> Supervisor::TailLines(int stream, std::size_t n) const {
  const auto& ring = impl_->pumps[stream == kStderr ? 1 : 0].ring;
  return LastLines(ring.Contents(), ring.Truncated(), n);
}

Result<HelperResult> Supervisor::RunHelper(const std::vector<std::string>& argv,
                                           std::chrono::milliseconds deadline,
                                           std::size_t max_output) {
  if (argv.empty()) return MakeError("RunHelper: empty command");
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return MakeError("pipe: " + ErrnoText(errno), argv[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  {
    std::lock_guard lock(g_block_mu);
    if (g_blocked) {
      posix_spawnattr_setsigmask(&attr, &g_original_mask);
      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    }
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err;
  {
    // Held across spawn+register so the main loop cannot reap the helper before it is known.
    std::lock_guard lock(impl_->reap_mu);
    err = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
    if (err == 0) impl_->helpers.insert(pid);
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  if (err != 0) {
    ::close(out[0]);
    return MakeError("cannot run: " + ErrnoText(err), argv[0], "install it or check PATH");
  }
  HelperResult result;
  const auto end = Clock::now() + deadline;
  char buf[16384];
  bool eof = false;
  while (!eof) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fd{out[0], POLLIN, 0};
    int r = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    if (result.output.size() < max_output) {
      result.output.append(buf, std::min<std::size_t>(n, max_output - result.output.size()));
    }
  }
  ::close(out[0]);
  if (result.timed_out) ::kill(pid, SIGKILL);
  // Reap: either we get it here, or the main loop already did and left the status.
  for (int i = 0;; ++i) {
    {
      std::lock_guard lock(impl_->reap_mu);
      int st = 0;
      auto it = impl_->helper_status.find(pid);
      bool got = false;
      if (it != impl_->helper_status.end()) {
        st = it->second;
        impl_->helper_status.erase(it);
        got = true;
      } else if (::waitpid(pid, &st, WNOHANG) == pid) {
        got = true;
      }
      if (got) {
        impl_->helpers.erase(pid);
        if (!result.timed_out) {
          result.exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        break;
      }
    }
    if (Clock::now() > end && i % 50 == 0) ::kill(pid, SIGKILL);
    if (Clock::now() > end) result.timed_out = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------

namespace {

struct ExecPlan {
  std::vector<std::string> candidates;  // absolute or relative paths to try, in order
  std::string path_searched;
};

ExecPlan PlanExec(const std::string& file, const Environment& env) {
  ExecPlan plan;
  if (file.find('/') != std::string::npos) {
    plan.candidates.push_back(file);
    return plan;
  }
  plan.path_searched = Lookup(env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  // Empty PATH elements mean the current directory, as in execvp.
  std::size_t start = 0;
  while (start <= plan.path_searched.size()) {
    std::size_t colon = plan.path_searched.find(':', start);
    if (colon == std::string::npos) colon = plan.path_searched.size();
    std::string dir = plan.path_searched.substr(start, colon - start);
    plan.candidates.push_back(dir.empty() ? file : dir + "/" + file);
    start = colon + 1;
  }
  return plan;
}

}  // namespace

Result<JobExit> Supervisor::Run() {
  Impl& im = *impl_;
  BlockSupervisorSignals();
  JobExit exit;
  exit.started = Clock::now();
  im.start = exit.started;
  im.start_wall = std::chrono::system_clock::now();
  im.last_output = im.start.time_since_epoch().count();
  if (options_.argv.empty()) return MakeError("no command to run", "", "put the command after --");

  const sigset_t handled = HandledSet();
  // A SIGTERM/SIGINT that arrived while we prepared (preflight, warm-up): do not start the job.
  {
    sigset_t pending;
    sigpending(&pending);
    for (int s : {SIGTERM, SIGINT}) {
      if (sigismember(&pending, s)) {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, s);
        timespec zero{0, 0};
        siginfo_t info{};
        if (sigtimedwait(&one, &info, &zero) == s) {
          exit.how = JobExit::How::kNotStarted;
          exit.signal = s;
          exit.exit_status = 128 + s;
          exit.stopped_by = SignalName(s) + " from pid " + std::to_string(info.si_pid);
          exit.stop_reason = "received before the job started; job not started";
          exit.message = exit.stop_reason;
          exit.ended = Clock::now();
          log::Warn("{} {}", exit.stopped_by, exit.stop_reason);
          return exit;
        }
      }
    }
  }

  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    log::Warn("prctl(PR_SET_CHILD_SUBREAPER) failed ({}); orphaned workers will not be swept",
              ErrnoText(errno));
  }
  im.sig_fd = ::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  im.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (im.sig_fd < 0 || im.wake_fd < 0) {
    return MakeError("signalfd/eventfd: " + ErrnoText(errno));
  }
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    return MakeError("pipe: " + ErrnoText(errno), "", "raise the open-files limit (ulimit -n)");
  }
  // Bigger pipes mean fewer context switches at high output rates; the size is best effort.
  ::fcntl(out_pipe[0], F_SETPIPE_SZ, 1 << 20);
  ::fcntl(err_pipe[0], F_SETPIPE_SZ, 1 << 20);

  // Everything the child needs is built before fork: after fork only async-signal-safe calls.
  const ExecPlan plan = PlanExec(options_.argv[0], options_.env);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : options_.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = options_.argv;
  for (auto& s : argv_copy) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<const char*> candidates;
  for (const auto& c : plan.candidates) candidates.push_back(c.c_str());
  const pid_t parent = ::getpid();
  const int death_signal = options_.parent_death_signal;
  sigset_t child_mask = g_original_mask;

  pid_t pid = ::fork();
  if (pid < 0) return MakeError("fork: " + ErrnoText(errno), "", "check ulimit -u and memory");
  if (pid == 0) {
    // Child. PDEATHSIG first, then check the parent did not die before it took effect.
    if (death_signal > 0) ::prctl(PR_SET_PDEATHSIG, death_signal);
    if (::getppid() != parent) ::_exit(1);
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    int err = ENOENT;
    bool significant = false;  // as execvp: EACCES somewhere beats ENOENT elsewhere
    for (const char* c : candidates) {
      ::execve(c, argv.data(), envp.data());
      if (errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG) {
        if (!significant) err = errno;
      } else {
        err = errno;
        significant = true;
        if (errno != EACCES) break;
      }
    }
    (void)!::write(exec_pipe[1], &err, sizeof err);
    ::_exit(err == ENOENT || err == ENOTDIR || err == ENAMETOOLONG ? 127 : 126);
  }
  // Parent. setpgid here too: whichever of parent/child runs first, the group exists before we
  // might signal it.
  ::setpgid(pid, pid);
  job_pid_ = pid;
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  int exec_errno = 0;
  {
    ssize_t n;
    do {
      n = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
    } while (n < 0 && errno == EINTR);
    if (n != sizeof exec_errno) exec_errno = 0;  // EOF: exec succeeded (CLOEXEC closed it)
    ::close(exec_pipe[0]);
  }
  std::string exec_message;
  if (exec_errno != 0) {
    const std::string& cmd = options_.argv[0];
    if (exec_errno == ENOENT || exec_errno == ENOTDIR) {
      exec_message = plan.path_searched.empty()
                         ? "cannot run the job: '" + cmd + "': " + ErrnoText(exec_errno)
                         : "cannot run the job: '" + cmd +
                               "' was not found in PATH=" + plan.path_searched +
                               " (fix: check the command name or PATH)";
    } else if (exec_errno == EACCES) {
      exec_message = "cannot run the job: '" + cmd +
                     "': permission denied (fix: chmod +x it, or check it is not a directory "
                     "and its file system is not mounted noexec)";
    } else if (exec_errno == ENOEXEC) {
      exec_message = "cannot run the job: '" + cmd +
                     "': not an executable format (fix: add a #! line or run it with its "
                     "interpreter)";
    } else {
      exec_message = "cannot run the job: '" + cmd + "': " + ErrnoText(exec_errno);
    }
    log::Error("{}", exec_message);
  }

  im.pumps[0].stream = kStdout;
  im.pumps[0].in_fd = out_pipe[0];
  im.pumps[0].out_fd = 1;
  im.pumps[1].stream = kStderr;
  im.pumps[1].in_fd = err_pipe[0];
  im.pumps[1].out_fd = 2;
  {
    // The pumps' wake signal: a no-op handler without SA_RESTART, blocked in every thread but
    // the pumps (threads started from here on inherit the mask).
    struct sigaction sa {};
    sa.sa_handler = NoopHandler;
    sigemptyset(&sa.sa_mask);
    ::sigaction(PumpWakeSignal(), &sa, nullptr);
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, PumpWakeSignal());
    pthread_sigmask(SIG_BLOCK, &wake, nullptr);
  }
  for (auto& p : im.pumps) {
    p.thread = std::thread([&im, &p, this] { im.RunPump(p, hooks_.on_output); });
  }

  auto status_json = [&](const char* state) {
    nlohmann::json j =
        options_.status_extra.is_object() ? options_.status_extra : nlohmann::json::object();
    j["schema"] = 1;
    j["state"] = state;
    j["command"] = options_.argv;
    j["host"] = log::HostName();
    j["safe_launch_pid"] = static_cast<int>(parent);
    j["job_pid"] = static_cast<int>(pid);
    j["run_dir"] = options_.run_dir;
    j["started_at"] = IsoUtc(im.start_wall);
    j["kill_grace_s"] = options_.kill_grace.count() / 1000.0;
    return j;
  };
  if (!options_.run_dir.empty()) {
    WriteFileAtomic(options_.run_dir + "/status.json", status_json("running").dump(2) + "\n");
  }
  if (exec_errno == 0 && hooks_.on_start) hooks_.on_start(pid);

  // ---- the loop -------------------------------------------------------------------------------
  bool job_reaped = false;
  int job_wait_status = 0;
  bool sweeping = false;
  std::optional<Clock::time_point> sweep_kill_at;
  std::set<pid_t> swept;
  int kill_rounds = 0;

  auto kill_all = [&](int sig, std::set<pid_t>* record) {
    auto pids = LiveDescendants(parent, im.HelperPids());
    for (pid_t d : pids) {
      if (::kill(d, sig) == 0 && record) record->insert(d);
    }
    return pids.size();
  };
  auto reap = [&] {
    std::lock_guard lock(im.reap_mu);
    while (true) {
      int st = 0;
      pid_t r = ::waitpid(-1, &st, WNOHANG);
      if (r <= 0) break;
      if (r == pid) {
        job_reaped = true;
        job_wait_status = st;
        exit.ended = Clock::now();
      } else if (im.helpers.count(r)) {
        im.helper_status[r] = st;
      }
    }
  };
  auto forward = [&](int sig, const std::string& from) {
    if (job_reaped) return;
    if (::kill(pid, sig) == 0) {
      im.Event("forwarded " + SignalName(sig) + " " + from + " to the job (pid " +
               std::to_string(pid) + ")");
    }
  };
  auto start_stop = [&](const std::string& by, const std::string& reason, bool send_term) {
    std::lock_guard lock(im.stop_mu);
    if (!im.stop_requested) {
      im.stop_requested = true;
      im.stopped_by = by;
      im.stop_reason = reason;
    }
    im.stop_acted = true;
    if (send_term && !job_reaped && ::kill(pid, SIGTERM) == 0) {
      im.Event("stop (" + im.stopped_by + ": " + im.stop_reason +
               "): sent SIGTERM to the job (pid " + std::to_string(pid) +
               "), descendants get TERM/KILL in " +
               std::to_string(options_.kill_grace.count() / 1000.0).substr(0, 5) + " s");
    }
    im.grace_deadline = Clock::now() + options_.kill_grace;
  };

  while (true) {
    auto now = Clock::now();
    // ---- wait for a signal, a stop request or the tick ----
    auto timeout = options_.tick;
    for (auto d : {im.grace_deadline, im.kill_deadline, sweep_kill_at}) {
      if (d) {
        timeout = std::min(
            timeout, std::max(std::chrono::milliseconds(0),
                              std::chrono::duration_cast<std::chrono::milliseconds>(*d - now)));
      }
    }
    pollfd fds[2] = {{im.sig_fd, POLLIN, 0}, {im.wake_fd, POLLIN, 0}};
    ::poll(fds, 2, static_cast<int>(timeout.count()));

    signalfd_siginfo si;
    while (::read(im.sig_fd, &si, sizeof si) == sizeof si) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD || sig == SIGPIPE) continue;
      std::string from = si.ssi_pid != 0 ? "from pid " + std::to_string(si.ssi_pid) + " (" +
                                               ProcComm(static_cast<pid_t>(si.ssi_pid)) + ")"
                                         : "from the terminal/kernel";
      if (sig == SIGTERM || sig == SIGINT) {
        ++im.stop_signals;
        forward(sig, from);
        if (im.stop_signals == 1) {
          start_stop(SignalName(sig) + " " + from, "forwarded " + SignalName(sig) + " to the job",
                     false);
        } else if (!im.escalated) {
          // A second SIGINT/SIGTERM: the user (or Slurm) is out of patience -- skip the grace.
          im.Event("second " + SignalName(sig) + " " + from + ": skipping the rest of the grace");
          im.grace_deadline = Clock::now();
        }
      } else {
        forward(sig, from);
      }
    }
    std::uint64_t wake;
    while (::read(im.wake_fd, &wake, sizeof wake) == sizeof wake) {
    }
    {
      bool act = false;
      std::string by, reason;
      {
        std::lock_guard lock(im.stop_mu);
        act = im.stop_requested && !im.stop_acted;
        by = im.stopped_by;
        reason = im.stop_reason;
      }
      if (act) start_stop(by, reason, true);
    }

    reap();
    now = Clock::now();

    if (!job_reaped) {
      if (im.grace_deadline && !im.escalated && now >= *im.grace_deadline) {
        im.escalated = true;
        size_t n = kill_all(SIGTERM, &swept);
        im.Event("grace ran out: sent SIGTERM to the job and " + std::to_string(n) +
                 " descendant(s); SIGKILL follows in " +
                 std::to_string(options_.sweep_grace.count()) + " ms");
        im.kill_deadline = now + options_.sweep_grace;
      }
      if (im.kill_deadline && now >= *im.kill_deadline) {
        size_t n = kill_all(SIGKILL, &swept);
        if (n > 0) im.Event("sent SIGKILL to " + std::to_string(n) + " remaining process(es)");
        im.kill_deadline = now + std::chrono::milliseconds(500);  // again if one survived
      }
      if (hooks_.on_tick) hooks_.on_tick(now);
      continue;
    }

    // ---- the job is gone: sweep what it left behind ----
    if (!sweeping) {
      sweeping = true;
      auto left = LiveDescendants(parent, im.HelperPids());
      if (left.empty()) break;
      std::string list;
      for (pid_t d : left) list += " " + std::to_string(d) + "(" + ProcComm(d) + ")";
      kill_all(SIGTERM, &swept);
      im.Event("the job exited; sent SIGTERM to " + std::to_string(left.size()) +
               " leftover process(es):" + list);
      sweep_kill_at = now + options_.sweep_grace;
      continue;
    }
    auto left = LiveDescendants(parent, im.HelperPids());
    if (left.empty()) break;
    if (sweep_kill_at && now >= *sweep_kill_at) {
      kill_all(SIGKILL, &swept);
      im.Event("sent SIGKILL to " + std::to_string(left.size()) + " leftover process(es)");
      sweep_kill_at = now + std::chrono::milliseconds(500);
      // Processes in uninterruptible sleep (D) cannot die; do not wait for them forever.
      if (++kill_rounds > 10) {
        log::Warn("{} process(es) survived SIGKILL (uninterruptible sleep?); giving up",
                  left.size());
        break;
      }
    }
  }
  reap();

  // ---- drain the output: everything the job wrote reaches our stdout/stderr ----
  auto wait_pumps = [&](std::chrono::milliseconds d) {
    const auto until = Clock::now() + d;
    bool all = true;
    for (auto& p : im.pumps) {
      std::unique_lock lock(p.done_mu);
      if (!p.done_cv.wait_until(lock, until, [&] { return p.done; })) all = false;
    }
    return all;
  };
  if (!wait_pumps(std::chrono::seconds(5))) {
    // Someone outside our tree still holds the pipes open (a process that passed the fd on).
    log::Warn("the job's output pipes are still open after every descendant exited; stopping");
    im.pump_stop = true;
    // Repeated: a signal that lands just before a pump enters read() is lost.
    for (int i = 0; i < 40 && !wait_pumps(std::chrono::milliseconds(50)); ++i) {
      for (auto& p : im.pumps) {
        std::lock_guard lock(p.done_mu);
        if (!p.done) pthread_kill(p.thread.native_handle(), PumpWakeSignal());
      }
    }
  }
  for (auto& p : im.pumps) {
    bool done;
    {
      std::lock_guard lock(p.done_mu);
      done = p.done;
    }
    if (done) {
      p.thread.join();
      ::close(p.in_fd);
    } else {
      p.thread.detach();  // blocked writing to our stdout; process exit ends it
    }
  }

  // ---- result ----
  if (exec_errno != 0) {
    exit.how = JobExit::How::kExecFailed;
    exit.code =
        (exec_errno == ENOENT || exec_errno == ENOTDIR || exec_errno == ENAMETOOLONG) ? 127 : 126;
    exit.exit_status = exit.code;
    exit.message = exec_message;
  } else if (WIFSIGNALED(job_wait_status)) {
    exit.how = JobExit::How::kSignaled;
    exit.signal = WTERMSIG(job_wait_status);
    exit.exit_status = 128 + exit.signal;
  } else {
    exit.how = JobExit::How::kExited;
    exit.code = WEXITSTATUS(job_wait_status);
    exit.exit_status = exit.code;
  }
  std::optional<int> override_status;
  {
    std::lock_guard lock(im.stop_mu);
    if (im.stop_requested) {
      exit.stopped_by = im.stopped_by;
      exit.stop_reason = im.stop_reason;
      if (im.status_override) exit.exit_status = *im.status_override;
      override_status = im.status_override;
    }
  }
  exit.escalated = im.escalated;
  exit.swept.assign(swept.begin(), swept.end());
  if (exit.ended == Clock::time_point{}) exit.ended = Clock::now();

  if (!options_.run_dir.empty()) {
    for (auto& p : im.pumps) {
      std::string text;
      for (const auto& l : LastLines(p.ring.Contents(), p.ring.Truncated(), options_.tail_lines)) {
        text += l + "\n";
      }
      WriteFileAtomic(options_.run_dir + (p.stream == kStdout ? "/stdout.tail" : "/stderr.tail"),
                      text);
    }
  }
  if (hooks_.on_exit) hooks_.on_exit(exit);

  if (!options_.run_dir.empty()) {
    nlohmann::json j = status_json("finished");
    const auto end_wall =
        im.start_wall +
        std::chrono::duration_cast<std::chrono::system_clock::duration>(exit.ended - exit.started);
    j["ended_at"] = IsoUtc(end_wall);
    j["duration_s"] = std::chrono::duration<double>(exit.ended - exit.started).count();
    const char* how = exit.how == JobExit::How::kExited       ? "exited"
                      : exit.how == JobExit::How::kSignaled   ? "signaled"
                      : exit.how == JobExit::How::kExecFailed ? "exec_failed"
                                                              : "not_started";
    j["job"] = {
        {"how", how},
        {"exit_code",
         exit.how == JobExit::How::kSignaled ? nlohmann::json() : nlohmann::json(exit.code)},
        {"signal", exit.signal ? nlohmann::json(exit.signal) : nlohmann::json()},
        {"signal_name", exit.signal ? nlohmann::json(SignalName(exit.signal)) : nlohmann::json()},
        {"message", exit.message}};
    j["exit_status"] = exit.exit_status;
    if (exit.stopped_by.empty()) {
      j["stop"] = nullptr;
    } else {
      j["stop"] = {{"requested_by", exit.stopped_by},
                   {"reason", exit.stop_reason},
                   {"escalated", exit.escalated},
                   {"exit_status_override",
                    override_status ? nlohmann::json(*override_status) : nlohmann::json()}};
    }
    j["swept_pids"] = exit.swept;
    j["output_bytes"] = {{"stdout", im.pumps[0].bytes}, {"stderr", im.pumps[1].bytes}};
    // safe-launch's own cost (every thread, no children): what supervising this job took.
    rusage self{};
    if (::getrusage(RUSAGE_SELF, &self) == 0) {
      auto secs = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
      j["supervisor_rusage"] = {{"user_s", secs(self.ru_utime)},
                                {"sys_s", secs(self.ru_stime)},
                                {"max_rss_kib", self.ru_maxrss}};
    }
    {
      std::lock_guard lock(im.events_mu);
      j["events"] = im.events;
    }
    WriteFileAtomic(options_.run_dir + "/status.json", j.dump(2) + "\n");
  }
  return exit;
}

}  // namespace sl::watchdog
