#include "tests/unit/test_paths.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace sl::test {
namespace {

struct Trees {
  std::string build, source;
};

std::string SourceOf(const std::filesystem::path& cache) {
  std::ifstream in(cache);
  std::string line;
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  }
  return {};
}

Trees Find() {
  Trees t;
  if (const char* b = std::getenv("SL_TEST_BUILD_DIR")) t.build = b;
  if (const char* s = std::getenv("SL_TEST_SOURCE_DIR")) t.source = s;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (t.build.empty() && !ec) {
    for (std::filesystem::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
      if (std::filesystem::exists(d / "CMakeCache.txt", ec)) {
        t.build = d.string();
        break;
      }
      if (d == d.root_path()) break;
    }
  }
  if (t.source.empty() && !t.build.empty()) t.source = SourceOf(t.build + "/CMakeCache.txt");
  // A test run outside its build tree: every fixture path then names this, and the fix.
  if (t.build.empty() || t.source.empty()) {
    std::fprintf(stderr,
                 "test_paths: no CMakeCache.txt above %s: run the test from its build directory, "
                 "or set SL_TEST_BUILD_DIR and SL_TEST_SOURCE_DIR\n",
                 exe.c_str());
    if (t.build.empty()) t.build = "/nonexistent-build-dir-see-test_paths";
    if (t.source.empty()) t.source = "/nonexistent-source-dir-see-test_paths";
  }
  return t;
}

const Trees& Get() {
  static const Trees t = Find();
  return t;
}

}  // namespace

const std::string& BuildDir() { return Get().build; }
const std::string& SourceDir() { return Get().source; }

}  // namespace sl::test
