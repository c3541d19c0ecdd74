// gpu.leftover_procs: the /proc/*/fd scan (common/gpu_holders.cpp), the check's fail, pass and
// error cases (preflight/checks/gpu_leftover_procs.cpp) and that it runs after a job only.
#include <catch2/catch.hpp>
#include <set>

#include "common/gpu_holders.h"
#include "tests/unit/preflight/checks/host_check_fixture.h"

namespace {

const CheckFn CheckGpuLeftoverProcs = FindCheck("gpu.leftover_procs")->run;

// alice's python on nvidia0/nvidiactl, the persistence daemon (never a leftover), a bash on a
// tty, root's sleep whose link points into the sysroot "/tmp/root", and pid 500 (ourselves).
MemFileReader NodeWithLeftovers() {
  MemFileReader fs;
  fs.AddFile("/etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/a:/bin/sh\n");
  fs.AddLink("/proc/100/fd/0", "/dev/null");
  fs.AddLink("/proc/100/fd/3", "/dev/nvidia0");
  fs.AddLink("/proc/100/fd/4", "/dev/nvidiactl");
  fs.AddFile("/proc/100/comm", "python\n");
  fs.AddFile("/proc/100/status", "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n");
  fs.AddFile("/proc/100/cmdline", std::string("python\0train.py\0", 16));
  fs.AddLink("/proc/200/fd/3", "/dev/nvidia0");
  fs.AddFile("/proc/200/comm", "nvidia-persistenced\n");
  fs.AddLink("/proc/300/fd/1", "/dev/pts/0");
  fs.AddFile("/proc/300/comm", "bash\n");
  fs.AddLink("/proc/400/fd/5", "/tmp/root/dev/nvidia-uvm");
  fs.AddFile("/proc/400/comm", "sleep\n");
  fs.AddFile("/proc/400/status", "Uid:\t0\t0\t0\t0\n");
  fs.AddLink("/proc/500/fd/5", "/dev/nvidia1");
  fs.AddFile("/proc/self/comm", "x\n");
  return fs;
}

Run RunAfterJob(const FileReader& fs) {
  Run r;
  r.facts = GatherNodeFacts(fs, {.kernel_log = false, .gpu_holders = true});
  Environment env;
  Thresholds th;
  CheckContext ctx{r.facts, env, th};
  r.findings = CheckGpuLeftoverProcs(ctx);
  return r;
}

}  // namespace

TEST_CASE("processes holding NVIDIA devices are found with user and command, daemons are not") {
  auto holders = FindGpuHolders(NodeWithLeftovers(), "/tmp/root/", 500);
  REQUIRE(holders.ok());
  REQUIRE(holders->size() == 2);
  CHECK((*holders)[0].pid == 100);
  CHECK((*holders)[0].user == "alice");
  CHECK((*holders)[0].command == "python train.py");
  CHECK((*holders)[0].devices == std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"});
  CHECK((*holders)[1].pid == 400);
  CHECK((*holders)[1].user == "root");
  CHECK((*holders)[1].command == "[sleep]");
  CHECK((*holders)[1].devices == std::vector<std::string>{"/dev/nvidia-uvm"});
}

TEST_CASE("gpu.leftover_procs fails naming pid, user and command of each leftover") {
  auto r = RunAfterJob(NodeWithLeftovers());
  REQUIRE(r.findings.size() == 1);
  const Finding& f = r.findings[0];
  CHECK(f.outcome == Outcome::kFail);
  CHECK(f.check_id == "gpu.leftover_procs");
  CHECK(f.code == "gpu.leftover_procs/held");
  // Without the sysroot prefix to map, pid 400's link is not a device node; 500 is a fixture pid.
  CHECK(Has(f.message, "2 process(es) still hold /dev/nvidia*"));
  CHECK(Has(f.message, "pid 100 (alice: python train.py)"));
  CHECK(Has(f.message, "pid 500"));
  CHECK_FALSE(Has(f.message, "nvidia-persistenced"));
  REQUIRE(f.evidence.size() == 2);
  CHECK(f.evidence[0].source == "/proc/100/fd");
  CHECK(Has(f.next_step, "state=resume"));
}

TEST_CASE("gpu.leftover_procs passes when no process holds a device") {
  MemFileReader fs;
  fs.AddLink("/proc/300/fd/1", "/dev/pts/0");
  fs.AddFile("/proc/300/comm", "bash\n");
  auto r = RunAfterJob(fs);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(r.findings[0].code == "gpu.leftover_procs/clean");
}

TEST_CASE("gpu.leftover_procs is an error, never a pass, when /proc cannot be listed") {
  MemFileReader fs;  // no /proc at all
  auto r = RunAfterJob(fs);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kError);
  CHECK(r.findings[0].code == "gpu.leftover_procs/proc_unreadable");
  CHECK(Has(r.findings[0].message, "/proc"));
  // Facts gathered for a job start leave the scan out: the check then says so too.
  NodeFacts before = GatherNodeFacts(NodeWithLeftovers(), {.kernel_log = false});
  CHECK_FALSE(before.host.gpu_holders.ok());
}

TEST_CASE("gpu.leftover_procs runs in the epilog only, and --only names it there alone") {
  const CheckInfo* c = FindCheck("gpu.leftover_procs");
  REQUIRE(c != nullptr);
  CHECK(c->InEpilog());
  CHECK_FALSE(c->BeforeJob());
  CHECK(FindCheck("kernel.log")->InEpilog());
  CHECK(FindCheck("kernel.log")->BeforeJob());
  CHECK_FALSE(FindCheck("os.memlock")->InEpilog());

  const std::string root = Fixture("memlock-64k");
  PreflightOptions before;
  before.sysroot = root;
  auto pre = RunPreflight(before, {});
  REQUIRE(pre.ok());
  for (const auto& f : pre->findings) CHECK(f.check_id != "gpu.leftover_procs");

  PreflightOptions after;
  after.sysroot = root;
  after.epilog = true;
  auto post = RunPreflight(after, {});
  REQUIRE(post.ok());
  std::set<std::string> ids;
  for (const auto& f : post->findings) ids.insert(f.check_id);
  CHECK(ids == std::set<std::string>{"kernel.log", "gpu.leftover_procs"});

  PreflightOptions named;
  named.sysroot = root;
  named.only = {"gpu.leftover_procs"};
  auto refused = RunPreflight(named, {});
  REQUIRE_FALSE(refused.ok());
  CHECK(Has(refused.error().Describe(), "after a job"));
  CHECK(Has(refused.error().Describe(), "--epilog"));
}
