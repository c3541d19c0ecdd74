// gpu.gdr: is there a GPUDirect RDMA path, so the NIC reads and writes GPU memory directly?
// Either the nvidia_peermem module (legacy: nv_peer_mem from MLNX_OFED) is loaded, or the
// driver can export GPU memory as DMA-BUF: NVIDIA's open kernel modules from release 515 on
// do, and NCCL >= 2.19 uses DMA-BUF by default (NCCL_DMABUF_ENABLE=1) on Linux >= 5.12.
// Without either, NCCL still runs over IB but stages every transfer through host memory
// ("GPU Direct RDMA Disabled"): a large bandwidth loss that nothing reports.
#include "common/strings.h"
#include "nccl/job_env.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"gpu.gdr/no_gpu", Outcome::kSkip, Outcome::kSkip, "no NVIDIA GPU or driver on this node", ""},
    {"gpu.gdr/peermem_loaded", Outcome::kPass, Outcome::kPass,
     "nvidia_peermem (or nv_peer_mem) is loaded", ""},
    {"gpu.gdr/dmabuf", Outcome::kPass, Outcome::kPass,
     "the open kernel modules give GPUDirect RDMA through DMA-BUF", ""},
    {"gpu.gdr/no_path_no_rdma_port", Outcome::kSkip, Outcome::kSkip,
     "no GPUDirect RDMA path, but no IB/RoCE port is active", ""},
    {"gpu.gdr/modules_unreadable", Outcome::kError, Outcome::kError,
     "/proc/modules is there but could not be read", kFixInFinding},
    {"gpu.gdr/no_gdr_path", Outcome::kWarn, Outcome::kWarn,
     "IB/RoCE ports are active but there is no GPUDirect RDMA path", kFixInFinding},
};

// Neither nvidia_peermem nor DMA-BUF: a warning when an RDMA port is active (NCCL would stage
// through host memory), a skip when none is.
Finding NoPathFinding(Finding f, const NodeFacts& facts, bool dmabuf_off) {
  int active = 0;
  for (const auto& p : facts.ib_ports) active += p.IsUp() ? 1 : 0;
  std::string why =
      dmabuf_off
          ? "NCCL_DMABUF_ENABLE=0 turns DMA-BUF off and nvidia_peermem is "
            "not loaded"
          : "nvidia_peermem is not loaded and the driver (" +
                (facts.nvidia_driver.empty() ? std::string("unknown") : facts.nvidia_driver) +
                (facts.nvidia_open_kernel ? ", open" : ", proprietary") + ") cannot export DMA-BUF";
  if (active == 0) {
    f.outcome = Outcome::kSkip;
    f.code = "gpu.gdr/no_path_no_rdma_port";
    f.message = "no GPUDirect RDMA path (" + why +
                "), but no InfiniBand/RoCE port is active, "
                "so NCCL would not use it anyway";
    return f;
  }
  f.outcome = Outcome::kWarn;
  f.code = "gpu.gdr/no_gdr_path";
  f.message = std::to_string(active) +
              " IB/RoCE port(s) are active but there is no GPUDirect "
              "RDMA path: " +
              why + "; NCCL stages every transfer through host memory";
  f.next_step =
      "`modprobe nvidia_peermem` (persist: echo nvidia_peermem > "
      "/etc/modules-load.d/nvidia-peermem.conf), or install the open kernel modules "
      "(>= 515) so NCCL can use DMA-BUF" +
      std::string(dmabuf_off ? " and unset NCCL_DMABUF_ENABLE=0" : "") +
      "; confirm with NCCL_DEBUG=INFO (\"GPU Direct RDMA Enabled\")";
  return f;
}

std::vector<Finding> CheckGpuGdr(const CheckContext& ctx) {
  const NodeFacts& facts = ctx.facts;
  Finding f;
  f.check_id = "gpu.gdr";
  f.entity = "node";
  if (facts.gpus.empty() && facts.nvidia_driver.empty()) {
    f.outcome = Outcome::kSkip;
    f.code = "gpu.gdr/no_gpu";
    f.message = "no NVIDIA GPU/driver on this node: GPUDirect RDMA does not apply";
    return {f};
  }
  if (facts.PeermemLoaded()) {
    f.With(facts.host.peermem.path, facts.host.peermem.raw);
    f.outcome = Outcome::kPass;
    f.code = "gpu.gdr/peermem_loaded";
    f.message = facts.PeermemModule() + " is loaded: GPUDirect RDMA available";
    return {f};
  }
  if (const auto& m = facts.host.modules; !m.ok() && !m.absent) {
    // Not read is not "not loaded": a warning about a missing module would be a guess.
    f.outcome = Outcome::kError;
    f.code = "gpu.gdr/modules_unreadable";
    f.message = "cannot tell whether nvidia_peermem is loaded: " + m.error.Describe();
    f.With(m.path, "unreadable: " + m.error.message);
    f.next_step =
        "check that /proc is mounted and /proc/modules is the kernel's (`lsmod` reads it)";
    return {f};
  }
  f.With("/proc/modules", "no nvidia_peermem or nv_peer_mem line");
  int major = 0;
  if (auto v = ParseInt(facts.nvidia_driver.substr(0, facts.nvidia_driver.find('.'))); v.ok()) {
    major = static_cast<int>(*v);
  }
  const auto dmabuf_env = nccl::DmabufDisabledBy(ctx.env);
  const bool dmabuf_off = dmabuf_env.has_value();
  if (facts.nvidia_open_kernel && major >= 515) {
    f.With("/proc/driver/nvidia/version", "Open Kernel Module " + facts.nvidia_driver);
    if (dmabuf_off) {
      f.With("NCCL_DMABUF_ENABLE", *dmabuf_env);
    } else {
      f.outcome = Outcome::kPass;
      f.code = "gpu.gdr/dmabuf";
      f.message = "no nvidia_peermem, but the open kernel module " + facts.nvidia_driver +
                  " exports GPU memory as DMA-BUF, which NCCL >= 2.19 uses for GPUDirect RDMA "
                  "(needs Linux >= 5.12)";
      return {f};
    }
  } else if (!facts.nvidia_driver.empty()) {
    f.With("/proc/driver/nvidia/version",
           (facts.nvidia_open_kernel ? "Open Kernel Module " : "proprietary Kernel Module ") +
               facts.nvidia_driver);
  }
  return {NoPathFinding(std::move(f), facts, dmabuf_off)};
}

}  // namespace

extern const CheckInfo kGpuGdrCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kGpuGdrCheck = {
    "gpu.gdr", "a GPUDirect RDMA path exists (nvidia_peermem or DMA-BUF)", CheckGpuGdr, kCodes};

}  // namespace sl::preflight
