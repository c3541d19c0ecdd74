// pci.acs: its pass, warn, fail and error cases (preflight/checks/pci_acs.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("pci.acs passes when ACS control is 0 on every bridge, IOMMU in passthrough") {
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
