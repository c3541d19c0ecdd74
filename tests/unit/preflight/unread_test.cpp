// What could not be read is an error, never "empty = healthy": sources that are there but of the
// wrong type (a file where a directory should be, a directory where a file should be) become
// `error` findings, while sources that are absent keep meaning "none".
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "preflight/check.h"

using namespace sl;
using namespace sl::preflight;

namespace {

// The checks under test, reached through the registry as the runner reaches them.
const CheckFn CheckGpuGdr = FindCheck("gpu.gdr")->run;
const CheckFn CheckGpuInventory = FindCheck("gpu.inventory")->run;
const CheckFn CheckIbPortErrors = FindCheck("ib.port.errors")->run;
const CheckFn CheckPciAcs = FindCheck("pci.acs")->run;

constexpr const char* kVersion =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct 14 00:00:00 UTC 2025\n"
    "GCC version:  gcc version 12.3.0\n";

std::vector<Finding> Run(const FileReader& fs, CheckFn fn) {
  NodeFacts facts = GatherNodeFacts(fs);
  CheckContext ctx{facts, {}, {}, false, -1};
  return fn(ctx);
}

bool Has(const std::vector<Finding>& fs, const std::string& code) {
  return std::any_of(fs.begin(), fs.end(), [&](const Finding& f) { return f.code == code; });
}

bool AnyPass(const std::vector<Finding>& fs) {
  return std::any_of(fs.begin(), fs.end(),
                     [](const Finding& f) { return f.outcome == Outcome::kPass; });
}

// Two NVIDIA GPUs on PCI, the driver loaded.
MemFileReader GpuNode() {
  MemFileReader fs;
  for (const char* bdf : {"0000:18:00.0", "0000:2a:00.0"}) {
    const std::string base = std::string("/sys/bus/pci/devices/") + bdf;
    fs.AddFile(base + "/vendor", "0x10de\n");
    fs.AddFile(base + "/class", "0x030200\n");
    fs.AddFile(base + "/device", "0x2335\n");
  }
  fs.AddFile("/proc/driver/nvidia/version", kVersion);
  return fs;
}

}  // namespace

TEST_CASE("PathAbsent: nothing there vs. there but of the wrong type") {
  MemFileReader fs;
  fs.AddFile("/proc/driver/nvidia", "a file where a directory should be");
  fs.AddDir("/sys/class");
  CHECK(PathAbsent(fs, "/sys/class/infiniband"));
  CHECK_FALSE(PathAbsent(fs, "/sys/class"));
  CHECK_FALSE(PathAbsent(fs, "/proc/driver/nvidia/version"));  // its parent is a file
}

TEST_CASE("an unreadable driver GPU list is an error, not every GPU 'fell off the bus'") {
  MemFileReader fs = GpuNode();
  fs.AddFile("/proc/driver/nvidia/gpus", "");  // a file where the directory should be
  auto out = Run(fs, CheckGpuInventory);
  CHECK(Has(out, "gpu.inventory/file_unreadable"));
  CHECK_FALSE(Has(out, "gpu.inventory/gpu_missing_from_driver"));
  CHECK_FALSE(AnyPass(out));
}

TEST_CASE("an absent driver GPU list still means the driver lists no GPU") {
  MemFileReader fs = GpuNode();
  auto out = Run(fs, CheckGpuInventory);
  CHECK(Has(out, "gpu.inventory/gpu_missing_from_driver"));
  CHECK_FALSE(Has(out, "gpu.inventory/file_unreadable"));
}

TEST_CASE("a directory where /proc/driver/nvidia/version should be is an error, not a pass") {
  MemFileReader fs;
  const std::string base = "/sys/bus/pci/devices/0000:18:00.0";
  fs.AddFile(base + "/vendor", "0x10de\n");
  fs.AddFile(base + "/class", "0x030200\n");
  fs.AddFile("/proc/driver/nvidia/gpus/0000:18:00.0/information", "Model: NVIDIA H200\n");
  fs.AddDir("/proc/driver/nvidia/version");
  auto out = Run(fs, CheckGpuInventory);
  CHECK(Has(out, "gpu.inventory/file_unreadable"));
  CHECK_FALSE(AnyPass(out));
}

TEST_CASE("an unlistable PCI device list is an error for gpu.inventory and pci.acs") {
  MemFileReader fs;
  fs.AddFile("/sys/bus/pci/devices", "");
  fs.AddFile("/proc/driver/nvidia/version", kVersion);
  fs.AddDir("/proc/driver/nvidia/gpus/0000:18:00.0");
  auto gpu = Run(fs, CheckGpuInventory);
  CHECK(Has(gpu, "gpu.inventory/file_unreadable"));
  CHECK_FALSE(AnyPass(gpu));
  auto acs = Run(fs, CheckPciAcs);
  CHECK(Has(acs, "pci.acs/devices_unreadable"));
  CHECK_FALSE(Has(acs, "pci.acs/no_pci"));
}

TEST_CASE("an absent PCI device list stays a skip for pci.acs") {
  MemFileReader fs;
  fs.AddDir("/sys/bus");
  CHECK(Has(Run(fs, CheckPciAcs), "pci.acs/no_pci"));
}

TEST_CASE("an unreadable /proc/modules is an error for gpu.gdr, not 'peermem not loaded'") {
  MemFileReader fs = GpuNode();
  fs.AddDir("/proc/modules");
  auto out = Run(fs, CheckGpuGdr);
  REQUIRE(out.size() == 1);
  CHECK(out[0].code == "gpu.gdr/modules_unreadable");
  CHECK(out[0].outcome == Outcome::kError);
}

TEST_CASE("an IB counters directory that cannot be listed is an error, not a pass or skip") {
  MemFileReader fs;
  const std::string port = "/sys/class/infiniband/mlx5_0/ports/1";
  fs.AddFile(port + "/state", "4: ACTIVE\n");
  fs.AddFile(port + "/phys_state", "5: LinkUp\n");
  fs.AddFile(port + "/rate", "400 Gb/sec (4X NDR)\n");
  fs.AddFile(port + "/link_layer", "InfiniBand\n");
  fs.AddFile(port + "/gids/0", "fe80:0000:0000:0000:0000:0000:0000:0001\n");
  fs.AddFile(port + "/counters", "");  // a file where the directory should be
  auto out = Run(fs, CheckIbPortErrors);
  REQUIRE(out.size() == 1);
  CHECK(out[0].code == "ib.port.errors/counter_unreadable");
  CHECK(out[0].outcome == Outcome::kError);
}

TEST_CASE("a file where /sys/class/infiniband should be is a device_unreadable error") {
  MemFileReader fs;
  fs.AddFile("/sys/class/infiniband", "");
  NodeFacts facts = GatherNodeFacts(fs);
  const auto rows = IbProblems(facts);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].attribute == "devices");
}
