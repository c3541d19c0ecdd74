// Host checks (os.*, gpu.*, pci.acs, kernel.log, net.ifname): a pass and a fail case each, on
// the fixture trees of tests/fixtures (gen/host.py) and on small in-memory trees.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "preflight/check.h"
#include "preflight/runner.h"

using namespace sl;
using namespace sl::preflight;

namespace {

// The checks under test, reached through the registry as the runner reaches them.
const CheckFn CheckGpuGdr = FindCheck("gpu.gdr")->run;
const CheckFn CheckGpuInventory = FindCheck("gpu.inventory")->run;
const CheckFn CheckKernelLog = FindCheck("kernel.log")->run;
const CheckFn CheckNetIfname = FindCheck("net.ifname")->run;
const CheckFn CheckOsMemlock = FindCheck("os.memlock")->run;
const CheckFn CheckOsNofile = FindCheck("os.nofile")->run;
const CheckFn CheckOsShm = FindCheck("os.shm")->run;
const CheckFn CheckOsSysctl = FindCheck("os.sysctl")->run;
const CheckFn CheckPciAcs = FindCheck("pci.acs")->run;

std::string Fixture(const char* name) { return std::string(SL_FIXTURES_DIR) + "/" + name; }

struct Run {
  std::vector<Finding> findings;
  NodeFacts facts;
};

Run RunCheck(const FileReader& fs, CheckFn fn, Environment env = {}, Thresholds th = {},
             std::int64_t since = -1) {
  Run r;
  r.facts = GatherNodeFacts(fs);
  CheckContext ctx{r.facts, env, th, false, since};
  r.findings = fn(ctx);
  return r;
}

Run RunOnFixture(const char* scenario, CheckFn fn, Environment env = {}) {
  RootedFileReader fs(Fixture(scenario));
  return RunCheck(fs, fn, std::move(env));
}

std::vector<Finding> With(const std::vector<Finding>& fs, Outcome o) {
  std::vector<Finding> out;
  std::copy_if(fs.begin(), fs.end(), std::back_inserter(out),
               [&](const Finding& f) { return f.outcome == o; });
  return out;
}

const Finding* ForEntity(const std::vector<Finding>& fs, const std::string& entity) {
  for (const auto& f : fs) {
    if (f.entity == entity) return &f;
  }
  return nullptr;
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const char* kLimitsHeader =
    "Limit                     Soft Limit           Hard Limit           Units     \n";

std::string LimitsWith(const std::string& memlock, const std::string& nofile) {
  char row[256];
  std::string out = kLimitsHeader;
  std::snprintf(row, sizeof row, "%-25s %-20s %-20s %-10s\n", "Max open files", nofile.c_str(),
                nofile.c_str(), "files");
  out += row;
  std::snprintf(row, sizeof row, "%-25s %-20s %-20s %-10s\n", "Max locked memory", memlock.c_str(),
                memlock.c_str(), "bytes");
  out += row;
  return out;
}

}  // namespace

// ---- os.memlock ------------------------------------------------------------------------------

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

// ---- os.nofile -------------------------------------------------------------------------------

TEST_CASE("os.nofile passes at 1048576 and warns at 1024") {
  CHECK(RunOnFixture("memlock-64k", CheckOsNofile).findings.at(0).outcome == Outcome::kPass);
  MemFileReader fs;
  fs.AddFile("/proc/self/limits", LimitsWith("unlimited", "1024"));
  auto r = RunCheck(fs, CheckOsNofile);
  CHECK(r.findings.at(0).outcome == Outcome::kWarn);
  CHECK(Has(r.findings.at(0).message, "1024"));
  CHECK(RunOnFixture("host-broken", CheckOsNofile).findings.at(0).outcome == Outcome::kError);
}

// ---- os.sysctl -------------------------------------------------------------------------------

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

// ---- os.shm ----------------------------------------------------------------------------------

TEST_CASE("os.shm passes on a bare-metal /dev/shm sized by tmpfs' default") {
  auto r = RunOnFixture("memlock-64k", CheckOsShm);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "half of MemTotal"));
  REQUIRE(r.facts.shm_bytes.has_value());
  CHECK(*r.facts.shm_bytes == 2113591344ull * 1024 / 2);
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

// ---- gpu.inventory / gpu.gdr -----------------------------------------------------------------

TEST_CASE("gpu.inventory lists 8 H200s and the open driver") {
  auto r = RunOnFixture("memlock-64k", CheckGpuInventory);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "8 x NVIDIA H200"));
  CHECK(Has(r.findings[0].message, "580.159.04"));
  CHECK(r.facts.gpus.size() == 8);
  CHECK(r.facts.nvidia_driver == "580.159.04");
}

TEST_CASE("gpu.inventory skips cleanly without GPUs and fails without a driver") {
  MemFileReader none;
  none.AddDir("/sys/bus/pci/devices");
  CHECK(RunCheck(none, CheckGpuInventory).findings.at(0).outcome == Outcome::kSkip);
  MemFileReader nodriver;
  nodriver.AddFile("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n");
  nodriver.AddFile("/sys/bus/pci/devices/0000:18:00.0/class", "0x030200\n");
  nodriver.AddFile("/sys/bus/pci/devices/0000:18:00.0/device", "0x2335\n");
  CHECK(RunCheck(nodriver, CheckGpuInventory).findings.at(0).outcome == Outcome::kFail);
  // The driver lists one GPU of two.
  nodriver.AddFile("/sys/bus/pci/devices/0000:2a:00.0/vendor", "0x10de\n");
  nodriver.AddFile("/sys/bus/pci/devices/0000:2a:00.0/class", "0x030200\n");
  nodriver.AddFile("/proc/driver/nvidia/version",
                   "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12\n");
  nodriver.AddFile("/proc/driver/nvidia/gpus/0000:18:00.0/information", "Model: \t NVIDIA H200\n");
  auto r = RunCheck(nodriver, CheckGpuInventory);
  const Finding* gpu1 = ForEntity(r.findings, "gpu1");
  REQUIRE(gpu1);
  CHECK(gpu1->outcome == Outcome::kFail);
  CHECK(Has(gpu1->message, "0000:2a:00.0"));
}

TEST_CASE("gpu.inventory on a broken tree reports the malformed files") {
  auto r = RunOnFixture("host-broken", CheckGpuInventory);
  auto errors = With(r.findings, Outcome::kError);
  REQUIRE(errors.size() >= 2);
  bool version = false, cls = false;
  for (const auto& f : errors) {
    version |= Has(f.message, "/proc/driver/nvidia/version");
    cls |= Has(f.message, "/class");
  }
  CHECK(version);
  CHECK(cls);
}

TEST_CASE("gpu.gdr passes with nvidia_peermem loaded") {
  auto r = RunOnFixture("memlock-64k", CheckGpuGdr);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "nvidia_peermem"));
}

namespace {
MemFileReader GdrNode(const std::string& version) {
  MemFileReader fs;
  fs.AddFile("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n");
  fs.AddFile("/sys/bus/pci/devices/0000:18:00.0/class", "0x030200\n");
  fs.AddFile("/proc/driver/nvidia/version", version);
  fs.AddFile("/proc/modules", "nvidia 56598528 147 - Live 0x0000000000000000\n");
  // One active InfiniBand port.
  const std::string p = "/sys/class/infiniband/mlx5_0/ports/1/";
  fs.AddFile(p + "state", "4: ACTIVE\n");
  fs.AddFile(p + "phys_state", "5: LinkUp\n");
  fs.AddFile(p + "rate", "400 Gb/sec (4X NDR)\n");
  fs.AddFile(p + "link_layer", "InfiniBand\n");
  fs.AddFile(p + "gids/0", "fe80:0000:0000:0000:58a2:e103:00da:e626\n");
  return fs;
}
}  // namespace

TEST_CASE("gpu.gdr warns when IB is active without peermem on a proprietary driver") {
  auto fs = GdrNode("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12\n");
  auto r = RunCheck(fs, CheckGpuGdr);
  REQUIRE(r.findings.size() == 1);
  REQUIRE(r.facts.ib_ports.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kWarn);
  CHECK(Has(r.findings[0].message, "nvidia_peermem is not loaded"));
  CHECK(Has(r.findings[0].next_step, "modprobe nvidia_peermem"));
  // The same node with its only port down: GPUDirect RDMA would not be used, so skip.
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  CHECK(RunCheck(fs, CheckGpuGdr).findings.at(0).outcome == Outcome::kSkip);
}

TEST_CASE("gpu.gdr accepts DMA-BUF from the open kernel modules unless NCCL_DMABUF_ENABLE=0") {
  auto fs = GdrNode(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n");
  auto r = RunCheck(fs, CheckGpuGdr);
  CHECK(r.findings.at(0).outcome == Outcome::kPass);
  CHECK(Has(r.findings.at(0).message, "DMA-BUF"));
  auto off = RunCheck(fs, CheckGpuGdr, {{"NCCL_DMABUF_ENABLE", "0"}});
  CHECK(off.findings.at(0).outcome != Outcome::kPass);
}

// ---- pci.acs ---------------------------------------------------------------------------------

TEST_CASE("pci.acs passes when ACS control is 0 on every bridge; IOMMU in passthrough") {
  auto r = RunOnFixture("memlock-64k", CheckPciAcs);
  const Finding* node = ForEntity(r.findings, "node");
  REQUIRE(node);
  CHECK(node->outcome == Outcome::kPass);
  CHECK(Has(node->message, "33 PCIe bridges"));
  const Finding* iommu = ForEntity(r.findings, "iommu");
  REQUIRE(iommu);
  CHECK(iommu->outcome == Outcome::kPass);
  CHECK(Has(iommu->message, "passthrough"));
}

TEST_CASE("pci.acs warns on each bridge with the corpus' ACSCtl bits, with the setpci fix") {
  auto r = RunOnFixture("acs-enabled", CheckPciAcs);
  auto warns = With(r.findings, Outcome::kWarn);
  // lspci_acsctl_enabled_nccl-523.txt: 7 of 12 ACSCtl lines have one of the four bits on.
  CHECK(warns.size() == 7);
  const Finding* first = ForEntity(r.findings, "0000:0b:01.0");
  REQUIRE(first);
  CHECK(first->outcome == Outcome::kWarn);
  CHECK(Has(first->message, "SrcValid/ReqRedir/CmpltRedir/UpstreamFwd"));
  CHECK(Has(first->next_step, "setpci -s 0000:0b:01.0 ECAP_ACS+0x6.w=0000"));
  CHECK(Has(first->evidence.at(0).value,
            "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"));
}

TEST_CASE("pci.acs: truncated config is an error, 64-byte config is 'run as root'") {
  auto r = RunOnFixture("host-broken", CheckPciAcs);
  auto errors = With(r.findings, Outcome::kError);
  REQUIRE(errors.size() >= 2);
  CHECK(Has(errors[0].message, "truncated"));
  CHECK(Has(errors[0].message, "/config"));
  MemFileReader fs;
  fs.AddFile("/sys/bus/pci/devices/0000:00:01.0/class", "0x060400\n");
  fs.AddFile("/sys/bus/pci/devices/0000:00:01.0/config", std::string(64, '\0'));
  auto u = RunCheck(fs, CheckPciAcs);
  const Finding* node = ForEntity(u.findings, "node");
  REQUIRE(node);
  CHECK(node->outcome == Outcome::kSkip);
  CHECK(Has(node->message, "non-root"));
}

TEST_CASE("pci.acs warns when the IOMMU translates DMA") {
  MemFileReader fs;
  fs.AddDir("/sys/bus/pci/devices");
  fs.AddFile("/sys/class/iommu/dmar0/intel-iommu/version", "1:0\n");
  fs.AddFile("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro intel_iommu=on\n");
  auto r = RunCheck(fs, CheckPciAcs);
  const Finding* iommu = ForEntity(r.findings, "iommu");
  REQUIRE(iommu);
  CHECK(iommu->outcome == Outcome::kWarn);
  CHECK(Has(iommu->next_step, "iommu=pt"));
}

namespace {

// A tree where /sys/class/iommu is there but cannot be listed (EACCES as a non-root user sees
// a 0700 directory): MemFileReader cannot make a directory unreadable.
class IommuUnreadable final : public FileReader {
 public:
  explicit IommuUnreadable(const MemFileReader& m) : m_(m) {}
  Result<std::string> ReadFile(std::string_view p, std::size_t max) const override {
    return m_.ReadFile(p, max);
  }
  Result<std::vector<std::string>> ListDir(std::string_view p) const override {
    if (p == "/sys/class/iommu") return MakeError("cannot list directory: Permission denied");
    return m_.ListDir(p);
  }
  Result<std::string> ReadLink(std::string_view p) const override { return m_.ReadLink(p); }
  bool Exists(std::string_view p) const override { return p == "/sys/class/iommu" || m_.Exists(p); }
  bool IsDir(std::string_view p) const override { return p == "/sys/class/iommu" || m_.IsDir(p); }
  Result<std::uint64_t> FsSizeBytes(std::string_view p) const override { return m_.FsSizeBytes(p); }
  std::string HostPath(std::string_view p) const override { return std::string(p); }
  bool IsSysroot() const override { return true; }

 private:
  const MemFileReader& m_;
};

}  // namespace

TEST_CASE("an unreadable /sys/class/iommu is 'could not check', not 'IOMMU off'") {
  MemFileReader mem;
  mem.AddDir("/sys/bus/pci/devices");
  mem.AddDir("/sys/class");
  mem.AddFile("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro intel_iommu=on\n");
  IommuUnreadable fs(mem);
  auto r = RunCheck(fs, CheckPciAcs);
  const Finding* iommu = ForEntity(r.findings, "iommu");
  REQUIRE(iommu);
  CHECK(iommu->outcome == Outcome::kError);
  CHECK(iommu->code == "pci.acs/iommu_unknown");
  CHECK(Has(iommu->message, "could not check"));
  // With no IOMMU class at all (no driver) it is still off.
  MemFileReader none;
  none.AddDir("/sys/bus/pci/devices");
  none.AddFile("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro\n");
  auto off = RunCheck(none, CheckPciAcs);
  const Finding* f = ForEntity(off.findings, "iommu");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kPass);
}

// ---- kernel.log ------------------------------------------------------------------------------

TEST_CASE("kernel.log passes on a clean boot log") {
  auto r = RunOnFixture("memlock-64k", CheckKernelLog);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "6 kernel log records"));
}

TEST_CASE("kernel.log flags the corpus' mlx5 failures, flaps and the fatal Xid 79") {
  auto r = RunOnFixture("kernel-errors", CheckKernelLog);
  const Finding* mkey = ForEntity(r.findings, "0000:41:00.0");
  REQUIRE(mkey);
  CHECK(mkey->outcome == Outcome::kWarn);
  CHECK(Has(mkey->message, "CREATE_MKEY"));
  CHECK(Has(mkey->message, "353031 ratelimited"));
  const Finding* mr = ForEntity(r.findings, "mlx5_0");
  REQUIRE(mr);
  CHECK(Has(mr->message, "6 times"));
  const Finding* flap = ForEntity(r.findings, "mlx5_5:1");
  REQUIRE(flap);
  CHECK(flap->outcome == Outcome::kWarn);
  CHECK(Has(flap->message, "2 times"));
  const Finding* xid = ForEntity(r.findings, "0000:09:00.0");
  REQUIRE(xid);
  CHECK(xid->outcome == Outcome::kFail);
  CHECK(Has(xid->message, "Xid 79"));
  CHECK(Has(xid->evidence.at(0).value, "[1084456.074562] NVRM: Xid"));
  // "fallen off the bus" of the same GPU is folded into the Xid.
  CHECK(std::count_if(r.findings.begin(), r.findings.end(),
                      [](const Finding& f) { return f.entity == "0000:09:00.0"; }) == 1);
  // mlx5_0's boot-time "Link ACTIVE" alone is not a flap.
  CHECK(ForEntity(r.findings, "mlx5_0:1") == nullptr);
  // dmesg_nvrm_fallen_off_bus_NVSentinel-155.txt: lost without an Xid line.
  const Finding* lost = ForEntity(r.findings, "0000:b3:00.0");
  REQUIRE(lost);
  CHECK(lost->outcome == Outcome::kFail);
  CHECK(Has(lost->message, "fell off the bus"));
  // dmesg_pcie_aer_corrected_returnn-1486.txt: two corrected errors on one root port.
  const Finding* aer = ForEntity(r.findings, "0000:00:03.0");
  REQUIRE(aer);
  CHECK(aer->outcome == Outcome::kWarn);
  CHECK(Has(aer->message, "2 times"));
}

TEST_CASE("kernel.log honours --since") {
  RootedFileReader fs(Fixture("kernel-errors"));
  auto r = RunCheck(fs, CheckKernelLog, {}, {}, 1084456000000);
  CHECK(ForEntity(r.findings, "0000:41:00.0") == nullptr);
  CHECK(ForEntity(r.findings, "0000:09:00.0") != nullptr);
}

TEST_CASE("kernel.log: garbage lines are an error naming the file; missing log too") {
  auto r = RunOnFixture("host-broken", CheckKernelLog);
  auto errors = With(r.findings, Outcome::kError);
  REQUIRE(errors.size() == 1);
  CHECK(Has(errors[0].message, "host-broken/dev/kmsg"));
  CHECK(Has(errors[0].message, "line 3"));
  MemFileReader fs;
  auto missing = RunCheck(fs, CheckKernelLog);
  CHECK(missing.findings.at(0).outcome == Outcome::kError);
}

TEST_CASE("kernel.log: a log larger than what is read is an error saying how much was checked") {
  // Three records; the limit cuts the third one in the middle.
  const std::string r1 = "6,1,1000000,-;mlx5_core 0000:41:00.0: first\n";
  const std::string r2 = "6,2,2000000,-;eth0: Link up\n";
  const std::string r3 = "6,3,3000000,-;NVRM: Xid (PCI:0000:41:00): 79, GPU has fallen off\n";
  MemFileReader fs;
  fs.AddFile("/dev/kmsg", r1 + r2 + r3);
  GatherOptions cut;
  cut.kmsg_max_bytes = r1.size() + r2.size() + 10;
  NodeFacts facts = GatherNodeFacts(fs, cut);
  CHECK(facts.host.kmsg_truncated);
  CHECK(facts.host.kmsg_bytes == r1.size() + r2.size());  // whole records only
  Environment env;
  Thresholds th;
  CheckContext ctx{facts, env, th};
  auto findings = CheckKernelLog(ctx);
  auto errors = With(findings, Outcome::kError);
  REQUIRE(errors.size() == 1);  // the cut record is not reported as a malformed line
  CHECK(errors[0].code == "kernel.log/truncated");
  CHECK(Has(errors[0].message, "only its oldest 2 records (up to 2.000000 s after boot)"));
  REQUIRE(errors[0].evidence.size() == 1);
  CHECK(errors[0].evidence[0].value ==
        "read " + std::to_string(r1.size() + r2.size()) + " bytes, 2 records; the log went on");
  CHECK(Has(errors[0].next_step, "dmesg"));
  CHECK(With(findings, Outcome::kFail).empty());  // the Xid 79 was past the cut

  // The whole log fits: no truncation finding, and the Xid is seen.
  NodeFacts whole = GatherNodeFacts(fs);
  CHECK_FALSE(whole.host.kmsg_truncated);
  CheckContext ctx2{whole, env, th};
  auto all = CheckKernelLog(ctx2);
  CHECK(With(all, Outcome::kError).empty());
  CHECK_FALSE(With(all, Outcome::kFail).empty());
}

// ---- net.ifname ------------------------------------------------------------------------------

TEST_CASE("net.ifname: NCCL's default picks eno1 over docker0 and lo; addresses from procfs") {
  auto r = RunOnFixture("memlock-64k", CheckNetIfname);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].entity == "eno1");
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "10.40.2.17"));
  bool lo = false;
  for (const auto& i : r.facts.interfaces) {
    if (i.name == "lo") lo = std::count(i.addresses.begin(), i.addresses.end(), "127.0.0.1") == 1;
  }
  CHECK(lo);
}

TEST_CASE("net.ifname fails when NCCL_SOCKET_IFNAME matches nothing, naming the interfaces") {
  auto r = RunOnFixture("memlock-64k", CheckNetIfname, {{"NCCL_SOCKET_IFNAME", "eth"}});
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kFail);
  CHECK(r.findings[0].entity == "NCCL_SOCKET_IFNAME");
  CHECK(Has(r.findings[0].message, "eno1"));
  CHECK(Has(r.findings[0].message, "docker0"));
  // "^" excludes: everything but eno1 leaves docker0 (down) with an address.
  auto ex = RunOnFixture("memlock-64k", CheckNetIfname, {{"NCCL_SOCKET_IFNAME", "^eno,lo"}});
  CHECK(ex.findings.at(0).entity == "docker0");
  CHECK(ex.findings.at(0).outcome == Outcome::kFail);  // docker0 is down
}

TEST_CASE("net.ifname fails when the chosen interface is down and prefers ib*") {
  MemFileReader fs;
  auto add = [&](const std::string& n, const std::string& state, int idx, const char* flags) {
    fs.AddFile("/sys/class/net/" + n + "/operstate", state + "\n");
    fs.AddFile("/sys/class/net/" + n + "/mtu", "1500\n");
    fs.AddFile("/sys/class/net/" + n + "/ifindex", std::to_string(idx) + "\n");
    fs.AddFile("/sys/class/net/" + n + "/flags", std::string(flags) + "\n");
  };
  add("lo", "unknown", 1, "0x9");
  add("eno1", "up", 2, "0x1003");
  add("ib0", "down", 3, "0x1003");
  fs.AddFile("/proc/net/fib_trie",
             "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.0.0.5\n        /32 host LOCAL\n"
             "     |-- 192.168.7.5\n        /32 host LOCAL\n");
  fs.AddFile("/proc/net/route",
             "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n"
             "eno1\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
             "ib0\t0007A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
  auto r = RunCheck(fs, CheckNetIfname);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].entity == "ib0");
  CHECK(r.findings[0].outcome == Outcome::kFail);
  CHECK(Has(r.findings[0].message, "192.168.7.5"));
  CHECK(Has(r.findings[0].next_step, "ip link set ib0 up"));
  auto pinned = RunCheck(fs, CheckNetIfname, {{"NCCL_SOCKET_IFNAME", "=eno1"}});
  CHECK(pinned.findings.at(0).entity == "eno1");
  CHECK(pinned.findings.at(0).outcome == Outcome::kPass);
}

TEST_CASE("host facts under a sysroot: hostname, limits, interfaces, peermem, open driver") {
  RootedFileReader fs(Fixture("memlock-64k"));
  NodeFacts facts = GatherNodeFacts(fs);
  CHECK(facts.hostname == "h200-ib-01");
  CHECK(facts.memlock_soft == 65536);
  CHECK(facts.nofile_soft == 1048576);
  CHECK(facts.peermem_loaded);
  CHECK(facts.peermem_module == "nvidia_peermem");
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

namespace {
// The live node with kernel.dmesg_restrict=1 as seen by a non-root user: /dev/kmsg refuses.
class DeniedKmsgReader final : public FileReader {
 public:
  explicit DeniedKmsgReader(const MemFileReader& inner) : inner_(inner) {}
  Result<std::string> ReadFile(std::string_view path, std::size_t max) const override {
    if (path == "/dev/kmsg") {
      return MakeError("cannot open: Operation not permitted", "/dev/kmsg",
                       "run as a user allowed to read it (or as root)");
    }
    return inner_.ReadFile(path, max);
  }
  Result<std::vector<std::string>> ListDir(std::string_view p) const override {
    return inner_.ListDir(p);
  }
  Result<std::string> ReadLink(std::string_view p) const override { return inner_.ReadLink(p); }
  bool Exists(std::string_view p) const override { return inner_.Exists(p); }
  bool IsDir(std::string_view p) const override { return inner_.IsDir(p); }
  Result<std::uint64_t> FsSizeBytes(std::string_view p) const override {
    return inner_.FsSizeBytes(p);
  }
  std::string HostPath(std::string_view p) const override { return std::string(p); }
  bool IsSysroot() const override { return false; }

 private:
  const MemFileReader& inner_;
};
}  // namespace

TEST_CASE("kernel.log: a log refused by dmesg_restrict is an error with the fix") {
  MemFileReader mem;
  mem.AddFile("/proc/sys/kernel/dmesg_restrict", "1\n");
  DeniedKmsgReader fs(mem);
  NodeFacts facts = GatherNodeFacts(fs);
  Environment env;
  Thresholds th;
  CheckContext ctx{facts, env, th};
  auto findings = CheckKernelLog(ctx);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].outcome == Outcome::kError);
  CHECK(Has(findings[0].next_step, "kernel.dmesg_restrict=1"));
  CHECK(Has(findings[0].next_step, "sysctl -w kernel.dmesg_restrict=0"));
}

TEST_CASE("gpu.inventory inside a GPU container does not flag the host's other GPUs") {
  MemFileReader fs;
  for (const char* bdf : {"0000:18:00.0", "0000:2a:00.0"}) {
    fs.AddFile(std::string("/sys/bus/pci/devices/") + bdf + "/vendor", "0x10de\n");
    fs.AddFile(std::string("/sys/bus/pci/devices/") + bdf + "/class", "0x030200\n");
  }
  fs.AddFile("/proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release\n");
  fs.AddFile("/proc/driver/nvidia/gpus/0000:2a:00.0/information", "Model: \t NVIDIA H200\n");
  auto bare = RunCheck(fs, CheckGpuInventory);
  CHECK(ForEntity(bare.findings, "gpu0") != nullptr);  // on bare metal: a missing GPU
  auto pod = RunCheck(fs, CheckGpuInventory, {{"NVIDIA_VISIBLE_DEVICES", "1"}});
  REQUIRE(pod.findings.size() == 1);
  CHECK(pod.findings[0].outcome == Outcome::kPass);
  CHECK(Has(pod.findings[0].message, "1 NVIDIA GPU"));
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
