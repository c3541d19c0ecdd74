#include "warmup/sim/sim_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

namespace sl::warmup::sim {
namespace {

// Requests: op byte, u32 count, count x (u32 length, bytes). Replies: status byte (0 = ok,
// 1 = absent), u32 length, bytes. Integers in network order.
enum Op : char { kSet = 'S', kGet = 'G', kCheck = 'C', kAdd = 'A' };
constexpr std::uint32_t kMaxField = 64u << 20;  // larger than any warm-up value

void PutU32(std::string* out, std::uint32_t v) {
  v = htonl(v);
  out->append(reinterpret_cast<const char*>(&v), 4);
}
std::uint32_t GetU32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return ntohl(v);
}
std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Result<int> Resolve(const std::string& host, int port, bool passive, sockaddr_storage* out,
                    socklen_t* len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0)
    return MakeError(std::string("cannot resolve: ") + gai_strerror(rc), host + ":" + port_text,
                     "give the store host as an address or a name this host resolves");
  std::memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  const int family = res->ai_family;
  ::freeaddrinfo(res);
  return family;
}

struct Conn {
  int fd = -1;
  std::string in, out;
};

class Server final : public StoreServer {
 public:
  explicit Server(int listen_fd) : listen_fd_(listen_fd) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { Loop(); });
  }
  ~Server() override {
    stop_ = true;
    if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
    if (thread_.joinable()) thread_.join();
    for (auto& c : conns_) ::close(c.fd);
    ::close(listen_fd_);
    for (int fd : wake_)
      if (fd >= 0) ::close(fd);
  }
  std::int64_t Accepted() const override { return accepted_; }
  std::int64_t PeakOpen() const override { return peak_; }

 private:
  // One poll() over every socket per wake-up, as c10d's 1.13 daemon does.
  void Loop() {
    std::vector<pollfd> fds;
    while (!stop_) {
      fds.clear();
      fds.push_back({listen_fd_, POLLIN, 0});
      fds.push_back({wake_[0], POLLIN, 0});
      for (auto& c : conns_)
        fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      if (::poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) return;
      if (fds[0].revents & POLLIN) Accept();
      std::vector<int> closed;
      for (std::size_t i = 2; i < fds.size(); ++i) {
        Conn& c = conns_[i - 2];
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
          if (!ReadFrom(c)) closed.push_back(c.fd);
        if (!c.out.empty() && !WriteTo(c)) closed.push_back(c.fd);
      }
      for (int fd : closed) Drop(fd);
    }
  }
  void Accept() {
    while (true) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or out of descriptors: the client retries
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      conns_.push_back(Conn{fd, {}, {}});
      ++accepted_;
      peak_ = std::max<std::int64_t>(peak_, static_cast<std::int64_t>(conns_.size()));
    }
  }
  void Drop(int fd) {
    for (auto it = conns_.begin(); it != conns_.end(); ++it)
      if (it->fd == fd) {
        ::close(fd);
        conns_.erase(it);
        return;
      }
  }
  bool ReadFrom(Conn& c) {
    char buf[65536];
    while (true) {
      ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n > 0) {
        c.in.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) return false;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno != EINTR) return false;
    }
    return Serve(c);
  }
  bool WriteTo(Conn& c) {
    while (!c.out.empty()) {
      ssize_t n = ::write(c.fd, c.out.data(), c.out.size());
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    return true;
  }
  // Answers every complete request in c.in; false on a malformed one (the connection drops).
  bool Serve(Conn& c) {
    std::size_t pos = 0;
    while (true) {
      std::vector<std::string> args;
      std::size_t p = pos;
      if (c.in.size() - p < 5) break;
      const char op = c.in[p];
      const std::uint32_t count = GetU32(c.in.data() + p + 1);
      if (count > 100000) return false;
      p += 5;
      bool complete = true;
      for (std::uint32_t i = 0; i < count; ++i) {
        if (c.in.size() - p < 4) {
          complete = false;
          break;
        }
        const std::uint32_t len = GetU32(c.in.data() + p);
        if (len > kMaxField) return false;
        if (c.in.size() - p - 4 < len) {
          complete = false;
          break;
        }
        args.emplace_back(c.in, p + 4, len);
        p += 4 + len;
      }
      if (!complete) break;
      if (!Answer(op, args, &c.out)) return false;
      pos = p;
    }
    c.in.erase(0, pos);
    return true;
  }
  bool Answer(char op, const std::vector<std::string>& args, std::string* out) {
    auto reply = [&](char status, const std::string& body) {
      out->push_back(status);
      PutU32(out, static_cast<std::uint32_t>(body.size()));
      out->append(body);
    };
    if (op == kSet && args.size() == 2) {
      data_[args[0]] = args[1];
      reply(0, "");
    } else if (op == kGet && args.size() == 1) {
      auto it = data_.find(args[0]);
      it == data_.end() ? reply(1, "") : reply(0, it->second);
    } else if (op == kCheck) {
      bool all = true;
      for (const auto& k : args) all = all && data_.count(k);
      reply(0, all ? "1" : "0");
    } else if (op == kAdd && args.size() == 2) {
      std::int64_t v = 0;
      if (auto it = data_.find(args[0]); it != data_.end()) v = std::atoll(it->second.c_str());
      v += std::atoll(args[1].c_str());
      data_[args[0]] = std::to_string(v);
      reply(0, data_[args[0]]);
    } else {
      return false;
    }
    return true;
  }

  int listen_fd_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::vector<Conn> conns_;
  std::map<std::string, std::string> data_;
  std::atomic<std::int64_t> accepted_{0}, peak_{0};
  std::thread thread_;
};

class Client final : public KvStore {
 public:
  Client(int fd, std::string where) : fd_(fd), where_(std::move(where)) {}
  ~Client() override { ::close(fd_); }
  Status Set(const std::string& key, const std::string& value) override {
    auto r = Call(kSet, {key, value});
    if (!r.ok()) return r.error();
    return OkStatus();
  }
  Result<std::string> Get(const std::string& key) override {
    auto r = Call(kGet, {key});
    if (!r.ok()) return r.error();
    if (r->first != 0) return MakeError("key '" + key + "' is not in the store", where_);
    return r->second;
  }
  Result<bool> Check(const std::vector<std::string>& keys) override {
    auto r = Call(kCheck, keys);
    if (!r.ok()) return r.error();
    return r->second == "1";
  }
  Result<std::int64_t> Add(const std::string& key, std::int64_t delta) override {
    auto r = Call(kAdd, {key, std::to_string(delta)});
    if (!r.ok()) return r.error();
    return static_cast<std::int64_t>(std::atoll(r->second.c_str()));
  }

 private:
  Result<std::pair<char, std::string>> Call(char op, const std::vector<std::string>& args) {
    std::string req(1, op);
    PutU32(&req, static_cast<std::uint32_t>(args.size()));
    for (const auto& a : args) {
      PutU32(&req, static_cast<std::uint32_t>(a.size()));
      req += a;
    }
    if (!IoAll(req.data(), req.size(), true)) return Lost();
    char head[5];
    if (!IoAll(head, 5, false)) return Lost();
    std::string body(GetU32(head + 1), '\0');
    if (!body.empty() && !IoAll(body.data(), body.size(), false)) return Lost();
    return std::make_pair(head[0], std::move(body));
  }
  Error Lost() const {
    return MakeError(Errno("lost the connection to the simulator's store"), where_,
                     "node 0's simulated rank 0 ended or was killed; see its log");
  }
  bool IoAll(char* p, std::size_t n, bool write) {
    while (n > 0) {
      ssize_t k = write ? ::send(fd_, p, n, MSG_NOSIGNAL) : ::read(fd_, p, n);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      p += k;
      n -= static_cast<std::size_t>(k);
    }
    return true;
  }
  int fd_;
  std::string where_;
};

}  // namespace

Result<std::unique_ptr<StoreServer>> StartServer(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto family = Resolve(host, port, true, &addr, &len);
  if (!family.ok()) return family.error();
  int fd = ::socket(*family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return MakeError(Errno("socket"), where);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 4096) != 0) {
    Error e = MakeError(Errno("cannot listen"), where, "pick a free port (--warmup-port)");
    ::close(fd);
    return e;
  }
  return std::unique_ptr<StoreServer>(std::make_unique<Server>(fd));
}

Result<std::unique_ptr<KvStore>> Connect(const std::string& host, int port,
                                         std::chrono::milliseconds timeout) {
  const std::string where = host + ":" + std::to_string(port);
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto family = Resolve(host, port, false, &addr, &len);
  if (!family.ok()) return family.error();
  const auto until = std::chrono::steady_clock::now() + timeout;
  int sleep_ms = 10;
  while (true) {
    int fd = ::socket(*family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return MakeError(Errno("socket"), where);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      timeval tv{static_cast<time_t>(timeout.count() / 1000),
                 static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      return std::unique_ptr<KvStore>(std::make_unique<Client>(fd, where));
    }
    Error e = MakeError(Errno("cannot connect to the simulator's store"), where,
                        "start node 0's simulated rank 0 (it hosts the store)");
    ::close(fd);
    if (std::chrono::steady_clock::now() + std::chrono::milliseconds(sleep_ms) > until) return e;
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    sleep_ms = std::min(sleep_ms * 2, 200);
  }
}

}  // namespace sl::warmup::sim
