#include "watchdog/hang/ras_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/unit/test_paths.h"

using namespace sl::hang;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The recorded replies begin with the recorder's own notes ("hello: ...", "fmt: ...").
std::string Body(std::string text) {
  while (text.rfind("hello:", 0) == 0 || text.rfind("fmt:", 0) == 0) {
    text.erase(0, text.find('\n') + 1);
  }
  return text;
}

std::string ReadLine(int fd) {
  std::string s;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

// A one-connection-at-a-time RAS server speaking NCCL's client protocol 2.
struct FakeRas {
  int listen_fd = -1;
  int port = 0;
  std::thread th;
  std::vector<std::string> commands;
  FakeRas(std::string text, std::string json, int connections, bool stall = false) {
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    listen(listen_fd, 4);
    th = std::thread([=, this] {
      for (int i = 0; i < connections; ++i) {
        int c = accept(listen_fd, nullptr, nullptr);
        if (c < 0) return;
        if (stall) {
          std::this_thread::sleep_for(std::chrono::milliseconds(800));
          close(c);
          continue;
        }
        std::string cmd = ReadLine(c);
        commands.push_back(cmd);
        (void)!write(c, "SERVER PROTOCOL 2\n", 18);
        bool is_json = false;
        for (;;) {
          cmd = ReadLine(c);
          commands.push_back(cmd);
          if (cmd == "SET FORMAT json") {
            is_json = true;
            (void)!write(c, "OK\n", 3);
          } else {
            break;
          }
        }
        const std::string& body = is_json ? json : text;
        (void)!write(c, body.data(), body.size());
        close(c);
      }
    });
  }
  ~FakeRas() {
    if (th.joinable()) th.join();
    close(listen_fd);
  }
};

}  // namespace

TEST_CASE("RAS client speaks protocol 2 and returns the recorded text and JSON replies") {
  std::string dir = SL_FIXTURES_DIR + "/logs/";
  std::string text = Body(Slurp(dir + "ras_verbose_status_during_hang.txt"));
  std::string json = Body(Slurp(dir + "ras_verbose_status_during_hang.json"));
  REQUIRE(text.find("RUNNING") != std::string::npos);
  FakeRas server(text, json, 2);
  RasAddress addr{"127.0.0.1", server.port};
  auto t = QueryRasStatus(addr, false, std::chrono::milliseconds(2000));
  REQUIRE(t.ok());
  CHECK(t->server_protocol == "2");
  CHECK(t->body == text);
  auto j = QueryRasStatus(addr, true, std::chrono::milliseconds(2000));
  REQUIRE(j.ok());
  CHECK(j->body == json);
  CHECK(j->body.find("\"nccl_version\": \"2.28.9\"") != std::string::npos);
  server.th.join();
  REQUIRE(server.commands.size() == 5);
  CHECK(server.commands[0] == "CLIENT PROTOCOL 2");
  CHECK(server.commands[1] == "VERBOSE STATUS");
  CHECK(server.commands[3] == "SET FORMAT json");
  CHECK(server.commands[4] == "VERBOSE STATUS");
}

TEST_CASE("RAS client gives up at its deadline when the server never answers") {
  FakeRas server("", "", 1, /*stall=*/true);
  auto t0 = std::chrono::steady_clock::now();
  auto r = QueryRasStatus({"127.0.0.1", server.port}, false, std::chrono::milliseconds(300));
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("timed out") != std::string::npos);
  CHECK(ms < 700);
}

TEST_CASE("RAS client reports a refused connection with the address and the fix") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);  // nothing listens there now
  auto r = QueryRasStatus({"127.0.0.1", port}, false, std::chrono::milliseconds(500));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where.find(std::to_string(port)) != std::string::npos);
  CHECK(r.error().fix.find("NCCL_RAS") != std::string::npos);
}

TEST_CASE("NCCL_RAS_ADDR parsing") {
  CHECK(ParseRasAddress("")->port == 28028);
  CHECK(ParseRasAddress("10.1.2.3:1234")->host == "10.1.2.3");
  CHECK(ParseRasAddress("10.1.2.3:1234")->port == 1234);
  CHECK(ParseRasAddress("[::1]:99")->host == "::1");
  CHECK_FALSE(ParseRasAddress("h:notaport").ok());
}
