#include "common/timed_read.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace sl {
namespace {

constexpr std::size_t kMaxChunk = std::size_t(1) << 20;

// One read handed to a helper. The helper reads into a buffer of its own and copies into
// `dest` only while the caller still waits (both under the lock), so an abandoned read never
// touches the caller's memory; or it reads straight into `shared` (at `dest`), a buffer the job
// keeps alive, so an abandoned read writes only to memory the caller has given up.
struct Job {
  int fd = -1;
  std::size_t n = 0;
  char* dest = nullptr;
  std::shared_ptr<char[]> shared;
  ssize_t got = 0;
  int err = 0;
  bool done = false, abandoned = false;
};

// Idle helpers wait for jobs; a helper whose job was abandoned finishes it, closes the
// descriptor and goes back to idle.
class Helpers {
 public:
  // Never destroyed: a stuck helper may outlive main. A forked child (the post-mortem's
  // diagnosis runs in one) has none of the parent's helper threads, and the parent's state
  // (idle helpers, perhaps a held lock) would make each of its reads wait for a thread that is
  // not there: a process other than the one that made the helpers starts afresh.
  static Helpers& Get() {
    static std::atomic<Helpers*> instance{nullptr};
    Helpers* h = instance.load();
    if (h != nullptr && h->pid_ == ::getpid()) return *h;
    auto* fresh = new Helpers();
    if (instance.compare_exchange_strong(h, fresh)) return *fresh;
    delete fresh;  // another thread of this process made them first
    return *h;
  }

  // Queues `job` for a helper of its own; false when kMaxStuckReads helpers are stuck.
  bool Submit(const std::shared_ptr<Job>& job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_ > 0) {
      --idle_;  // reserved for this job: a read never queues behind another caller's
    } else {
      if (stuck_ >= kMaxStuckReads) return false;
      StartThread();
    }
    queue_.push_back(job);
    work_.notify_one();
    return true;
  }
  // Waits until the helper is done or the deadline; past it the job is the helper's.
  bool Wait(const std::shared_ptr<Job>& job, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait_until(lock, deadline, [&] { return job->done; });
    if (!job->done) {
      job->abandoned = true;
      ++stuck_;
    }
    return job->done;
  }
  int Stuck() {
    std::lock_guard<std::mutex> lock(mu_);
    return stuck_;
  }

 private:
  void StartThread() {
    // Helpers take no signal: the supervisor waits on its signals itself.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread([this] { Loop(); }).detach();
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  void Loop() {
    // Named, so that a look at /proc/PID/task (or a test counting threads) tells them apart.
    ::pthread_setname_np(::pthread_self(), kTimedReadThreadName);
    std::unique_ptr<char[]> buf(new char[kMaxChunk]);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return !queue_.empty(); });
      std::shared_ptr<Job> job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      char* into = job->shared ? job->dest : buf.get();
      ssize_t got;
      do {
        got = ::read(job->fd, into, job->n);
      } while (got < 0 && errno == EINTR);
      const int err = got < 0 ? errno : 0;
      lock.lock();
      if (job->abandoned) {
        ::close(job->fd);  // the caller gave it up at the deadline
        --stuck_;
      } else if (got > 0 && !job->shared) {
        std::memcpy(job->dest, buf.get(), static_cast<std::size_t>(got));
      }
      job->got = got;
      job->err = err;
      job->done = true;
      ++idle_;
      done_.notify_all();
    }
  }

  const pid_t pid_ = ::getpid();
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<std::shared_ptr<Job>> queue_;
  int idle_ = 0, stuck_ = 0;
};

}  // namespace

namespace {

Result<TimedReadResult> Run(const std::shared_ptr<Job>& job,
                            std::chrono::steady_clock::time_point deadline) {
  Helpers& h = Helpers::Get();
  if (!h.Submit(job))
    return MakeError(std::to_string(kMaxStuckReads) +
                         " reads are stuck already on a file system that does not answer; not "
                         "starting another",
                     "", "find the hung mount (`grep nfs /proc/mounts`, dmesg 'not responding')");
  TimedReadResult r;
  if (!h.Wait(job, deadline)) {
    r.timed_out = true;
    return r;
  }
  if (job->got < 0) return MakeError(std::strerror(job->err));
  r.bytes = static_cast<std::size_t>(job->got);
  return r;
}

}  // namespace

Result<TimedReadResult> TimedRead(int fd, char* buf, std::size_t n,
                                  std::chrono::steady_clock::time_point deadline) {
  auto job = std::make_shared<Job>();
  job->fd = fd;
  job->n = std::min(n, kMaxChunk);
  job->dest = buf;
  return Run(job, deadline);
}

Result<TimedReadResult> TimedRead(int fd, const std::shared_ptr<char[]>& buf, std::size_t offset,
                                  std::size_t n, std::chrono::steady_clock::time_point deadline) {
  auto job = std::make_shared<Job>();
  job->fd = fd;
  job->n = std::min(n, kMaxChunk);
  job->shared = buf;
  job->dest = buf.get() + offset;
  return Run(job, deadline);
}

int StuckReads() { return Helpers::Get().Stuck(); }

}  // namespace sl
