#include "common/file_reader.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

std::string MakeTree() {
  char tmpl[] = "/tmp/sl-reader-XXXXXX";
  std::string root = ::mkdtemp(tmpl);
  ::mkdir((root + "/sys").c_str(), 0755);
  ::mkdir((root + "/sys/class").c_str(), 0755);
  std::ofstream(root + "/sys/class/value") << "4: ACTIVE\n";
  ::symlink("value", (root + "/sys/class/link").c_str());
  return root;
}

}  // namespace

TEST_CASE("a rooted reader reads node paths under its root") {
  std::string root = MakeTree();
  sl::RootedFileReader fs(root + "/");
  auto r = fs.ReadFile("/sys/class/value");
  REQUIRE(r.ok());
  CHECK(*r == "4: ACTIVE\n");
  CHECK(fs.HostPath("/sys/class/value") == root + "/sys/class/value");
  CHECK(fs.IsDir("/sys/class"));
  CHECK(fs.Exists("/sys/class/link"));
  CHECK(fs.ReadLink("/sys/class/link").value() == "value");
  auto names = fs.ListDir("/sys/class");
  REQUIRE(names.ok());
  CHECK(names->size() == 2);
}

TEST_CASE("a missing file is an error naming the host path, not a crash") {
  std::string root = MakeTree();
  sl::RootedFileReader fs(root);
  auto r = fs.ReadFile("/sys/class/nope");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where == root + "/sys/class/nope");
  CHECK(r.error().message.find("No such file") != std::string::npos);
}

TEST_CASE("reading a directory as a file is an error saying so") {
  std::string root = MakeTree();
  sl::RootedFileReader fs(root);
  auto r = fs.ReadFile("/sys/class");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("directory") != std::string::npos);
}

TEST_CASE("an unreadable file reports permission and a fix") {
  // Root reads everything, and CI runs as root: read as an unprivileged user in a child process
  // (setuid to nobody), so the permission error is real either way.
  std::string root = MakeTree();
  ::chmod(root.c_str(), 0755);
  ::chmod((root + "/sys/class/value").c_str(), 0);
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    sl::RootedFileReader fs(root);
    auto r = fs.ReadFile("/sys/class/value");
    std::string out = r.ok() ? "read" : r.error().where + "\n" + r.error().fix;
    (void)!::write(pipefd[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(out != "read");
  CHECK(out.rfind(root + "/sys/class/value\n", 0) == 0);
  CHECK(out.size() > root.size() + 18);  // a fix follows the path
}

TEST_CASE("the in-memory reader lists implied directories") {
  sl::MemFileReader fs;
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE");
  fs.AddFile("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN");
  auto devs = fs.ListDir("/sys/class/infiniband");
  REQUIRE(devs.ok());
  CHECK(*devs == std::vector<std::string>{"mlx5_0", "mlx5_1"});
  CHECK(fs.ReadFile("/sys/class/infiniband/mlx5_1/ports/1/state").value() == "1: DOWN");
  CHECK_FALSE(fs.ReadFile("/sys/class/infiniband").ok());
}
