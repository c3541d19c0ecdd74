// gpu.inventory: its pass, warn, fail and error cases (preflight/checks/gpu_inventory.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

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
