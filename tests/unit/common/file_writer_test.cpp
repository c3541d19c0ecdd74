#include "common/file_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/common/temp_dir.h"

namespace {

using sl::testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("an atomic write replaces the file with the caller's mode and leaves no temp file") {
  std::string dir = TempDir();
  std::string path = dir + "/status.json";
  std::ofstream(path) << "old";
  ::chmod(path.c_str(), 0644);
  REQUIRE(sl::WriteFileAtomic(path, "new\n", 0600).ok());
  CHECK(Slurp(path) == "new\n");
  CHECK(ModeOf(path) == 0600);
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) (void)e, ++entries;
  CHECK(entries == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an atomic write replaces a planted symlink instead of writing through it") {
  std::string dir = TempDir();
  std::string victim = dir + "/victim";
  std::ofstream(victim) << "precious";
  ::symlink(victim.c_str(), (dir + "/status.json").c_str());
  REQUIRE(sl::WriteFileAtomic(dir + "/status.json", "ours", 0600).ok());
  CHECK(Slurp(victim) == "precious");
  struct stat st {};
  REQUIRE(::lstat((dir + "/status.json").c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK(Slurp(dir + "/status.json") == "ours");
  std::filesystem::remove_all(dir);
}

TEST_CASE("an atomic write refuses a directory that is a symlink") {
  std::string dir = TempDir();
  std::string real = dir + "/real";
  ::mkdir(real.c_str(), 0700);
  ::symlink(real.c_str(), (dir + "/link").c_str());
  auto s = sl::WriteFileAtomic(dir + "/link/status.json", "x", 0600);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().where == dir + "/link");
  CHECK(s.error().fix.find("symlink") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(real + "/status.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("an atomic write into a missing directory is an error naming it") {
  auto s = sl::WriteFileAtomic("/nonexistent-sl-dir/x.json", "x");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().where == "/nonexistent-sl-dir");
}

TEST_CASE("a new streaming file refuses an existing name and a planted symlink") {
  std::string dir = TempDir();
  auto fd = sl::CreateNewFile(dir + "/rank0.log", 0600);
  REQUIRE(fd.ok());
  ::close(*fd);
  CHECK(ModeOf(dir + "/rank0.log") == 0600);
  auto again = sl::CreateNewFile(dir + "/rank0.log");
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().where == dir + "/rank0.log");
  ::symlink("/etc/passwd", (dir + "/rank1.log").c_str());
  CHECK_FALSE(sl::CreateNewFile(dir + "/rank1.log").ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a unique file gets a fresh unpredictable name each time, the caller's mode, no link") {
  const std::string dir = TempDir();
  auto a = sl::WriteUniqueFile(dir, "hang-x.manifest.", ".json", "one");
  auto b = sl::WriteUniqueFile(dir, "hang-x.manifest.", ".json", "two");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a != *b);
  CHECK(a->rfind(dir + "/hang-x.manifest.", 0) == 0);
  CHECK(a->size() == dir.size() + 1 + std::string("hang-x.manifest.").size() + 16 + 5);
  CHECK(Slurp(*a) == "one");
  CHECK(Slurp(*b) == "two");
  CHECK(ModeOf(*a) == 0600);
  // A directory that is a symlink is refused, as for atomic writes.
  REQUIRE(::symlink(dir.c_str(), (dir + "-link").c_str()) == 0);
  auto c = sl::WriteUniqueFile(dir + "-link", "m.", ".json", "x");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().fix.find("symlink") != std::string::npos);
  CHECK_FALSE(sl::WriteUniqueFile(dir, "a/b", ".json", "x").ok());
  ::unlink((dir + "-link").c_str());
  std::filesystem::remove_all(dir);
}

TEST_CASE("write errors carry a next step chosen by errno") {
  CHECK(sl::WriteFixForErrno(EROFS).find("read-only") != std::string::npos);
  CHECK(sl::WriteFixForErrno(ENOSPC).find("full") != std::string::npos);
  CHECK(sl::WriteFixForErrno(EDQUOT).find("quota") != std::string::npos);
  CHECK(sl::WriteFixForErrno(EACCES).find("writable") != std::string::npos);
  CHECK(sl::WriteFixForErrno(ENOENT).empty());
  // A real one: a planted directory where the temp file would go cannot be the case, but a
  // file where the directory should be is ENOTDIR, and the message keeps the errno text.
  const std::string dir = TempDir();
  REQUIRE(sl::WriteFileAtomic(dir + "/f", "x").ok());
  auto r = sl::WriteFileAtomic(dir + "/f/g", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find(std::strerror(ENOTDIR)) != std::string::npos);
  std::filesystem::remove_all(dir);
}
