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

TEST_CASE("an existing empty run directory of ours is never reused, whoever made it") {
  char tmpl[] = "/tmp/sl-rundir-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string base = std::string(tmpl) + "/host";
  auto first = CreateRunDir(base);
  REQUIRE(first.ok());
  CHECK(*first == base);
  // A second safe-launch on the node, before the first wrote anything: a directory of its own.
  auto again = CreateRunDir(base);
  REQUIRE(again.ok());
  CHECK(*again == base + ".1");
  auto third = CreateRunDir(base);
  REQUIRE(third.ok());
  CHECK(*third == base + ".2");
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("two Slurm nodes on one host and per-task runs get run directories of their own") {
  sl::Environment env{{"SLURM_SUBMIT_DIR", "/p"}, {"SLURM_JOB_ID", "9"}, {"SLURM_STEP_ID", "0"}};
  CHECK(DefaultRunDir("", env, "/cwd", "vm", kNoon, 1) == "/p/safe-launch-runs/9.0/vm");
  env["SLURMD_NODENAME"] = "vm";  // the usual case: node name = host name
  CHECK(DefaultRunDir("", env, "/cwd", "vm", kNoon, 1) == "/p/safe-launch-runs/9.0/vm");
  env["SLURMD_NODENAME"] = "vm-n1";  // a second slurmd on the same host
  CHECK(DefaultRunDir("", env, "/cwd", "vm", kNoon, 1) == "/p/safe-launch-runs/9.0/vm_vm-n1");
  CHECK(DefaultRunDir("", env, "/cwd", "vm", kNoon, 1, "3") ==
        "/p/safe-launch-runs/9.0/vm_vm-n1-rank3");
}

TEST_CASE("outside Slurm the run directory is under the cwd, named by UTC time and pid") {
  CHECK(DefaultRunDir("", {}, "/scratch/alice", "box", kNoon, 77) ==
        "/scratch/alice/safe-launch-runs/20251130T120000Z-77/box");
}

TEST_CASE("the ranks of one mpirun share a job directory named by its PMIx namespace") {
  sl::Environment env{{"PMIX_NAMESPACE", "1059651585"}, {"OMPI_MCA_ess_base_jobid", "7"}};
  CHECK(DefaultRunDir("", env, "/scratch/alice", "box", kNoon, 77, "1") ==
        "/scratch/alice/safe-launch-runs/mpi-1059651585/box-rank1");
  env.erase("PMIX_NAMESPACE");
  CHECK(DefaultRunDir("", env, "/scratch/alice", "box", kNoon, 78, "0") ==
        "/scratch/alice/safe-launch-runs/mpi-7/box-rank0");
  env["SLURM_JOB_ID"] = "5";  // srun --mpi=pmix: Slurm's job id wins
  CHECK(DefaultRunDir("", env, "/scratch/alice", "box", kNoon, 78) ==
        "/scratch/alice/safe-launch-runs/5/box");
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

namespace {

std::string TempRoot() {
  char tmpl[] = "/tmp/sl-rundir-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("a new run directory is 0700 and its files 0600") {
  const std::string root = TempRoot();
  auto dir = CreateRunDir(root + "/runs/host");
  REQUIRE(dir.ok());
  CHECK(ModeOf(*dir) == 0700);
  REQUIRE(WriteRunFile(*dir, "status.json", "{}\n").ok());
  CHECK(ModeOf(*dir + "/status.json") == 0600);
  std::filesystem::remove_all(root);
}

TEST_CASE("an empty directory owned by another user is never reused as the run directory") {
  const std::string root = TempRoot();
  const std::string dir = root + "/host";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  if (::chown(dir.c_str(), 65534, 65534) != 0) {
    WARN("not root: cannot give the directory to another user, nothing to check");
    std::filesystem::remove_all(root);
    return;
  }
  auto r = CreateRunDir(dir);
  REQUIRE(r.ok());
  CHECK(*r == dir + ".1");
  std::filesystem::remove_all(root);
}

TEST_CASE("a symlink or a group/other-writable directory is never reused as the run directory") {
  const std::string root = TempRoot();
  // A link to an empty directory of ours: following it would write wherever it points.
  const std::string target = root + "/elsewhere";
  REQUIRE(::mkdir(target.c_str(), 0700) == 0);
  REQUIRE(::symlink(target.c_str(), (root + "/linked").c_str()) == 0);
  auto r = CreateRunDir(root + "/linked");
  REQUIRE(r.ok());
  CHECK(*r == root + "/linked.1");
  // A dangling link is not made into a directory at its target either.
  REQUIRE(::symlink((root + "/nowhere").c_str(), (root + "/dangling").c_str()) == 0);
  r = CreateRunDir(root + "/dangling");
  REQUIRE(r.ok());
  CHECK(*r == root + "/dangling.1");
  CHECK_FALSE(std::filesystem::exists(root + "/nowhere"));
  // Ours but writable by others: they could swap files in it.
  const std::string open_dir = root + "/open";
  REQUIRE(::mkdir(open_dir.c_str(), 0700) == 0);
  REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
  r = CreateRunDir(open_dir);
  REQUIRE(r.ok());
  CHECK(*r == open_dir + ".1");
  // Ours, 0750 (made by an older safe-launch), empty: not reused either (issue 15), left as is.
  const std::string old_dir = root + "/old";
  REQUIRE(::mkdir(old_dir.c_str(), 0750) == 0);
  REQUIRE(::chmod(old_dir.c_str(), 0750) == 0);
  r = CreateRunDir(old_dir);
  REQUIRE(r.ok());
  CHECK(*r == old_dir + ".1");
  CHECK(ModeOf(*r) == 0700);
  std::filesystem::remove_all(root);
}

TEST_CASE("a run file write never follows a symlink planted at the old temp name or the target") {
  const std::string root = TempRoot();
  auto dir = CreateRunDir(root + "/host");
  REQUIRE(dir.ok());
  const std::string victim = root + "/victim";
  { std::ofstream(victim) << "precious"; }
  REQUIRE(::symlink(victim.c_str(), (*dir + "/status.json.tmp").c_str()) == 0);
  REQUIRE(::symlink(victim.c_str(), (*dir + "/stdout.tail").c_str()) == 0);
  REQUIRE(WriteRunFile(*dir, "status.json", "{\"a\":1}\n").ok());
  REQUIRE(WriteRunFile(*dir, "stdout.tail", "line\n").ok());
  CHECK(Slurp(victim) == "precious");
  CHECK(Slurp(*dir + "/status.json") == "{\"a\":1}\n");
  CHECK(ModeOf(*dir + "/stdout.tail") == 0600);  // the link was replaced, not written through
  std::filesystem::remove_all(root);
}

TEST_CASE("a failed run file write names the path, keeps the errno text and offers --run-dir") {
  auto s = WriteRunFile("/proc/sl-no-such-dir", "status.json", "{}");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("No such file") != std::string::npos);
  CHECK(s.error().where.find("/proc/sl-no-such-dir") == 0);
  CHECK(s.error().fix.find("--run-dir") != std::string::npos);
}
