#include "preflight/check.h"

namespace sl::preflight {
namespace {

constexpr CheckInfo kChecks[] = {
    {"ib.port.state", "IB/RoCE ports NCCL would use are ACTIVE/LinkUp at matching rates",
     CheckIbPortState},
    {"ib.port.errors", "port and hw error counters are zero", CheckIbPortErrors},
    {"ib.mtu", "port MTUs are jumbo and agree across the ports NCCL uses", CheckIbMtu},
    {"ib.gid", "RoCE GID table has a usable RoCE v2 entry; NCCL_IB_GID_INDEX points at it",
     CheckIbGid},
    {"os.memlock", "memlock limit is unlimited where the ranks run", CheckOsMemlock},
    {"os.nofile", "open-files limit is high enough", CheckOsNofile},
    {"os.sysctl", "socket buffer sysctls and local port range", CheckOsSysctl},
    {"os.shm", "/dev/shm is large enough for NCCL's shared-memory transport", CheckOsShm},
    {"gpu.inventory", "NVIDIA driver version and GPU count", CheckGpuInventory},
    {"gpu.gdr", "a GPUDirect RDMA path exists (nvidia_peermem or DMA-BUF)", CheckGpuGdr},
    {"pci.acs", "ACS redirect is off on PCIe bridges; IOMMU state", CheckPciAcs},
    {"kernel.log", "no mlx5/link-flap/Xid events in the kernel log", CheckKernelLog},
    {"env.nccl", "NCCL/TORCH variables are known, valid and fit this node", CheckEnvNccl},
    {"net.ifname", "NCCL's bootstrap interface exists, is up and has an address", CheckNetIfname},
};

}  // namespace

std::span<const CheckInfo> Registry() { return kChecks; }

}  // namespace sl::preflight
