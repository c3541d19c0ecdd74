#include "warmup/claim_guard.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>

#include "common/json_text.h"
#include "common/log.h"

namespace sl::warmup {
namespace {

std::string GuardKey(const WarmupAuth& auth) { return "sl-warmup/" + auth.job_id + "/guard"; }

std::string PeerText(const sockaddr_storage& ss) {
  char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
  ::getnameinfo(reinterpret_cast<const sockaddr*>(&ss), sizeof(ss), host, sizeof(host), serv,
                sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + serv;
}

std::string ClockText(double unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

GuardNotice NoticeFromReport(const nlohmann::json& report) {
  GuardNotice n;
  n.nnodes = report.value("nnodes", 0);
  n.nproc_per_node = report.value("nproc_per_node", 0);
  n.passed_unix_ms =
      std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  for (const auto& a : report.value("arrivals", nlohmann::json::array())) {
    if (a.value("local_rank", -1) != 0) continue;
    n.nodes.push_back(
        {a.value("node_rank", -1), a.value("host", ""), a.value("address", ""), a.value("pid", 0)});
  }
  return n;
}

std::string GuardLine(const WarmupAuth& auth, const GuardNotice& notice) {
  return std::string(kGuardMagic) +
         SignValue(auth.key_hex, GuardKey(auth), JsonText(nlohmann::json(notice), -1)) + "\n";
}

Result<std::optional<GuardNotice>> ParseGuardLine(const WarmupAuth& auth, const std::string& line) {
  if (line.rfind(kGuardMagic, 0) != 0) return std::optional<GuardNotice>();
  std::string value = line.substr(kGuardMagic.size());
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
  auto payload = VerifyValue(auth.key_hex, GuardKey(auth), value);
  if (!payload.ok()) return payload.error();
  try {
    return std::optional<GuardNotice>(nlohmann::json::parse(*payload).get<GuardNotice>());
  } catch (const std::exception& e) {
    return MakeError(std::string("unreadable warm-up guard notice: ") + e.what());
  }
}

std::string LateClaimMessage(const GuardNotice& notice, int node_rank, const std::string& my_host) {
  std::string first = "another process";
  for (const auto& n : notice.nodes)
    if (n.node_rank == node_rank)
      first = fmt::format("{} ({}, pid {})", n.host.empty() ? "?" : n.host,
                          n.address.empty() ? "address unknown" : n.address, n.pid);
  return fmt::format(
      "two processes claim node {}: {} passed this job's warm-up as node {} at {} and the job "
      "is running ({} node(s) x {} rank(s)); this process on {} is a second --node-rank {} and "
      "is refused at once",
      node_rank, first, node_rank, ClockText(notice.passed_unix_ms), notice.nnodes,
      notice.nproc_per_node, my_host.empty() ? "?" : my_host, node_rank);
}

Result<std::unique_ptr<ClaimGuard>> ClaimGuard::Start(const std::string& host, int port,
                                                      std::string line) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    return MakeError(std::string("cannot resolve ") + host + ": " + gai_strerror(rc));
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0)
    return MakeError("cannot listen on " + host + ":" + std::to_string(port) + ": " + why);
  std::unique_ptr<ClaimGuard> g(new ClaimGuard(fd, std::move(line)));
  // The thread must never take a signal meant for the supervisor (it waits on them itself).
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  g->thread_ = std::thread([p = g.get()] { p->Loop(); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return Result<std::unique_ptr<ClaimGuard>>(std::move(g));
}

ClaimGuard::~ClaimGuard() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> ClaimGuard::Answered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return answered_;
}

void ClaimGuard::Loop() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // a short tick: the destructor waits at most that
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int c = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) continue;
    // One write into an empty socket buffer: never blocks; a peer that reads nothing loses it.
    (void)!::send(c, line_.data(), line_.size(), MSG_NOSIGNAL);
    ::shutdown(c, SHUT_RDWR);
    ::close(c);
    std::string peer = PeerText(ss);
    log::Warn(
        "refused a late claim from {} on the warm-up port: this job's warm-up is over and its "
        "layout fixed; a second safe-launch with a taken --node-rank is running there",
        peer);
    std::lock_guard<std::mutex> lock(mu_);
    answered_.push_back(std::move(peer));
  }
}

std::string ProbeClaimGuard(const std::string& host, int port, int wait_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return "";
  std::string got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  auto left_ms = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<long long>(left.count(), 0));
  };
  for (addrinfo* ai = res; ai != nullptr && got.empty() && left_ms() > 0; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    pollfd p{fd, POLLOUT, 0};
    bool connected = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
                     (errno == EINPROGRESS && ::poll(&p, 1, left_ms()) == 1);
    int err = 0;
    socklen_t len = sizeof(err);
    if (connected && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
      // Read until the line's end, EOF or the deadline: a c10d store says nothing.
      while (got.find('\n') == std::string::npos && got.size() < 65536) {
        pollfd r{fd, POLLIN, 0};
        if (::poll(&r, 1, left_ms()) != 1) break;
        char buf[4096];
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
      }
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return got;
}

}  // namespace sl::warmup
