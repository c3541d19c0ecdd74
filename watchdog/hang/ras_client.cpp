#include "watchdog/hang/ras_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/strings.h"

namespace sl::hang {

using Clock = std::chrono::steady_clock;

namespace {

class Conn {
 public:
  ~Conn() {
    if (fd_ >= 0) close(fd_);
  }
  int fd_ = -1;
};

int RemainingMs(Clock::time_point end) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

// Waits for `events` on fd until the deadline. Returns false on timeout.
bool WaitFd(int fd, short events, Clock::time_point end) {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, RemainingMs(end));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;  // let the following call report the error
  }
}

Status SendAll(int fd, std::string_view msg, Clock::time_point end, const std::string& where) {
  while (!msg.empty()) {
    if (!WaitFd(fd, POLLOUT, end)) return MakeError("timed out sending to NCCL RAS", where);
    ssize_t n = send(fd, msg.data(), msg.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return MakeError(fmt::format("send to NCCL RAS failed: {}", std::strerror(errno)), where);
    }
    msg.remove_prefix(static_cast<std::size_t>(n));
  }
  return OkStatus();
}

// Reads one '\n'-terminated reply line.
Result<std::string> ReadLine(int fd, Clock::time_point end, const std::string& where) {
  std::string line;
  char c;
  while (line.size() < 4096) {
    if (!WaitFd(fd, POLLIN, end)) return MakeError("timed out waiting for NCCL RAS", where);
    ssize_t n = recv(fd, &c, 1, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return MakeError(fmt::format("read from NCCL RAS failed: {}", std::strerror(errno)), where);
    }
    if (n == 0) return MakeError("NCCL RAS closed the connection unexpectedly", where);
    if (c == '\n') return line;
    line += c;
  }
  return MakeError("NCCL RAS reply line too long", where);
}

}  // namespace

Result<RasReply> QueryRasStatus(const RasAddress& addr, bool json,
                                std::chrono::milliseconds deadline) {
  const auto end = Clock::now() + deadline;
  const std::string where = fmt::format("NCCL RAS {}:{}", addr.host, addr.port);
  const std::string fix =
      "RAS needs NCCL >= 2.24 in the job with NCCL_RAS_ENABLE unset or 1; NCCL_RAS_ADDR sets the "
      "address";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(addr.port);
  if (int rc = getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return MakeError(fmt::format("cannot resolve: {}", gai_strerror(rc)), where, fix);
  }
  Conn conn;
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (WaitFd(fd, POLLOUT, end)) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      conn.fd_ = fd;
      break;
    }
    last_error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(res);
  if (conn.fd_ < 0) return MakeError("connect failed: " + last_error, where, fix);

  RasReply reply;
  if (auto s = SendAll(conn.fd_, "CLIENT PROTOCOL 2\n", end, where); !s.ok()) return s.error();
  auto hello = ReadLine(conn.fd_, end, where);
  if (!hello.ok()) return hello.error();
  if (!StartsWith(*hello, "SERVER PROTOCOL ")) {
    return MakeError(fmt::format("unexpected handshake reply '{}'", *hello), where, fix);
  }
  reply.server_protocol = std::string(Trim(hello->substr(16)));
  if (json) {
    if (auto s = SendAll(conn.fd_, "SET FORMAT json\n", end, where); !s.ok()) return s.error();
    auto ok = ReadLine(conn.fd_, end, where);
    if (!ok.ok()) return ok.error();
    if (Trim(*ok) != "OK") {
      return MakeError(fmt::format("SET FORMAT json refused: '{}'", *ok), where,
                       "JSON output needs NCCL >= 2.28; the text report is still collected");
    }
  }
  if (auto s = SendAll(conn.fd_, "VERBOSE STATUS\n", end, where); !s.ok()) return s.error();
  char buf[8192];
  for (;;) {
    if (!WaitFd(conn.fd_, POLLIN, end)) {
      return MakeError(
          fmt::format("timed out reading the status after {} bytes", reply.body.size()), where,
          "NCCL RAS collects from every peer; a dead peer slows it down");
    }
    ssize_t n = recv(conn.fd_, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return MakeError(fmt::format("read failed: {}", std::strerror(errno)), where);
    }
    if (n == 0) break;
    reply.body.append(buf, static_cast<std::size_t>(n));
    if (reply.body.size() > (16u << 20)) break;
  }
  return reply;
}

}  // namespace sl::hang
