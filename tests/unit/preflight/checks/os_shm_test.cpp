// os.shm: its pass, warn, fail and error cases (preflight/checks/os_shm.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("os.shm passes on a bare-metal /dev/shm sized by tmpfs' default") {
  auto r = RunOnFixture("memlock-64k", CheckOsShm);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "half of MemTotal"));
  REQUIRE(r.facts.ShmBytes().has_value());
  CHECK(*r.facts.ShmBytes() == 2113591344ull * 1024 / 2);
}

TEST_CASE("os.shm fails on Docker's 64 MiB default and names --shm-size and emptyDir") {
  auto r = RunOnFixture("shm-64m", CheckOsShm);
  REQUIRE(r.findings.size() == 1);
  const Finding& f = r.findings[0];
  CHECK(f.outcome == Outcome::kFail);
  CHECK(f.entity == "/dev/shm");
  CHECK(Has(f.message, "64 MiB"));
  CHECK(Has(f.next_step, "--shm-size"));
  CHECK(Has(f.next_step, "medium: Memory"));
  CHECK(Has(f.evidence.at(0).value, "size=65536k"));
}

TEST_CASE("os.shm: a directory where /proc/mounts should be is an error, not a crash") {
  auto r = RunOnFixture("host-broken", CheckOsShm);
  CHECK(r.findings.at(0).outcome == Outcome::kError);
  CHECK(Has(r.findings.at(0).message, "host-broken/proc/mounts"));
  MemFileReader fs;
  fs.AddFile("/proc/mounts", "proc /proc proc rw 0 0\n");
  CHECK(RunCheck(fs, CheckOsShm).findings.at(0).outcome == Outcome::kError);
}
