#include "common/file_reader.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
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

namespace {

// host/outside.txt and host/outdir/ lie beside the root; root/ links out in every way a copied
// /sys or a hostile fixture could.
struct EscapeTree {
  std::string host, root;
  EscapeTree() {
    char tmpl[] = "/tmp/sl-escape-XXXXXX";
    host = ::mkdtemp(tmpl);
    root = host + "/root";
    ::mkdir(root.c_str(), 0755);
    ::mkdir((host + "/outdir").c_str(), 0755);
    std::ofstream(host + "/outside.txt") << "OUTSIDE";
    std::ofstream(host + "/outdir/secret") << "OUTSIDE";
    ::mkdir((root + "/etc").c_str(), 0755);
    ::mkdir((root + "/sys").c_str(), 0755);
    std::ofstream(root + "/outside.txt") << "CLAMPED";  // where ../ stops: the root
    std::ofstream(root + "/etc/target") << "INSIDE";
    // Absolute target: the root's /etc/target, never the host's.
    ::symlink("/etc/target", (root + "/sys/abs").c_str());
    // Absolute target naming the host path of a file outside: does not exist inside.
    ::symlink((host + "/outside.txt").c_str(), (root + "/sys/hostabs").c_str());
    // More ../ than the tree is deep: clamped at the root.
    ::symlink("../../../../outside.txt", (root + "/sys/up").c_str());
    // A directory link out, and a path through it.
    ::symlink((host + "/outdir").c_str(), (root + "/sys/outdir").c_str());
    ::symlink("../..", (root + "/sys/dotdot").c_str());
    ::symlink("dotdot/outdir/secret", (root + "/sys/via").c_str());
    ::symlink("loop", (root + "/sys/loop").c_str());
  }
  ~EscapeTree() { std::filesystem::remove_all(host); }
};

}  // namespace

TEST_CASE("symlinks under a sysroot resolve inside it, never on the host") {
  EscapeTree t;
  for (auto mode : {sl::ResolveMode::kAuto, sl::ResolveMode::kWalk}) {
    INFO((mode == sl::ResolveMode::kAuto ? "openat2" : "walk"));
    sl::RootedFileReader fs(t.root, mode);
    CHECK(fs.ReadFile("/sys/abs").value() == "INSIDE");
    CHECK(fs.ReadFile("/sys/up").value() == "CLAMPED");
    CHECK(fs.ReadFile("/../../outside.txt").value() == "CLAMPED");
    auto hostabs = fs.ReadFile("/sys/hostabs");
    REQUIRE_FALSE(hostabs.ok());
    CHECK_THAT(hostabs.error().message, Catch::Contains("No such file"));
    CHECK(hostabs.error().where == t.root + "/sys/hostabs");
    CHECK_FALSE(fs.ReadFile("/sys/outdir/secret").ok());
    CHECK_FALSE(fs.ReadFile("/sys/via").ok());
    CHECK_FALSE(fs.ListDir("/sys/outdir").ok());
    CHECK_FALSE(fs.Exists("/sys/hostabs"));
    CHECK_FALSE(fs.Exists("/sys/outdir/secret"));
    CHECK_FALSE(fs.IsDir("/sys/outdir"));
    CHECK(fs.IsDir("/sys/dotdot"));  // the root itself
    auto listed = fs.ListDir("/sys/dotdot");
    REQUIRE(listed.ok());
    CHECK(*listed == std::vector<std::string>{"etc", "outside.txt", "sys"});
    // ReadLink reads the link itself, found inside the root; the link's own text is unchanged.
    CHECK(fs.ReadLink("/sys/abs").value() == "/etc/target");
    CHECK(fs.ReadLink("/sys/dotdot/sys/up").value() == "../../../../outside.txt");
    CHECK_FALSE(fs.ReadLink("/sys/outdir/secret").ok());
    auto not_link = fs.ReadLink("/etc/target");
    REQUIRE_FALSE(not_link.ok());
    CHECK_THAT(not_link.error().message, Catch::Contains("Invalid argument"));
    auto loop = fs.ReadFile("/sys/loop");
    REQUIRE_FALSE(loop.ok());
    CHECK_THAT(loop.error().message, Catch::Contains("symbolic links"));
  }
}

TEST_CASE("the live reader still follows absolute symlinks") {
  EscapeTree t;
  sl::RootedFileReader live("");
  CHECK(live.ReadFile(t.root + "/sys/hostabs").value() == "OUTSIDE");
  CHECK(live.IsDir(t.root + "/sys/outdir"));
}

TEST_CASE("a bounded read says when the file went on past the limit") {
  std::string root = MakeTree();
  sl::RootedFileReader fs(root);
  auto cut = sl::ReadFileBounded(fs, "/sys/class/value", 4);
  REQUIRE(cut.ok());
  CHECK(cut->text == "4: A");
  CHECK(cut->truncated);
  auto whole = sl::ReadFileBounded(fs, "/sys/class/value", 10);  // exactly the file's size
  REQUIRE(whole.ok());
  CHECK(whole->text == "4: ACTIVE\n");
  CHECK_FALSE(whole->truncated);
  sl::MemFileReader mem;
  mem.AddFile("/dev/kmsg", "6,1,0,-;a\n6,2,0,-;b\n");
  CHECK(sl::ReadFileBounded(mem, "/dev/kmsg", 10)->truncated);
  CHECK_FALSE(sl::ReadFileBounded(mem, "/dev/kmsg", 20)->truncated);
  CHECK_FALSE(sl::ReadFileBounded(mem, "/nope", 20).ok());
}
