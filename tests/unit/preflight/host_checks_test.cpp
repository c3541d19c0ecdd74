// Across the host checks: facts gathered once, judged by every check; cases no single check owns.
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("host facts under a sysroot: hostname, limits, interfaces, peermem, open driver") {
  RootedFileReader fs(Fixture("memlock-64k"));
  NodeFacts facts = GatherNodeFacts(fs);
  CHECK(facts.hostname == "h200-ib-01");
  CHECK(facts.MemlockSoft() == 65536);
  CHECK(facts.NofileSoft() == 1048576);
  CHECK(facts.PeermemLoaded());
  CHECK(facts.PeermemModule() == "nvidia_peermem");
  CHECK(facts.host.peermem.path == "/proc/modules");
  CHECK(facts.host.peermem.raw.rfind("nvidia_peermem ", 0) == 0);
  CHECK(facts.nvidia_open_kernel);
  REQUIRE(facts.gpus.size() == 8);
  CHECK(facts.gpus[0].model == "NVIDIA H200");
  CHECK(facts.gpus[0].device_id == "0x2335");
}

TEST_CASE("host facts of the live machine: never a crash, hostname set") {
  RootedFileReader fs("");
  NodeFacts facts;
  GatherHostFacts(fs, &facts);
  CHECK_FALSE(facts.hostname.empty());
  CHECK_FALSE(facts.interfaces.empty());
}

TEST_CASE("host checks on facts that were never gathered give errors or skips, never a pass") {
  // Checks decide on NodeFacts only: an empty fact is "could not check", not a healthy node.
  NodeFacts facts;
  Environment env;
  Thresholds th;
  CheckContext ctx{facts, env, th};
  for (CheckFn fn : {CheckOsMemlock, CheckOsNofile, CheckOsSysctl, CheckOsShm, CheckGpuInventory,
                     CheckGpuGdr, CheckPciAcs, CheckKernelLog}) {
    auto findings = fn(ctx);
    REQUIRE_FALSE(findings.empty());
    for (const auto& f : findings) {
      INFO(f.check_id << " " << f.entity << ": " << f.message);
      CHECK(f.outcome != Outcome::kPass);
      CHECK(f.outcome != Outcome::kWarn);
      CHECK(f.outcome != Outcome::kFail);
    }
  }
  CHECK(CheckOsMemlock(ctx)[0].outcome == Outcome::kError);
  CHECK(CheckOsSysctl(ctx)[0].outcome == Outcome::kError);
  CHECK(CheckKernelLog(ctx)[0].outcome == Outcome::kError);
}

TEST_CASE("preflight on gathered facts judges those facts and reads nothing again") {
  // `run` gathers once for the plan and hands the facts to the preflight: the report must be the
  // fixture's even though no sysroot is given (the live node would say something else).
  RootedFileReader fs(Fixture("memlock-64k"));
  NodeFacts facts = GatherNodeFacts(fs);
  PreflightOptions options;
  options.only = {"os.memlock", "kernel.log"};
  auto r = RunPreflightOnFacts(options, Environment{}, facts);
  REQUIRE(r.ok());
  CHECK(r->hostname == facts.hostname);
  const Finding* memlock = nullptr;
  for (const auto& f : r->findings) {
    if (f.check_id == "os.memlock") memlock = &f;
  }
  REQUIRE(memlock != nullptr);
  CHECK(memlock->outcome == Outcome::kFail);
  CHECK(memlock->evidence.at(0).source == "/proc/self/limits");
  CHECK(Has(memlock->evidence.at(0).value, "65536"));
}
