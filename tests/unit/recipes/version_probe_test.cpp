#include "recipes/version_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

TEST_CASE("the version cache is written 0600 and never through a link planted at a temp name") {
  char tmpl[] = "/tmp/sl-vcache-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const std::string victim = dir + "-victim";
  { std::ofstream(victim) << "precious"; }
  // The old writer's temp name was versions.json.<pid>: plant a link there.
  REQUIRE(::symlink(victim.c_str(),
                    (dir + "/versions.json." + std::to_string(::getpid())).c_str()) == 0);
  sl::recipes::DetectOptions o;
  o.cache_dir = dir;
  o.system_nccl = dir + "/no-libnccl.so.2";
  auto v = sl::recipes::DetectVersions(o, {{"PATH", "/usr/bin:/bin"}});
  REQUIRE(v.ok());
  std::ifstream in(victim);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "precious");
  struct stat st {};
  REQUIRE(::lstat((dir + "/versions.json").c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(victim);
}
