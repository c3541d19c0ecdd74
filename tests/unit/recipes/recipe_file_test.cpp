// Loading recipes from files: what may be read as one, where `extends` paths point, and sizes that
// do not fit the threshold's integer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "recipes/recipe.h"

using namespace sl;
using namespace sl::recipes;

namespace {

// A fresh directory under /tmp, removed with everything in it at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/sl-recipe-file-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = path + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }
};

// Runs LoadRecipe on another thread so that a regression (an open that blocks) fails the test
// instead of hanging the suite; the thread is left behind in that case.
Result<Recipe> LoadWithin(const std::string& path, std::chrono::seconds limit) {
  auto task =
      std::make_shared<std::packaged_task<Result<Recipe>()>>([path] { return LoadRecipe(path); });
  auto done = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (done.wait_for(limit) != std::future_status::ready) {
    return MakeError("LoadRecipe did not return within the limit", path);
  }
  return done.get();
}

Result<Recipe> ParseThreshold(const std::string& line) {
  return ParseRecipe("[thresholds]\n" + line + "\n", "test.toml", nullptr);
}

}  // namespace

TEST_CASE("a size too large for 64 bits is an error, not a threshold of 0") {
  auto r = ParseThreshold("min_shm = \"99999999999 TiB\"");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("too large"));
  CHECK_THAT(r.error().where, Catch::Contains("test.toml:2"));
  auto digits = ParseThreshold("min_rmem_max = \"" + std::string(40, '9') + "\"");
  REQUIRE_FALSE(digits.ok());
  CHECK_THAT(digits.error().message, Catch::Contains("too large"));
  // 2^64 exactly does not fit; 16 EiB - 1 TiB does.
  CHECK_FALSE(ParseThreshold("min_shm = \"16777216 TiB\"").ok());
  auto big = ParseThreshold("min_shm = \"16777215 TiB\"");
  REQUIRE(big.ok());
  CHECK(big->thresholds.min_shm == 16777215ull << 40);
}

TEST_CASE("a recipe path that is a FIFO is refused without blocking") {
  TempDir dir;
  std::string fifo = dir.path + "/pipe.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = LoadWithin(fifo, std::chrono::seconds(5));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("not a regular file"));
  CHECK(r.error().where == fifo);
}

TEST_CASE("a recipe path that is a directory is an error, not an empty recipe") {
  TempDir dir;
  std::filesystem::create_directories(dir.path + "/dir.toml");
  auto r = LoadRecipe(dir.path + "/dir.toml");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("directory"));
  // Found through the search path too.
  auto named = LoadRecipe("dir", {{"SAFE_LAUNCH_RECIPE_PATH", dir.path}});
  REQUIRE_FALSE(named.ok());
  CHECK_THAT(named.error().message, Catch::Contains("directory"));
}

TEST_CASE("a device or an oversized file is not read as a recipe") {
  auto zero = LoadWithin("/dev/zero", std::chrono::seconds(5));
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(zero.error().message, Catch::Contains("not a regular file"));
  TempDir dir;
  std::string big = dir.Write("big.toml", "# " + std::string(2u << 20, 'x') + "\n");
  auto r = LoadRecipe(big);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("larger than 1 MiB"));
  // Just under the limit still loads.
  std::string ok = dir.Write("ok.toml", "# " + std::string((1u << 20) - 16, 'x') + "\n");
  CHECK(LoadRecipe(ok).ok());
}

TEST_CASE("a missing recipe file is an error naming the path") {
  auto r = LoadRecipe("/nonexistent/sl/none.toml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where == "/nonexistent/sl/none.toml");
}

TEST_CASE("a relative extends is resolved against the recipe's folder, not the cwd") {
  TempDir dir;
  dir.Write("site/base.toml", "[env]\nNCCL_IB_TIMEOUT = 21\n");
  dir.Write("site/jobs/child.toml", "extends = \"../base.toml\"\n[env]\nNCCL_DEBUG = \"INFO\"\n");
  std::string leaf = dir.Write("site/leaf.toml", "extends = \"jobs/child.toml\"\n");
  // A file of the same name in the cwd must not be picked up instead.
  TempDir cwd;
  cwd.Write("jobs/child.toml", "[env]\nNCCL_DEBUG = \"TRACE\"\n");
  const auto old = std::filesystem::current_path();
  std::filesystem::current_path(cwd.path);
  auto r = LoadRecipe(leaf);
  std::filesystem::current_path(old);
  INFO((r.ok() ? "" : r.error().Describe()));
  REQUIRE(r.ok());
  CHECK(r->chain == std::vector<std::string>{"leaf", "child", "base"});
  bool timeout = false, debug = false;
  for (const auto& e : r->env) {
    timeout |= e.name == "NCCL_IB_TIMEOUT" && e.literal == "21";
    debug |= e.name == "NCCL_DEBUG" && e.literal == "INFO";
  }
  CHECK(timeout);
  CHECK(debug);
}

TEST_CASE("a relative extends in a recipe found on the search path is beside that recipe") {
  TempDir dir;
  dir.Write("base.toml", "[env]\nNCCL_IB_TIMEOUT = 22\n");
  dir.Write("mine.toml", "extends = \"./base.toml\"\n");
  auto r = LoadRecipe("mine", {{"SAFE_LAUNCH_RECIPE_PATH", dir.path}});
  INFO((r.ok() ? "" : r.error().Describe()));
  REQUIRE(r.ok());
  CHECK(r->chain == std::vector<std::string>{"mine", "base"});
}
