// The supervisor loop, in tini's steps: spawn (common/spawn.h), wait on the signalfd or the tick,
// forward, reap any child (TryReap(-1)), feed the escalation state machine (watchdog/escalation.h)
// and carry out its actions, sweep, drain the output, write the status. Why not Boost.Process: as a
// child subreaper we must reap every child with waitpid(-1) (orphaned setsid'd torchrun workers
// are re-parented to us), which steals the status its child::wait() expects. See doc/manual.md,
// "Running a job".
#include "watchdog/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

#include "common/line_assembler.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "watchdog/escalation.h"
#include "watchdog/process_tree.h"
#include "watchdog/status.h"

namespace sl::watchdog {

namespace {

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

// Whether a byte waits in the pipe `fd` now (poll, no wait; interrupted counts as yes, so that
// the caller asks again).
bool InputWaiting(int fd) {
  pollfd in{fd, POLLIN, 0};
  const int r = ::poll(&in, 1, 0);
  if (r < 0) return errno == EINTR;
  return r > 0 && (in.revents & POLLIN) != 0;
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

// status.json and the tails hold the command line and job output: 0600 and redacted
// (watchdog/status.h); a write failure is logged, the job goes on.
void WarnIfFailed(const Status& s) {
  if (!s.ok()) log::Warn("{}", s.error().Describe());
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

/// A hook wrapped so that an exception (a JSON writer fed bad bytes, a full disk in a bundle)
/// is logged and swallowed: the hooks serve the job, they must never take its status away or
/// terminate a pump thread (std::terminate = exit 134 with the job orphaned).
template <class... Args>
std::function<void(Args...)> Guarded(const char* name, std::function<void(Args...)> hook) {
  if (!hook) return hook;
  // Logged once per hook: an on_tick that fails every tick must not flood the job's log.
  auto logged = std::make_shared<std::atomic<bool>>(false);
  return [name, logged, hook = std::move(hook)](Args... args) {
    try {
      hook(args...);
    } catch (const std::exception& e) {
      if (!logged->exchange(true)) {
        log::Error("internal error in the {} hook: {}; supervision goes on", name, e.what());
      }
    } catch (...) {
      if (!logged->exchange(true)) {
        log::Error("internal error in the {} hook; supervision goes on", name);
      }
    }
  };
}

SupervisorHooks GuardHooks(SupervisorHooks h) {
  h.on_start = Guarded("on_start", std::move(h.on_start));
  h.on_output = Guarded("on_output", std::move(h.on_output));
  h.on_tick = Guarded("on_tick", std::move(h.on_tick));
  h.on_ended = Guarded("on_ended", std::move(h.on_ended));
  h.on_exit = Guarded("on_exit", std::move(h.on_exit));
  if (h.on_stop_signal) {
    h.on_stop_signal = [f = std::move(h.on_stop_signal)](int sig, long from) -> nlohmann::json {
      try {
        return f(sig, from);
      } catch (const std::exception& e) {
        log::Error("internal error in the on_stop_signal hook: {}; the stop goes on", e.what());
        return nullptr;
      }
    };
  }
  return h;
}

}  // namespace

void BlockSupervisorSignals() {
  sl::BlockLoopSignals(std::vector<int>(std::begin(kHandledSignals), std::end(kHandledSignals)));
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

// How a pump hands the job's bytes on to our stdout/stderr.
enum class Forward {
  kTee,      // ours is a pipe: tee(2) into it, no copy; the read into the ring consumes the bytes
  kSplice,   // a file, a socket: tee(2) into a private pipe, splice(2) from it to ours
  kCopy,     // a terminal, or where the kernel refused: read(2) into the ring, write(2) from it
  kDiscard,  // /dev/null: read(2) into the ring, nothing written (what /dev/null takes is gone)
};

// ---------------------------------------------------------------------------------------------
struct Supervisor::Impl {
  struct Pump {
    int stream = 0;
    int in_fd = -1;   // read end of the job's pipe
    int out_fd = -1;  // our stdout / stderr
    Forward forward = Forward::kCopy;
    int via[2] = {-1, -1};  // kSplice: the private pipe tee(2) fills and splice(2) empties
    ReadRing ring;
    std::thread thread;
    std::mutex done_mu;
    std::condition_variable done_cv;
    bool done = false;
    std::uint64_t bytes = 0;
    bool out_broken = false;
    // While the pump is blocked writing to our stdout/stderr it cannot read: the job's silence
    // is then ours (a slow or paused consumer), not the job's.
    std::atomic<bool> writing{false};
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

  // Stop requests from any thread land here; the main thread feeds them to the escalation.
  std::mutex stop_mu;
  bool stop_requested = false;
  bool stop_acted = false;
  std::string stopped_by;
  std::string stop_reason;
  std::optional<int> status_override;

  // The job, as the main loop sees it.
  pid_t parent = 0;
  pid_t pid = 0;
  SpawnedChild child;
  std::string exec_message;
  bool job_reaped = false;
  int job_wait_status = 0;
  Clock::time_point job_ended;
  std::set<pid_t> swept;
  std::optional<Escalation> esc;
  bool stop_hook_ran = false;
  nlohmann::json stop_detail;  // what on_stop_signal returned

  nlohmann::json events = nlohmann::json::array();
  std::mutex events_mu;
  // Knows the job's secrets (env, argv) for status.json and the tails; made in Run().
  std::unique_ptr<hang::Redactor> redactor;

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
  void ChooseForward(Pump& p);
  ssize_t PumpChunk(Pump& p, char* into, std::size_t room);
  ssize_t TeeChunk(Pump& p, int to, std::size_t room);
  bool SpliceOut(Pump& p, const char* copy, std::size_t n);
  void StopForwarding(Pump& p, int err);

  // The steps of Run(), in order.
  std::optional<JobExit> NotStartedBySignal();
  Status OpenLoopFds();
  Status StartPumps(int out_read, int err_read);
  Status StartJob();
  void Loop();
  void WaitForWork();
  void ReadSignals();
  void TakeStopRequest();
  void Reap();
  void Apply(const std::vector<EscalationAction>& actions);
  std::size_t KillAll(int sig);
  void Drain();
  JobExit MakeExit();
  nlohmann::json StatusJson(const char* state) const;
  void WriteFinalStatus(const JobExit& exit);
};

// Job output passes through a pipe of ours; how it goes on depends on what our stdout is.
// Measured (bench/supervise.sh): read + write cost two copies through user space per byte, and
// the tail ring and the hang scanner need the bytes once; tee(2) hands the job's pipe buffers to
// the next pipe by reference, so only the read into the ring copies.
ssize_t Supervisor::Impl::TeeChunk(Pump& p, int to, std::size_t room) {
  // Non-blocking tee, then a poll on the one side that stopped it: a job that is silent (no
  // input) is told apart from a consumer that is slow (no room), as read/write tell them apart.
  // Only the pump reads p.in_fd, so once poll() said it is readable it stays so: a tee that then
  // still fails with EAGAIN means `to` is full. (One poll per wait, not a zero-timeout probe
  // first: this runs once per chunk at full rate.)
  bool readable = false;
  while (true) {
    const ssize_t n = ::tee(p.in_fd, to, room, SPLICE_F_NONBLOCK);
    if (n > 0 || (n < 0 && errno != EAGAIN)) return n;
    // 0 is end of stream only when no byte waits: tee(2) also returns 0 when `to` filled up
    // between its room check and the move (the other pump and our log lines write to the same
    // pipe when stdout and stderr are one, as under ctest or `2>&1 |`). Taking that 0 for the
    // end stopped this pump while the job still wrote: its pipe filled and the job hung.
    if (n == 0 && !InputWaiting(p.in_fd)) return 0;
    if (n == 0) readable = true;
    if (!readable) {  // the job may be silent: wait for its bytes (at once if they are there)
      pollfd in{p.in_fd, POLLIN, 0};
      const int r = ::poll(&in, 1, -1);
      if (r < 0 && errno == EINTR && pump_stop.load()) return -1;
      readable = r > 0;
      continue;
    }
    // Input waits and `to` has no room: our consumer is slow.
    readable = false;
    pollfd out{to, POLLOUT, 0};
    p.writing.store(true);
    const int r = ::poll(&out, 1, -1);
    p.writing.store(false);
    if (r < 0 && errno == EINTR && pump_stop.load()) return -1;
  }
}

// The ring's copy of `n` bytes already went to p.via by tee: splice them on to our fd. Falls
// back to writing the copy when the kernel refuses to splice there (O_APPEND files, some
// filesystems): returns false after the fallback, which ends kSplice for this pump.
bool Supervisor::Impl::SpliceOut(Pump& p, const char* copy, std::size_t n) {
  std::size_t done = 0;
  p.writing.store(true);
  while (done < n) {
    const ssize_t m = ::splice(p.via[0], nullptr, p.out_fd, nullptr, n - done, SPLICE_F_MOVE);
    if (m > 0) {
      done += static_cast<std::size_t>(m);
      continue;
    }
    if (m < 0 && errno == EINTR) continue;
    if (m < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
      if (!WriteAll(p.out_fd, copy + done, n - done)) StopForwarding(p, errno);
    } else {
      StopForwarding(p, m < 0 ? errno : EIO);
    }
    p.writing.store(false);
    return false;
  }
  p.writing.store(false);
  return true;
}

void Supervisor::Impl::StopForwarding(Pump& p, int err) {
  if (!p.out_broken) {
    log::Warn("cannot write the job's {} to ours ({}); still reading it for the run directory",
              p.stream == kStdout ? "stdout" : "stderr", ErrnoText(err));
  }
  p.out_broken = true;
}

// One chunk of the job's output: forwarded on, and its copy read into the ring at `into`.
// Returns the bytes now at `into` (0 at end of stream, -1 on a read error or a stop).
ssize_t Supervisor::Impl::PumpChunk(Pump& p, char* into, std::size_t room) {
  if (p.forward == Forward::kDiscard) return ::read(p.in_fd, into, room);
  if (p.forward != Forward::kCopy && !p.out_broken) {  // kTee, kSplice
    const int to = p.forward == Forward::kTee ? p.out_fd : p.via[1];
    const ssize_t n = TeeChunk(p, to, room);
    const int err = n < 0 ? errno : 0;
    if (err == EPIPE) StopForwarding(p, EPIPE);  // the reader of ours went away
    if (err != 0 && err != EINTR && err != EPIPE) p.forward = Forward::kCopy;  // refused: copy
    if (n > 0) {
      // The same bytes, consumed from the job's pipe into the ring (they are there already).
      std::size_t got = 0;
      while (got < static_cast<std::size_t>(n)) {
        const ssize_t m = ::read(p.in_fd, into + got, static_cast<std::size_t>(n) - got);
        if (m <= 0 && !(m < 0 && errno == EINTR)) break;
        if (m > 0) got += static_cast<std::size_t>(m);
      }
      if (p.forward == Forward::kSplice && !SpliceOut(p, into, got)) {
        p.forward = Forward::kCopy;
        ::close(p.via[0]);  // what is left in it was written from the copy
        ::close(p.via[1]);
        p.via[0] = p.via[1] = -1;
      }
      return static_cast<ssize_t>(got);
    }
    if (n == 0 || err == EINTR) {
      errno = err;
      return n;
    }
  }
  const ssize_t n = ::read(p.in_fd, into, room);
  if (n <= 0 || p.out_broken) return n;
  // Blocking here is the backpressure (the pipe fills, the job's write blocks): nothing is ever
  // dropped while our stdout is merely slow.
  p.writing.store(true);
  if (!WriteAll(p.out_fd, into, static_cast<std::size_t>(n))) StopForwarding(p, errno);
  p.writing.store(false);
  return n;
}

void Supervisor::Impl::RunPump(
    Pump& p, const std::function<void(int, std::string_view, Clock::time_point)>& hook) {
  // This thread alone takes the wake signal (every other thread inherits it blocked).
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, PumpWakeSignal());
  pthread_sigmask(SIG_UNBLOCK, &wake, nullptr);
  auto now = Clock::now();
  // Whole lines go to the hook in one block, straight from the ring; only the unterminated tail
  // of a chunk is copied (common/line_assembler.h, pieces of kMaxHookLine for longer lines).
  LineAssembler lines({kMaxHookLine, LineAssembler::LongLine::kPieces, false},
                      [&](std::string_view text) { hook(p.stream, text, now); });
  while (true) {
    auto [into, room] = p.ring.Reserve();
    const ssize_t n = PumpChunk(p, into, room);
    p.ring.Commit(n > 0 ? static_cast<std::size_t>(n) : 0);
    if (n < 0) {
      if (errno == EINTR && !pump_stop.load()) continue;
      break;  // told to stop (EINTR) or a read error
    }
    if (n == 0) break;  // every writer closed: end of stream
    // After the forward: a write that blocked for long means we were slow, not the job silent.
    now = Clock::now();
    last_output.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    p.bytes += static_cast<std::size_t>(n);
    if (hook) lines.Feed(std::string_view(into, static_cast<std::size_t>(n)));
  }
  now = Clock::now();
  if (hook) lines.Finish();
  for (int& fd : p.via) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
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
  for (const auto& p : impl_->pumps) {
    if (p.writing.load()) return Clock::now();  // blocked on our consumer: not the job's silence
  }
  return Clock::time_point(Clock::duration(impl_->last_output.load(std::memory_order_relaxed)));
}

Clock::time_point Supervisor::StartTime() const { return impl_->start; }

std::vector<std::string> Supervisor::TailLines(int stream, std::size_t n) const {
  const auto& ring = impl_->pumps[stream == kStderr ? 1 : 0].ring;
  return LastLines(ring.Contents(), ring.Truncated(), n);
}

namespace {

// Reads a helper's combined output until EOF or `end`; true when the deadline passed first.
bool ReadHelperOutput(int fd, Clock::time_point end, std::size_t max_output, std::string* out) {
  char buf[16384];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) return true;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r <= 0) continue;  // EINTR or the deadline: checked above
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (out->size() < max_output) {
      out->append(buf, std::min<std::size_t>(n, max_output - out->size()));
    }
  }
}

}  // namespace

Result<HelperResult> Supervisor::RunHelper(const std::vector<std::string>& argv,
                                           std::chrono::milliseconds deadline,
                                           std::size_t max_output) {
  if (argv.empty()) return MakeError("RunHelper: empty command");
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return MakeError("pipe: " + ErrnoText(errno), argv[0]);
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = ProcessEnvironment();
  spec.stdout_fd = spec.stderr_fd = out[1];
  // py-spy, nvidia-smi, scontrol: they die with us (SIGKILL of safe-launch included) and lead
  // their own process group, which their deadline kills whole.
  spec.own_process_group = true;
  spec.death_signal = SIGKILL;
  Result<SpawnedChild> spawned = MakeError("not started");
  {
    // Held across spawn+register so the main loop cannot reap the helper before it is known.
    std::lock_guard lock(impl_->reap_mu);
    spawned = Spawn(spec);
    if (spawned.ok()) impl_->helpers.insert(spawned->pid);
  }
  ::close(out[1]);
  if (!spawned.ok()) {
    ::close(out[0]);
    return spawned.error();  // a failed fork (ulimit -u, pids.max): this collector degrades
  }
  const pid_t pid = spawned->pid;
  HelperResult result;
  const auto end = Clock::now() + deadline;
  result.timed_out = ReadHelperOutput(out[0], end, max_output, &result.output);
  ::close(out[0]);
  // The group while its leader is not reaped yet by us (the main loop may have: then the group
  // id is still held by any member left, so no other process can have it).
  if (result.timed_out) ::kill(-pid, SIGKILL);
  // Reap: either we get it here, or the main loop already did and left the status. The wait
  // leaves SIGTERM/SIGINT/SIGCHLD to the loop's signalfd; its deadline KILLs the group.
  auto reap = [impl = impl_.get()](pid_t p) -> std::optional<int> {
    std::lock_guard lock(impl->reap_mu);
    std::optional<int> st;
    bool gone = false;
    if (auto it = impl->helper_status.find(p); it != impl->helper_status.end()) {
      st = it->second;
      impl->helper_status.erase(it);
    } else if (auto r = TryReap(p, &gone)) {
      st = r->wait_status;
    } else if (gone) {
      st = 0;  // not ours any more (cannot happen while registered): nothing to wait for
    }
    if (st) impl->helpers.erase(p);
    return st;
  };
  WaitOutcome waited = WaitChildren({pid}, end,
                                    WaitPolicy{.tick = std::chrono::milliseconds(10),
                                               .take_signals = false,
                                               .kill_groups = true,
                                               .reap = reap});
  if (waited.deadline_passed) result.timed_out = true;
  if (!result.timed_out) {
    const int st = waited.ends[0].wait_status;
    result.exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  if (spawned->exec_errno != 0) {
    return MakeError("cannot run: " + ErrnoText(spawned->exec_errno), argv[0],
                     "install it or check PATH");
  }
  return result;
}

// ---- the steps of Run() -----------------------------------------------------------------------

namespace {

std::string ExecFailureMessage(const std::string& cmd, int err, const std::string& searched) {
  if (err == ENOENT || err == ENOTDIR) {
    return searched.empty()
               ? "cannot run the job: '" + cmd + "': " + ErrnoText(err)
               : "cannot run the job: '" + cmd + "' was not found in PATH=" + searched +
                     " (fix: check the command name or PATH)";
  }
  if (err == EACCES) {
    return "cannot run the job: '" + cmd +
           "': permission denied (fix: chmod +x it, or check it is not a directory and its file "
           "system is not mounted noexec)";
  }
  if (err == ENOEXEC) {
    return "cannot run the job: '" + cmd +
           "': not an executable format (fix: add a #! line or run it with its interpreter)";
  }
  return "cannot run the job: '" + cmd + "': " + ErrnoText(err);
}

std::string SenderText(const signalfd_siginfo& si) {
  return si.ssi_pid != 0 ? "from pid " + std::to_string(si.ssi_pid) + " (" +
                               ProcComm(static_cast<pid_t>(si.ssi_pid)) + ")"
                         : "from the terminal/kernel";
}

}  // namespace

// A SIGTERM/SIGINT that arrived while we prepared (preflight, warm-up): do not start the job.
std::optional<JobExit> Supervisor::Impl::NotStartedBySignal() {
  auto s = TakeStopSignal();
  if (!s) return std::nullopt;
  JobExit exit;
  exit.started = start;
  exit.how = JobExit::How::kNotStarted;
  exit.signal = s->signal;
  exit.exit_status = 128 + s->signal;
  exit.stopped_by = SignalName(s->signal) + " from pid " + std::to_string(s->from_pid);
  exit.stop_reason = "received before the job started; job not started";
  exit.message = exit.stop_reason;
  exit.ended = Clock::now();
  log::Warn("{} {}", exit.stopped_by, exit.stop_reason);
  return exit;
}

Status Supervisor::Impl::OpenLoopFds() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    log::Warn("prctl(PR_SET_CHILD_SUBREAPER) failed ({}); orphaned workers will not be swept",
              ErrnoText(errno));
  }
  const sigset_t handled = HandledSet();
  sig_fd = ::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (sig_fd < 0 || wake_fd < 0) return MakeError("signalfd/eventfd: " + ErrnoText(errno));
  return OkStatus();
}

namespace {

// A pipe as large as /proc/sys/fs/pipe-max-size allows, up to 1 MiB (the kernel's default
// maximum); never shrunk. Best effort: an error leaves the pipe as it was.
void GrowPipe(int fd) {
  int want = 1 << 20;
  if (std::ifstream max("/proc/sys/fs/pipe-max-size"); max) {
    long v = 0;
    if (max >> v && v >= 4096 && v < want) want = static_cast<int>(v);
  }
  if (::fcntl(fd, F_GETPIPE_SZ) < want) ::fcntl(fd, F_SETPIPE_SZ, want);
}

}  // namespace

// tee(2) needs a pipe on both sides, splice(2) a pipe on one; a terminal takes neither.
void Supervisor::Impl::ChooseForward(Pump& p) {
  struct stat st {};
  if (self->options_.forward_by_copy || ::fstat(p.out_fd, &st) != 0 || ::isatty(p.out_fd)) {
    p.forward = Forward::kCopy;
  } else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
    // /dev/null (Linux's is always char 1:3): a write there only costs a syscall per chunk, and
    // under kSplice a tee and a splice (bench/supervise.sh, our CPU per GiB: 0.67 with them,
    // 0.63-0.65 without).
    p.forward = Forward::kDiscard;
  } else if (S_ISFIFO(st.st_mode)) {
    p.forward = Forward::kTee;
    // tee(2) moves at most what our pipe has room for: at the default 64 KiB that is 16 tee +
    // read pairs (and 16 wake-ups of our consumer) per MiB; at 1 MiB, 4 (one per kMaxRead).
    // Best effort: EPERM past the user's pipe-user-pages-soft leaves it as it was.
    GrowPipe(p.out_fd);
  } else if (::pipe2(p.via, O_CLOEXEC) == 0) {
    p.forward = Forward::kSplice;
    GrowPipe(p.via[0]);  // as large as the job's: one tee moves it all
  } else {
    p.forward = Forward::kCopy;
  }
}

// The pumps start before the job: a thread that cannot start (ulimit -u, pids.max) is then an
// error with nothing to clean up, instead of a job running unread.
Status Supervisor::Impl::StartPumps(int out_read, int err_read) {
  pumps[0].stream = kStdout;
  pumps[0].in_fd = out_read;
  pumps[0].out_fd = 1;
  pumps[1].stream = kStderr;
  pumps[1].in_fd = err_read;
  pumps[1].out_fd = 2;
  for (auto& p : pumps) ChooseForward(p);
  // The pumps' wake signal: a no-op handler without SA_RESTART, blocked in every thread but the
  // pumps (threads started from here on inherit the mask).
  struct sigaction sa {};
  sa.sa_handler = NoopHandler;
  sigemptyset(&sa.sa_mask);
  ::sigaction(PumpWakeSignal(), &sa, nullptr);
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, PumpWakeSignal());
  pthread_sigmask(SIG_BLOCK, &wake, nullptr);
  for (auto& p : pumps) {
    try {
      p.thread = std::thread([this, &p] { RunPump(p, self->hooks_.on_output); });
    } catch (const std::system_error& e) {
      return MakeError(std::string("cannot start an output thread: ") + e.what(), "",
                       "the node is out of processes: check ulimit -u and the cgroup's pids.max");
    }
  }
  return OkStatus();
}

Status Supervisor::Impl::StartJob() {
  const SupervisorOptions& o = self->options_;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return MakeError("pipe: " + ErrnoText(errno), "", "raise the open-files limit (ulimit -n)");
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return MakeError("pipe: " + ErrnoText(errno), "", "raise the open-files limit (ulimit -n)");
  }
  // Bigger pipes mean fewer context switches at high output rates; the size is best effort.
  GrowPipe(out_pipe[0]);
  GrowPipe(err_pipe[0]);
  Status pumps_ok = StartPumps(out_pipe[0], err_pipe[0]);
  Result<SpawnedChild> spawned = MakeError("not started");
  if (pumps_ok.ok()) {
    SpawnSpec spec;
    spec.argv = o.argv;
    spec.env = o.env;
    spec.stdin_fd = kInheritFd;  // the job reads our stdin, as it would without us
    spec.stdout_fd = out_pipe[1];
    spec.stderr_fd = err_pipe[1];
    spec.own_process_group = true;
    spec.death_signal = o.parent_death_signal;
    spawned = Spawn(spec);
  }
  ::close(out_pipe[1]);  // from here on only the job holds the write ends
  ::close(err_pipe[1]);
  if (!pumps_ok.ok() || !spawned.ok()) {
    for (auto& p : pumps) {
      if (p.thread.joinable()) p.thread.join();  // EOF: nobody else holds the write ends
    }
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return pumps_ok.ok() ? spawned.error() : pumps_ok.error();
  }
  child = *spawned;
  pid = child.pid;
  self->job_pid_ = pid;
  if (child.exec_errno != 0) {
    exec_message = ExecFailureMessage(o.argv[0], child.exec_errno, child.path_searched);
    log::Error("{}", exec_message);
  }
  return OkStatus();
}

// Sleeps until a signal, a stop request, the tick or the escalation's next deadline. A sleep far
// longer than asked means safe-launch itself was stopped (SIGSTOP, Ctrl-Z, a paused VM): the
// output clock is re-armed, so the time we did not run is not counted as the job's silence.
void Supervisor::Impl::WaitForWork() {
  const auto before = Clock::now();
  auto timeout = self->options_.tick;
  if (auto d = esc->NextDeadline()) {
    timeout = std::min(timeout, std::max(std::chrono::milliseconds(0),
                                         std::chrono::duration_cast<std::chrono::milliseconds>(
                                             *d - before + std::chrono::microseconds(999))));
  }
  pollfd fds[2] = {{sig_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  ::poll(fds, 2, static_cast<int>(timeout.count()));
  const auto after = Clock::now();
  if (after - before > timeout + std::chrono::seconds(1)) {
    last_output.store(after.time_since_epoch().count(), std::memory_order_relaxed);
    Event(fmt::format(
        "safe-launch did not run for {:.1f} s (stopped or paused): output clock re-armed",
        std::chrono::duration<double>(after - before - timeout).count()));
  }
}

void Supervisor::Impl::ReadSignals() {
  signalfd_siginfo si;
  while (::read(sig_fd, &si, sizeof si) == sizeof si) {
    const int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD || sig == SIGPIPE) continue;
    const std::string from = SenderText(si);
    const auto received = Clock::now();
    const bool stop_signal = sig == SIGTERM || sig == SIGINT;
    if (stop_signal && !stop_hook_ran && !job_reaped && self->hooks_.on_stop_signal) {
      stop_hook_ran = true;
      stop_detail = self->hooks_.on_stop_signal(sig, static_cast<long>(si.ssi_pid));
    }
    const auto& to_ranks = self->options_.signal_ranks;
    if (!job_reaped && std::find(to_ranks.begin(), to_ranks.end(), sig) != to_ranks.end()) {
      // torchrun does not pass USR1/USR2 on to its workers: a checkpoint signal must reach them.
      auto pids = LiveDescendants(parent, HelperPids());
      std::size_t sent = 0;
      for (pid_t d : pids) sent += ::kill(d, sig) == 0 ? 1 : 0;
      Event("delivered " + SignalName(sig) + " " + from + " to " + std::to_string(sent) +
            " process(es) of the job (--signal-ranks)");
    } else if (!job_reaped && ::kill(pid, sig) == 0) {
      Event("forwarded " + SignalName(sig) + " " + from + " to the job (pid " +
            std::to_string(pid) + ")");
    }
    if (sig == SIGTERM || sig == SIGINT) {
      EscalationEvent e{.kind = EscalationEvent::Kind::kStopSignal,
                        .by = SignalName(sig) + " " + from,
                        .reason = "forwarded " + SignalName(sig) + " to the job"};
      e.sender = static_cast<long>(si.ssi_pid);
      const bool first = !esc->Stopping();
      Apply(esc->On(e, received));
      // Slurm may SIGKILL us all at KillWait: say now that the job is being stopped, and why.
      if (first && esc->Stopping() && !self->options_.run_dir.empty()) {
        nlohmann::json j = StatusJson("stopping");
        j["stop"] = {{"requested_by", esc->StoppedBy()},
                     {"reason", esc->StopReason()},
                     {"detail", stop_detail}};
        WarnIfFailed(WriteStatusFile(self->options_.run_dir, j, *redactor));
      }
    }
  }
  std::uint64_t wake;
  while (::read(wake_fd, &wake, sizeof wake) == sizeof wake) {
  }
}

void Supervisor::Impl::TakeStopRequest() {
  EscalationEvent e{.kind = EscalationEvent::Kind::kStopRequest};
  {
    std::lock_guard lock(stop_mu);
    if (!stop_requested || stop_acted) return;
    stop_acted = true;
    e.by = stopped_by;
    e.reason = stop_reason;
  }
  Apply(esc->On(e, Clock::now()));
}

void Supervisor::Impl::Reap() {
  std::lock_guard lock(reap_mu);
  while (auto reaped = TryReap(-1)) {
    const pid_t r = reaped->pid;
    const int st = reaped->wait_status;
    if (r == pid) {
      job_reaped = true;
      job_wait_status = st;
      job_ended = Clock::now();
    } else if (helpers.count(r)) {
      helper_status[r] = st;
    }
  }
}

std::size_t Supervisor::Impl::KillAll(int sig) {
  auto pids = LiveDescendants(parent, HelperPids());
  for (pid_t d : pids) {
    if (::kill(d, sig) == 0) swept.insert(d);
  }
  return pids.size();
}

void Supervisor::Impl::Apply(const std::vector<EscalationAction>& actions) {
  using Kind = EscalationAction::Kind;
  for (const auto& a : actions) {
    switch (a.kind) {
      case Kind::kTermJob:
        if (!job_reaped && ::kill(pid, SIGTERM) == 0) Event(a.text + std::to_string(pid) + a.tail);
        break;
      case Kind::kTermAll:
        Event(a.text + std::to_string(KillAll(SIGTERM)) + a.tail);
        break;
      case Kind::kKillAll:
        if (std::size_t n = KillAll(SIGKILL); n > 0) Event(a.text + std::to_string(n) + a.tail);
        break;
      case Kind::kLog:
        Event(a.text);
        break;
      case Kind::kFinish:
        if (!a.text.empty()) log::Warn("{}", a.text);
        break;
    }
  }
}

// Wait, forward, reap, escalate; then sweep what the job left behind, until nothing is left.
void Supervisor::Impl::Loop() {
  while (!esc->Finished()) {
    WaitForWork();
    TakeStopRequest();
    ReadSignals();
    Reap();
    const auto now = Clock::now();
    if (!job_reaped) {
      Apply(esc->On({.kind = EscalationEvent::Kind::kTick}, now));
      if (self->hooks_.on_tick) self->hooks_.on_tick(now);
      continue;
    }
    auto left = LiveDescendants(parent, HelperPids());
    EscalationEvent e{.kind = esc->JobExited() ? EscalationEvent::Kind::kTick
                                               : EscalationEvent::Kind::kJobExited};
    e.leftovers = left.size();
    for (pid_t d : left) e.leftover_list += " " + std::to_string(d) + "(" + ProcComm(d) + ")";
    Apply(esc->On(e, now));
  }
  Reap();
}

// Everything the job wrote reaches our stdout/stderr before we report.
void Supervisor::Impl::Drain() {
  auto wait_pumps = [&](std::chrono::milliseconds d) {
    const auto until = Clock::now() + d;
    bool all = true;
    for (auto& p : pumps) {
      std::unique_lock lock(p.done_mu);
      if (!p.done_cv.wait_until(lock, until, [&] { return p.done; })) all = false;
    }
    return all;
  };
  if (!wait_pumps(std::chrono::seconds(5))) {
    // Someone outside our tree still holds the pipes open (a process that passed the fd on).
    log::Warn("the job's output pipes are still open after every descendant exited; stopping");
    pump_stop = true;
    // Repeated: a signal that lands just before a pump enters read() is lost.
    for (int i = 0; i < 40 && !wait_pumps(std::chrono::milliseconds(50)); ++i) {
      for (auto& p : pumps) {
        std::lock_guard lock(p.done_mu);
        if (!p.done) pthread_kill(p.thread.native_handle(), PumpWakeSignal());
      }
    }
  }
  for (auto& p : pumps) {
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
}

JobExit Supervisor::Impl::MakeExit() {
  JobExit exit;
  exit.started = start;
  exit.ended = job_ended == Clock::time_point{} ? Clock::now() : job_ended;
  if (child.exec_errno != 0) {
    exit.how = JobExit::How::kExecFailed;
    exit.code = child.ExecExitCode();
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
  if (esc->Stopping()) {
    exit.stopped_by = esc->StoppedBy();
    exit.stop_reason = esc->StopReason();
  }
  {
    std::lock_guard lock(stop_mu);
    if (stop_requested && exit.stopped_by.empty()) {  // the job ended before the loop acted
      exit.stopped_by = stopped_by;
      exit.stop_reason = stop_reason;
    }
    if (status_override) exit.exit_status = *status_override;
  }
  exit.escalated = esc->Escalated();
  exit.stop_detail = stop_detail;
  exit.swept.assign(swept.begin(), swept.end());
  return exit;
}

nlohmann::json Supervisor::Impl::StatusJson(const char* state) const {
  const SupervisorOptions& o = self->options_;
  nlohmann::json j = o.status_extra.is_object() ? o.status_extra : nlohmann::json::object();
  j["schema"] = 1;
  j["state"] = state;
  j["command"] = o.argv;
  j["host"] = log::HostName();
  j["safe_launch_pid"] = static_cast<int>(parent);
  j["job_pid"] = static_cast<int>(pid);
  j["run_dir"] = o.run_dir;
  j["started_at"] = IsoUtc(start_wall);
  j["kill_grace_s"] = o.kill_grace.count() / 1000.0;
  return j;
}

void Supervisor::Impl::WriteFinalStatus(const JobExit& exit) {
  nlohmann::json j = StatusJson("finished");
  const auto end_wall =
      start_wall +
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
  std::optional<int> override_status;
  {
    std::lock_guard lock(stop_mu);
    override_status = status_override;
  }
  if (exit.stopped_by.empty()) {
    j["stop"] = nullptr;
  } else {
    j["stop"] = {{"requested_by", exit.stopped_by},
                 {"reason", exit.stop_reason},
                 {"escalated", exit.escalated},
                 {"detail", exit.stop_detail},
                 {"exit_status_override",
                  override_status ? nlohmann::json(*override_status) : nlohmann::json()}};
  }
  j["swept_pids"] = exit.swept;
  j["output_bytes"] = {{"stdout", pumps[0].bytes}, {"stderr", pumps[1].bytes}};
  // safe-launch's own cost (every thread, no children): what supervising this job took.
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    auto secs = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
    j["supervisor_rusage"] = {{"user_s", secs(usage.ru_utime)},
                              {"sys_s", secs(usage.ru_stime)},
                              {"max_rss_kib", usage.ru_maxrss}};
  }
  {
    std::lock_guard lock(events_mu);
    j["events"] = events;
  }
  WarnIfFailed(WriteStatusFile(self->options_.run_dir, j, *redactor));
}

Result<JobExit> Supervisor::Run() {
  Impl& im = *impl_;
  BlockSupervisorSignals();
  im.start = Clock::now();
  im.start_wall = std::chrono::system_clock::now();
  im.last_output = im.start.time_since_epoch().count();
  im.parent = ::getpid();
  im.esc.emplace(EscalationTimes{options_.kill_grace, options_.sweep_grace});
  hooks_ = GuardHooks(std::move(hooks_));
  if (options_.argv.empty()) return MakeError("no command to run", "", "put the command after --");
  if (auto not_started = im.NotStartedBySignal()) return *not_started;
  if (auto s = im.OpenLoopFds(); !s.ok()) return s.error();
  if (auto s = im.StartJob(); !s.ok()) return s.error();
  const bool dir = !options_.run_dir.empty();
  im.redactor = MakeJobRedactor(options_.env, options_.argv);
  if (dir) WarnIfFailed(WriteStatusFile(options_.run_dir, im.StatusJson("running"), *im.redactor));
  if (im.child.exec_errno == 0 && hooks_.on_start) hooks_.on_start(im.pid);
  im.Loop();
  im.Drain();
  if (hooks_.on_ended) hooks_.on_ended(im.child.exec_errno == 0 ? im.job_wait_status : 0);
  JobExit exit = im.MakeExit();
  for (auto& p : im.pumps) {
    if (!dir) break;
    WarnIfFailed(WriteTailFile(
        options_.run_dir, p.stream == kStdout ? "stdout.tail" : "stderr.tail",
        LastLines(p.ring.Contents(), p.ring.Truncated(), options_.tail_lines), *im.redactor));
  }
  if (hooks_.on_exit) hooks_.on_exit(exit);
  if (dir) im.WriteFinalStatus(exit);
  return exit;
}

}  // namespace sl::watchdog
