// gpu.gdr: its pass, warn, fail and error cases (preflight/checks/gpu_gdr.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

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
