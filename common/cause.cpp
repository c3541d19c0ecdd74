#include "common/cause.h"

namespace sl {

namespace {

// doc/causes.md holds the same text (tests/unit/common/cause_test.cpp compares them).
constexpr CauseInfo kCauses[] = {
    {"gid_index",
     "The RoCE GID index in use does not address the peer: a RoCE v1 or link-local GID, or a GID "
     "table that differs between nodes or pods.",
     "Unset NCCL_IB_GID_INDEX on NCCL >= 2.21 (it picks a RoCE v2 IPv4 GID itself), or set the "
     "RoCE v2 IPv4 index of each node (show_gids); pods may differ per node.",
     "show_gids on every node (type v2 with an IPv4 address at the index in use?) and the "
     "NET/IB QP lines (GID index, subnet prefix) of NCCL_DEBUG=INFO."},
    {"mtu_mismatch",
     "The ports, the peers or a switch on the path disagree on the MTU, so large messages are "
     "dropped while small ones pass.",
     "One MTU end to end (HCA active_mtu, netdev MTU, switch ports) on every node.",
     "ibv_devinfo active_mtu and `ip link` MTU on every node; failures only at large sizes."},
    {"memlock",
     "The locked-memory limit where the ranks run is too small to register the buffers RDMA "
     "needs.",
     "Set the locked-memory limit to unlimited where the ranks run (limits.conf, slurmd's "
     "LimitMEMLOCK, the container runtime's --ulimit memlock=-1).",
     "`ulimit -l` inside the job (not the login shell) and the errno of ibv_reg_mr/ibv_create_cq."},
    {"qp_or_resource_limit",
     "The HCA or its driver ran out of queue pairs, completion queues, memory regions or another "
     "resource, typically only at a large scale.",
     "Use fewer QPs (NCCL_IB_QPS_PER_CONNECTION, fewer channels) or raise the HCA/driver "
     "resource limits.",
     "whether the failure appears only above some node count, and the HCA's max_qp/max_cq."},
    {"shm_too_small",
     "/dev/shm is too small or full (a container's default is 64 MB), so shared-memory segments "
     "cannot be created or grown.",
     "Give the container a bigger /dev/shm (--shm-size, an emptyDir with medium Memory) or set "
     "NCCL_SHM_DISABLE=1.",
     "`df -h /dev/shm` inside the job."},
    {"ib_port_down_or_link_flap",
     "An HCA port is down, degraded or going up and down during the job.",
     "Fix the cable, transceiver or switch port; exclude the port (NCCL_IB_HCA) on every node "
     "meanwhile.",
     "ibstat state and link_downed counters of the port, the kernel log around the failure."},
    {"retry_exceeded_network",
     "RDMA packets were lost in the fabric and the retries ran out, with no GID, MTU or port "
     "evidence to say why.",
     "Check the fabric counters (symbol/link errors, congestion, adaptive routing) along the path; "
     "NCCL_IB_TIMEOUT gives more headroom.",
     "NET/IB QP lines (GID, MTU) and show_gids on both nodes: a GID or MTU difference is the "
     "cause, else the fabric."},
    {"socket_ifname_wrong",
     "NCCL or the process group bootstraps or runs sockets over an interface the other nodes "
     "cannot reach (a container bridge, loopback, a tunnel) or finds no usable interface.",
     "Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on (e.g. =eth0, or "
     "^docker0,lo), or run the container with host networking.",
     "the NCCL_DEBUG=INFO lines 'Bootstrap : Using' and 'NET/Socket : Using' on every node."},
    {"firewall_or_port",
     "The interface is right but connections between the nodes are refused or filtered (a "
     "firewall, a security group, a port nobody listens on).",
     "Open the ports NCCL and the c10d store use between the nodes (firewall, security groups), "
     "or pin them (NCCL_SOCKET_PORT_RANGE-style settings, MASTER_PORT) to an open range.",
     "`nc -zv PEER PORT` between the nodes on the interface NCCL uses."},
    {"acs_iommu_p2p",
     "PCIe ACS or a translating IOMMU breaks peer-to-peer traffic between GPUs or between a GPU "
     "and the NIC.",
     "Disable ACS on the PCIe switches' bridges (setpci) and set the IOMMU to passthrough.",
     "lspci -vvv ACSCtl on the bridges above GPUs and NICs; the error with NCCL_NET_GDR_LEVEL=0."},
    {"gdr_peermem",
     "GPUDirect RDMA is silently off: the peer-memory module is missing or undetected, or DMA-BUF "
     "is not supported.",
     "Load nvidia-peermem (or use DMA-BUF: NCCL >= 2.19 with a kernel and driver that support "
     "it) so that NCCL uses GPUDirect RDMA.",
     "`lsmod | grep peermem`, the NCCL INFO transport lines (/GDRDMA) and the bus bandwidth."},
    {"gpu_xid_or_driver",
     "A GPU, the NVIDIA driver or the fabric manager failed (an Xid, a GPU off the bus, CUDA "
     "errors after a fabric-manager restart).",
     "Reset or reboot the node (restart nvidia-fabricmanager) and drain it if it recurs.",
     "the kernel log (NVRM: Xid) and nvidia-smi -q on the node."},
    {"duplicate_gpu",
     "Two ranks use one GPU, or a rank asks for a GPU the node lacks: the device is not selected "
     "per rank.",
     "Select the device from LOCAL_RANK (torch.cuda.set_device(local_rank)) before the process "
     "group starts.",
     "the [dev] field of each rank's NCCL INFO lines."},
    {"desync_collective_mismatch",
     "The ranks issue different collectives, in another order or with other sizes or types: a "
     "bug of the application.",
     "Make every rank call the same collectives in the same order with the same shapes.",
     "Flight Recorder dumps of all ranks (op type, sizes per sequence number)."},
    {"straggler_or_slow_rank",
     "One rank is late (evaluation, checkpointing or data loading on it alone) while the others "
     "wait for it in a collective.",
     "Move the slow work (evaluation, checkpointing, data loading) off the critical path or do "
     "it on every rank, or raise the process-group timeout where the wait is expected.",
     "Flight Recorder dumps of all ranks: the late rank has not entered the collective."},
    {"oom_or_crash_other_rank",
     "Another rank died (out of memory, a crash, a kill) and the survivors fail or hang after it.",
     "Look at the first rank that died (its own output, OOM killer lines in the kernel log) and "
     "fix that failure; the other ranks' errors follow from it.",
     "the exit code and time of death of every rank (torchrun's failure table, the kernel log)."},
    {"version_mismatch",
     "The nodes run different NCCL, torch or CUDA versions, so what they exchange does not fit.",
     "Run the same NCCL, torch and CUDA versions on every node (one image).",
     "the 'NCCL version' line of every rank."},
    {"rail_topology_cross_nic",
     "NICs on different rails cannot reach each other, but NCCL pairs them across rails.",
     "Set NCCL_CROSS_NIC=0, or fix the rail routing so that every NIC reaches every rail.",
     "whether only connections across rails fail (NET/IB QP lines of each pair)."},
    {"nccl_bug", "A defect in NCCL itself.", "Upgrade NCCL to a release whose notes fix this.",
     "the NCCL release notes for the version in use."},
};

}  // namespace

std::span<const CauseInfo> Causes() { return kCauses; }

const CauseInfo* FindCause(std::string_view name) {
  for (const CauseInfo& c : kCauses) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::size_t CauseIndex(std::string_view name) {
  const CauseInfo* c = FindCause(name);
  return c == nullptr ? std::size(kCauses) : static_cast<std::size_t>(c - kCauses);
}

}  // namespace sl
