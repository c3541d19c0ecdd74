#include "watchdog/run_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace sl::watchdog;

namespace {
const auto kNoon = std::chrono::system_clock::from_time_t(1764504000);  // 2025-11-30T12:00:00Z
}

TEST_CASE("the default run directory is per Slurm job step and host under SLURM_SUBMIT_DIR") {
  sl::Environment env{
      {"SLURM_SUBMIT_DIR", "/home/u/proj"}, {"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "3"}};
  CHECK(DefaultRunDir("", env, "/cwd", "gpu01", kNoon, 77) ==
        "/home/u/proj/safe-launch-runs/812.3/gpu01");
  env.erase("SLURM_STEP_ID");
  CHECK(DefaultRunDir("", env, "/cwd", "gpu01", kNoon, 77) ==
        "/home/u/proj/safe-launch-runs/812/gpu01");
}

TEST_CASE("outside Slurm the run directory is under the cwd, named by UTC time and pid") {
  CHECK(DefaultRunDir("", {}, "/work", "box", kNoon, 77) ==
        "/work/safe-launch-runs/20251130T120000Z-77/box");
}

TEST_CASE("an explicit --run-dir wins and odd ids cannot escape the directory") {
  CHECK(DefaultRunDir("/tmp/x", {{"SLURM_JOB_ID", "1"}}, "/w", "h", kNoon, 1) == "/tmp/x");
  CHECK(DefaultRunDir("", {{"SLURM_JOB_ID", "../../etc"}}, "/w", "h", kNoon, 1) ==
        "/w/safe-launch-runs/.._.._etc/h");
}

TEST_CASE("creating a run directory that exists and is not empty picks a new suffix") {
  char tmpl[] = "/tmp/sl-rundir-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string base = std::string(tmpl) + "/a/b/host";
  auto first = CreateRunDir(base);
  REQUIRE(first.ok());
  CHECK(*first == base);
  auto again = CreateRunDir(base);  // still empty: reused
  REQUIRE(again.ok());
  CHECK(*again == base);
  REQUIRE(WriteRunFile(base, "status.json", "{}\n").ok());
  auto second = CreateRunDir(base);
  REQUIRE(second.ok());
  CHECK(*second == base + ".1");
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("a run directory that cannot be created is an error naming the path and the fix") {
  auto r = CreateRunDir("/proc/sl-no/such/dir");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where.find("/proc/sl-no") == 0);
  CHECK(r.error().fix.find("--run-dir") != std::string::npos);
}
