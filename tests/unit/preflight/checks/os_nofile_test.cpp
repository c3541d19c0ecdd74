// os.nofile: its pass, warn, fail and error cases (preflight/checks/os_nofile.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("os.nofile passes at 1048576 and warns at 1024") {
  CHECK(RunOnFixture("memlock-64k", CheckOsNofile).findings.at(0).outcome == Outcome::kPass);
  MemFileReader fs;
  fs.AddFile("/proc/self/limits", LimitsWith("unlimited", "1024"));
  auto r = RunCheck(fs, CheckOsNofile);
  CHECK(r.findings.at(0).outcome == Outcome::kWarn);
  CHECK(Has(r.findings.at(0).message, "1024"));
  CHECK(RunOnFixture("host-broken", CheckOsNofile).findings.at(0).outcome == Outcome::kError);
}
