// A job with predictable behaviour for the integration tests. Every mode keeps its argv, so a
// test finds leftovers (including forked grandchildren) by a unique --marker=... in
// /proc/*/cmdline.
//
//   sl-test-child [--marker=M] exit N             exit with status N
//   sl-test-child [--marker=M] signal S           die by signal S (default action)
//   sl-test-child [--marker=M] ignore-term [grandchild]
//        ignore SIGTERM (with "grandchild": also fork a setsid'd grandchild that ignores it),
//        print "ready", hang
//   sl-test-child [--marker=M] setsid-grandchild [exit]
//        fork a grandchild that calls setsid() and hangs; print "grandchild PID"; then hang
//        (or, with "exit", exit 0 at once leaving the grandchild behind)
//   sl-test-child [--marker=M] print-signals      print "got SIGNAME" for each signal received,
//        one line each, flushed; exit 0 after SIGTERM
//   sl-test-child [--marker=M] write N [stdout|stderr|both]
//        write N bytes of a deterministic pattern (both: N to each stream, different patterns)
//   sl-test-child [--marker=M] hang               sleep until killed
//   sl-test-child [--marker=M] replay FILE [DELAY_MS] [hang]
//        print FILE line by line to stdout, DELAY_MS apart; then exit 0 (or hang)
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void Hang() {
  while (true) pause();
}

void Ready(const char* what) {
  std::printf("%s\n", what);
  std::fflush(stdout);
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Lines of varying length so that line splitting and chunk boundaries are both exercised.
void Pattern(int fd, unsigned long long n, unsigned seed) {
  std::vector<char> buf(1 << 16);
  unsigned long long done = 0;
  unsigned x = seed;
  while (done < n) {
    size_t chunk = static_cast<size_t>(std::min<unsigned long long>(buf.size(), n - done));
    for (size_t i = 0; i < chunk; ++i) {
      x = x * 1103515245u + 12345u;
      char c = static_cast<char>('a' + (x >> 16) % 26);
      buf[i] = ((x >> 8) % 97 == 0) ? '\n' : c;
    }
    if (!WriteAll(fd, buf.data(), chunk)) std::exit(3);
    done += chunk;
  }
}

volatile sig_atomic_t g_last = 0;

void OnSignal(int s) {
  // Async-signal-safe: write a fixed line.
  const char* name = s == SIGTERM    ? "SIGTERM"
                     : s == SIGINT   ? "SIGINT"
                     : s == SIGHUP   ? "SIGHUP"
                     : s == SIGQUIT  ? "SIGQUIT"
                     : s == SIGUSR1  ? "SIGUSR1"
                     : s == SIGUSR2  ? "SIGUSR2"
                     : s == SIGWINCH ? "SIGWINCH"
                     : s == SIGALRM  ? "SIGALRM"
                                     : "OTHER";
  char line[64] = "got ";
  std::strcat(line, name);
  std::strcat(line, "\n");
  WriteAll(1, line, std::strlen(line));
  if (s == SIGTERM) _exit(0);
}

int Usage() {
  std::fprintf(stderr,
               "usage: sl-test-child [--marker=M] exit N | signal S | ignore-term [grandchild] | "
               "setsid-grandchild [exit] | print-signals | write N [stdout|stderr|both] | hang | "
               "replay FILE [DELAY_MS] [hang]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0].rfind("--marker=", 0) == 0) args.erase(args.begin());
  if (args.empty()) return Usage();
  const std::string mode = args[0];
  if (mode == "exit" && args.size() >= 2) return std::atoi(args[1].c_str());
  if (mode == "signal" && args.size() >= 2) {
    int s = std::atoi(args[1].c_str());
    signal(s, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, s);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    raise(s);
    Hang();  // SIGSTOP-like signals: wait to be killed
  }
  if (mode == "ignore-term") {
    signal(SIGTERM, SIG_IGN);
    if (args.size() >= 2 && args[1] == "grandchild") {
      // SIG_IGN survives fork: the setsid'd grandchild ignores TERM too.
      pid_t pid = fork();
      if (pid == 0) {
        setsid();
        Hang();
      }
      std::printf("grandchild %d\n", static_cast<int>(pid));
    }
    Ready("ready");
    Hang();
  }
  if (mode == "setsid-grandchild") {
    pid_t pid = fork();
    if (pid == 0) {
      setsid();
      Hang();
    }
    std::printf("grandchild %d\n", static_cast<int>(pid));
    std::fflush(stdout);
    if (args.size() >= 2 && args[1] == "exit") return 0;
    Hang();
  }
  if (mode == "print-signals") {
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM}) {
      struct sigaction sa {};
      sa.sa_handler = OnSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(s, &sa, nullptr);
    }
    Ready("ready");
    Hang();
  }
  if (mode == "write" && args.size() >= 2) {
    unsigned long long n = std::strtoull(args[1].c_str(), nullptr, 10);
    std::string where = args.size() >= 3 ? args[2] : "stdout";
    if (where == "both") {
      // Interleave the two streams in chunks so that keeping them apart is actually tested.
      std::thread err([n] { Pattern(2, n, 7); });
      Pattern(1, n, 1);
      err.join();
    } else {
      Pattern(where == "stderr" ? 2 : 1, n, where == "stderr" ? 7 : 1);
    }
    return 0;
  }
  if (mode == "hang") {
    Ready("ready");
    Hang();
  }
  if (mode == "replay" && args.size() >= 2) {
    std::ifstream in(args[1]);
    if (!in) {
      std::fprintf(stderr, "sl-test-child: cannot open %s\n", args[1].c_str());
      return 2;
    }
    int delay_ms = args.size() >= 3 ? std::atoi(args[2].c_str()) : 0;
    std::string line;
    while (std::getline(in, line)) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      if (delay_ms > 0) usleep(static_cast<useconds_t>(delay_ms) * 1000);
    }
    if (args.size() >= 4 && args[3] == "hang") Hang();
    return 0;
  }
  return Usage();
}
