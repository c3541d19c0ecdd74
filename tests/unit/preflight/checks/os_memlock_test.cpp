// os.memlock: its pass, warn, fail and error cases (preflight/checks/os_memlock.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("os.memlock passes when memlock is unlimited") {
  auto r = RunOnFixture("shm-64m", CheckOsMemlock);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].check_id == "os.memlock");
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(r.findings[0].evidence.at(0).source == "/proc/self/limits");
  CHECK(Has(r.findings[0].evidence.at(0).value, "unlimited"));
}

TEST_CASE("os.memlock fails at a 64 KiB limit and names limits.conf, Slurm and containers") {
  auto r = RunOnFixture("memlock-64k", CheckOsMemlock, {{"SLURM_JOB_ID", "4242"}});
  REQUIRE(r.findings.size() == 1);
  const Finding& f = r.findings[0];
  CHECK(f.outcome == Outcome::kFail);
  CHECK(f.entity == "node");
  CHECK(Has(f.message, "64 KiB"));
  CHECK(Has(f.next_step, "limits"));
  CHECK(Has(f.next_step, "PropagateResourceLimits"));
  CHECK(Has(f.next_step, "LimitMEMLOCK=infinity"));
  CHECK(Has(f.next_step, "--ulimit memlock=-1"));
  CHECK(Has(f.next_step, "4242"));
  CHECK(Has(f.evidence.at(0).value, "65536"));
}

TEST_CASE("os.memlock warns on a large finite limit and honours a threshold") {
  MemFileReader fs;
  fs.AddFile("/proc/self/limits", LimitsWith("8589934592", "1048576"));
  auto r = RunCheck(fs, CheckOsMemlock);
  CHECK(r.findings.at(0).outcome == Outcome::kWarn);
  Thresholds th;
  th.min_memlock = 8ull << 30;
  CHECK(RunCheck(fs, CheckOsMemlock, {}, th).findings.at(0).outcome == Outcome::kPass);
}

TEST_CASE("os.memlock only warns at a small limit on a node with no RDMA device") {
  MemFileReader fs;  // no /sys/class/infiniband: sockets only, nothing is pinned
  fs.AddFile("/proc/self/limits", LimitsWith("8388608", "1048576"));
  auto r = RunCheck(fs, CheckOsMemlock);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kWarn);
  CHECK(r.findings[0].code == "os.memlock/low_without_rdma");
  CHECK(Has(r.findings[0].message, "no InfiniBand/RoCE device"));
}

TEST_CASE("os.memlock on garbage limits is an error naming the file") {
  auto r = RunOnFixture("host-broken", CheckOsMemlock);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kError);
  CHECK(Has(r.findings[0].message, "host-broken/proc/self/limits"));
  MemFileReader empty;
  CHECK(RunCheck(empty, CheckOsMemlock).findings.at(0).outcome == Outcome::kError);
}
