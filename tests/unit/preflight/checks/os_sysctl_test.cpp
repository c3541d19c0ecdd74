// os.sysctl: its pass, warn, fail and error cases (preflight/checks/os_sysctl.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("os.sysctl passes on tuned socket sysctls") {
  auto r = RunOnFixture("memlock-64k", CheckOsSysctl);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(r.findings[0].evidence.size() == 5);
}

TEST_CASE("os.sysctl warns on kernel defaults with sysctl -w and sysctl.d fixes") {
  MemFileReader fs;
  fs.AddFile("/proc/sys/net/core/rmem_max", "212992\n");
  fs.AddFile("/proc/sys/net/core/wmem_max", "212992\n");
  fs.AddFile("/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
  fs.AddFile("/proc/sys/net/ipv4/tcp_wmem", "4096\t16384\t4194304\n");
  fs.AddFile("/proc/sys/net/ipv4/ip_local_port_range", "50000\t51000\n");
  auto r = RunCheck(fs, CheckOsSysctl);
  const Finding* rmem = ForEntity(r.findings, "net.core.rmem_max");
  REQUIRE(rmem);
  CHECK(rmem->outcome == Outcome::kWarn);
  CHECK(Has(rmem->next_step, "sysctl -w net.core.rmem_max="));
  CHECK(Has(rmem->next_step, "/etc/sysctl.d/"));
  CHECK(ForEntity(r.findings, "net.core.wmem_max")->outcome == Outcome::kWarn);
  CHECK(ForEntity(r.findings, "net.ipv4.ip_local_port_range")->outcome == Outcome::kWarn);
  CHECK(ForEntity(r.findings, "net.ipv4.tcp_rmem") == nullptr);  // 6 MiB >= 4 MiB: fine
  CHECK(ForEntity(r.findings, "node")->outcome == Outcome::kPass);
}

TEST_CASE("os.sysctl: garbage and inverted ranges are errors/fails naming the file") {
  auto r = RunOnFixture("host-broken", CheckOsSysctl);
  const Finding* rmem = ForEntity(r.findings, "net.core.rmem_max");
  REQUIRE(rmem);
  CHECK(rmem->outcome == Outcome::kError);
  CHECK(Has(rmem->message, "host-broken/proc/sys/net/core/rmem_max"));
  CHECK(ForEntity(r.findings, "net.ipv4.tcp_rmem")->outcome == Outcome::kError);
  CHECK(ForEntity(r.findings, "net.ipv4.ip_local_port_range")->outcome == Outcome::kFail);
}
