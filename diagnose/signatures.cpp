#include "diagnose/signatures.h"

#include <cctype>
#include <cstring>
#include <functional>
#include <regex>

#include "common/parse/kmsg.h"
#include "common/strings.h"

namespace sl::diagnose {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kHang:
      return "hang";
  }
  return "info";
}

std::string_view EvidenceKindName(EvidenceKind k) {
  switch (k) {
    case EvidenceKind::kSymptom:
      return "symptom";
    case EvidenceKind::kCause:
      return "cause";
    case EvidenceKind::kFact:
      return "fact";
  }
  return "symptom";
}

namespace {

using S = Severity;

// Order matters: the first row whose prefilter, second substring and regex all match wins, so
// rows that refine a shared prefilter (IB completion status codes) come before the generic row.
// Formats covered: torch 1.13 ("[E ProcessGroupNCCL.cpp:821] [Rank 1] ..."), 2.0-2.3 (NumelIn/
// NumelOut), 2.4+ ("[rank0]:[E1130 ...]" prefix, PG GUID), 2.11 (checked against the H200 fixture).
constexpr Signature kCatalog[] = {
    // ---- PyTorch ProcessGroupNCCL watchdog ----
    {"torch.watchdog_timeout", "Watchdog caught collective operation timeout", "",
     R"(WorkNCCL\((?:SeqNum=(\d+), )?OpType=(\w+)(?:, NumelIn=(\d+), NumelOut=(\d+))?, Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds)",
     "seq,op,numel_in,numel_out,timeout_ms,ran_ms", "collective_timeout", S::kHang, 50,
     "A collective did not finish on this rank within the process-group timeout. Compare the "
     "Flight Recorder dumps of all ranks (same SeqNum entered everywhere? same OpType/sizes?): a "
     "rank that never entered it is a straggler or crashed; mismatched ops are an application "
     "desync; all ranks entered but none finished points at the network (check IB counters and "
     "NCCL WARN lines in this bundle)."},
    {"torch.watchdog_failure_seq", "failure detected by watchdog at work sequence id", "",
     R"(work sequence id: (\d+)(?: PG status: last enqueued work: (-?\d+), last completed work: (-?\d+))?)",
     "seq,last_enqueued,last_completed", "collective_timeout", S::kHang, 50,
     "The watchdog saw the collective with this sequence id fail; last enqueued vs last "
     "completed tells how far this rank got. Compare with the other ranks' values."},
    {"torch.dump_signal", "Received a dump signal", "",
     R"(from\s+(?:rank\s+(\d+)|this local rank).*?Last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+))",
     "timeout_rank,last_enqueued,last_completed", "collective_timeout", S::kHang, 45,
     "Another rank's watchdog timed out and asked every rank to dump its Flight Recorder; the "
     "rank named here is where the timeout was first seen."},
    {"torch.watchdog_stuck", "watchdog got stuck for", "", R"(got stuck for (\d+) seconds)",
     "stuck_s", "watchdog_stuck", S::kHang, 55,
     "The NCCL watchdog thread itself stopped making progress (often a CUDA call blocked by a "
     "hung kernel or driver, or the GIL). Look at the Python/native stacks in this bundle and "
     "the kernel log for Xid errors."},
    {"torch.heartbeat_timeout", "Heartbeat monitor timed out", "", "", "", "watchdog_stuck",
     S::kHang, 55,
     "The heartbeat monitor saw no watchdog progress (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) and will "
     "take the process down after dumping debug info. Check stacks and the kernel log."},
    {"torch.desync_mismatch", "Detected mismatch between collectives on ranks", "",
     R"(on ranks\. Rank (\d+) is running collective: (.*))", "rank_a,collective_a",
     "desync_collective_mismatch", S::kError, 85,
     "Ranks called different collectives (or the same one with different shapes/dtypes): an "
     "application bug in the order or arguments of collectives. Fix the code path that differs "
     "between ranks (conditional collectives, uneven data)."},
    {"torch.fr_dump", "dump debug info", "", "", "", "flight_recorder_dump", S::kInfo, 0,
     "Flight Recorder dump in progress; the dump files are collected into this bundle."},
    {"torch.fr_dump_written", "Flight Recorder", "", "", "", "flight_recorder_dump", S::kInfo, 0,
     "Flight Recorder message; dumps are collected into this bundle."},
    {"torch.taking_down", "we are taking the entire process down", "", "", "", "collective_timeout",
     S::kError, 20,
     "torch aborts the process after a failed collective (TORCH_NCCL_ASYNC_ERROR_HANDLING)."},
    {"torch.nccl_error", "NCCL error in:", "",
     R"(NCCL error in: (\S+?), (.+?)(?: \(run with|, NCCL version|$))", "location,error",
     "nccl_error", S::kError, 30,
     "NCCL returned an error; the NCCL WARN lines just before it (NCCL_DEBUG=WARN or INFO) name "
     "the cause."},
    // ---- Gloo and the c10d store ----
    {"gloo.timeout", "Timed out waiting", "ms for ",
     R"(Timed out waiting (\d+)ms for (\w+) operation)", "timeout_ms,gloo_op", "collective_timeout",
     S::kHang, 50,
     "A Gloo collective timed out waiting for a peer: a rank is missing, slow, or called a "
     "different collective. Compare the Flight Recorder dumps / stacks of all ranks."},
    {"c10d.store_clients", "waiting for clients", "",
     R"(Timed out after (\d+) seconds waiting for clients\. (\d+)/(\d+) clients joined)",
     "timeout_s,joined,expected", "store_timeout", S::kHang, 60,
     "Not every node reached the rendezvous store in time: check that all nodes started, that "
     "MASTER_ADDR/MASTER_PORT are reachable from every node, and the node that is missing."},
    {"c10d.store_barrier", "store based barrier", "Timed out",
     R"(worker_count=(\d+).*?timeout=([\d:]+))", "joined,timeout", "store_timeout", S::kHang, 60,
     "The store-based barrier timed out: some ranks never initialised the process group."},
    {"c10d.store_wait", "wait timeout after", "", R"(wait timeout after (\d+)ms)", "timeout_ms",
     "store_timeout", S::kHang, 60,
     "A c10d store get/wait timed out: a peer never published its key (crashed or stuck before "
     "init). Look for the first rank that failed."},
    {"c10d.socket_timeout", "Socket Timeout", "", "", "", "store_timeout", S::kHang, 60,
     "The c10d TCPStore connection timed out: the store host (MASTER_ADDR) is unreachable, "
     "overloaded, or gone."},
    {"c10d.store_connect", "The client socket has failed to connect to", "",
     R"(failed to connect to (?:any address of )?\[?([^\]\s]+)\]?)", "peer", "store_timeout",
     S::kError, 60,
     "The rank could not reach the c10d store: check MASTER_ADDR/MASTER_PORT, the "
     "firewall, and that the store host is up."},
    // ---- NCCL: shared memory ----
    {"nccl.shm_fallocate", "posix_fallocate failed", "", R"(failed ?: (.*)$)", "error",
     "shm_too_small", S::kError, 90,
     "/dev/shm is full or too small for NCCL's shared-memory transport (containers default to "
     "64 MiB): enlarge it (docker --shm-size=1g, Kubernetes emptyDir medium: Memory) or set "
     "NCCL_SHM_DISABLE=1."},
    {"nccl.shm_segment", "Error while creating shared memory segment", "",
     R"(segment (\S+) \(size (\d+)\))", "segment,size", "shm_too_small", S::kError, 90,
     "NCCL could not create a /dev/shm segment: enlarge /dev/shm or set NCCL_SHM_DISABLE=1."},
    {"nccl.shm_open", "shm_open", "failed", "", "", "shm_too_small", S::kError, 85,
     "NCCL could not open a /dev/shm segment: check /dev/shm is mounted, writable and large "
     "enough."},
    // ---- NCCL: InfiniBand completions (ibv_wc_status codes) ----
    {"nccl.ib_status_retry_exceeded", "Got completion", "NET/IB",
     R"(Got completion (?:from peer (\S+) )?with (?:error |status=)12\b(?:.*?vendor err (\d+))?(?:.*?hca (\S+))?)",
     "peer,vendor_err,hca", "retry_exceeded_network", S::kError, 90,
     "IB status 12 = transport retry counter exceeded: the peer stopped answering at the network "
     "level (link down/flapping, congestion, wrong RoCE GID index or routing). Check both ends' "
     "port counters in this bundle (link_downed, symbol errors), the switch, and for RoCE "
     "NCCL_IB_GID_INDEX."},
    {"nccl.ib_status_loc_prot", "Got completion", "NET/IB",
     R"(Got completion (?:from peer (\S+) )?with (?:error |status=)4\b(?:.*?vendor err (\d+))?(?:.*?hca (\S+))?)",
     "peer,vendor_err,hca", "acs_iommu_p2p", S::kError, 85,
     "IB status 4 = local protection error: the NIC could not DMA to/from the buffer, usually "
     "GPUDirect RDMA blocked by PCIe ACS or the IOMMU. Confirm with NCCL_NET_GDR_LEVEL=0; disable "
     "ACS on the PCIe switches / set iommu=pt."},
    {"nccl.ib_status_flush", "Got completion", "NET/IB",
     R"(Got completion (?:from peer (\S+) )?with (?:error |status=)5\b(?:.*?vendor err (\d+))?(?:.*?hca (\S+))?)",
     "peer,vendor_err,hca", "ib_completion_error", S::kError, 40,
     "IB status 5 = work request flushed: the queue pair had already failed; the first error "
     "(another status code, often 12) is the cause — look for it on this node and on the peer."},
    {"nccl.ib_completion", "Got completion", "NET/IB",
     R"(Got completion (?:from peer (\S+) )?with (?:error |status=)(\d+)(?:.*?vendor err (\d+))?(?:.*?hca (\S+))?)",
     "peer,status,vendor_err,hca", "ib_completion_error", S::kError, 70,
     "An IB work request completed with an error (status is enum ibv_wc_status); check port "
     "counters and the kernel log on both ends."},
    {"nccl.ib_port_error", "Got async event", "port error", "", "", "ib_port_down_or_link_flap",
     S::kError, 85,
     "The HCA reported a port error: the link went down or is flapping. Check the cable/"
     "transceiver and switch port; port counters (link_downed, link_error_recovery) are in this "
     "bundle."},
    {"nccl.ib_async_event", "Got async event", "", R"(async event ?: ?(.*)$)", "event",
     "ib_async_event", S::kWarning, 40,
     "The HCA raised an asynchronous event; see the kernel log."},
    // ---- NCCL: verbs calls ----
    {"nccl.ibv_reg_mr", "ibv_reg_mr", "fail", "", "", "memlock_or_gdr", S::kError, 80,
     "Memory registration failed: raise the locked-memory limit (ulimit -l unlimited, Slurm "
     "PropagateResourceLimits) and for GPU buffers load nvidia_peermem."},
    {"nccl.ibv_modify_qp", "ibv_modify_qp", "fail", R"(failed with (\d+) ?(.*)$)", "errno,error",
     "gid_index", S::kError, 80,
     "Moving the queue pair to RTR/RTS failed: on RoCE usually a wrong NCCL_IB_GID_INDEX or an "
     "unroutable GID; on IB a bad LID/SL. Compare GID tables (show_gids) on both nodes."},
    {"nccl.ibv_create", "ibv_create_", "fail", R"((ibv_create_\w+))", "call",
     "qp_or_resource_limit", S::kError, 80,
     "Creating a queue pair/completion queue failed: the HCA or the process ran out of resources "
     "(many ranks x channels x peers). Reduce NCCL_IB_QPS_PER_CONNECTION / NCCL_NCHANNELS, check "
     "ulimit -l and the HCA's max_qp."},
    // ---- NCCL: topology, sockets, peers ----
    {"nccl.duplicate_gpu", "Duplicate GPU detected", "",
     R"(rank (\d+) and rank (\d+) both on CUDA device (\w+))", "rank_a,rank_b,cuda_dev",
     "duplicate_gpu", S::kError, 95,
     "Two ranks use the same GPU: set the device from LOCAL_RANK "
     "(torch.cuda.set_device(local_rank)) "
     "and do not hard-code a device or CUDA_VISIBLE_DEVICES per job."},
    {"nccl.remote_exited", "remote process exited or there was a network error", "", "", "",
     "peer_exit_or_network", S::kError, 60,
     "A peer went away: look for the first rank that failed (its own log) before suspecting the "
     "network."},
    {"nccl.socket_connect", "Connect to ", "failed", R"(Connect to (\S+) failed ?: ?(.*)$)",
     "peer,error", "socket_ifname_wrong", S::kError, 75,
     "NCCL's socket connect failed: the chosen interface cannot reach the peer. Set "
     "NCCL_SOCKET_IFNAME to the interface on the cluster network (not docker0/lo) and check "
     "firewalls."},
    {"nccl.socket_create", "Socket creation failed", "", R"(failed ?: ?(.*)$)", "error",
     "socket_ifname_wrong", S::kError, 75,
     "NCCL could not create a socket on the selected interface/address family: check "
     "NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY (containers: --net host)."},
    {"nccl.no_interface", "No usable listening interface", "", "", "", "socket_ifname_wrong",
     S::kError, 75, "NCCL found no usable interface: set NCCL_SOCKET_IFNAME."},
    {"nccl.no_socket_interface", "no socket interface found", "", "", "", "socket_ifname_wrong",
     S::kError, 75, "NCCL's bootstrap found no interface: set NCCL_SOCKET_IFNAME."},
    {"nccl.loopback_interface", "Using interface lo:", "NET", "", "", "socket_ifname_wrong",
     S::kWarning, 35,
     "NCCL selected the loopback interface; across nodes this cannot work. Set "
     "NCCL_SOCKET_IFNAME=^docker0,lo or the cluster interface."},
    // ---- CUDA and the GPU driver ----
    {"nccl.nvls_cuda_failure", "Cuda failure", "nvls", R"(Cuda failure '([^']*)')", "error",
     "gpu_xid_or_driver", S::kError, 80,
     "NVLink SHARP setup failed in CUDA: the fabric manager or driver state is bad (e.g. "
     "nv-fabricmanager restarted under running jobs). Reset the GPUs or reboot the node; "
     "NCCL_NVLS_ENABLE=0 works around it."},
    {"nccl.cuda_failure", "Cuda failure", "", R"(Cuda failure '?([^']*)'?)", "error", "cuda_error",
     S::kError, 65, "A CUDA call inside NCCL failed; check the kernel log for Xid errors."},
    {"kernel.xid", "NVRM: Xid", "", R"(Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+))", "pci,xid",
     "gpu_xid_or_driver", S::kError, 90,
     "The GPU driver reported an Xid error (xid_meaning says which, xid_fatal whether it is "
     "hardware-related: the Xid table in common/parse/kmsg.h). Drain the node if xid_fatal is "
     "yes."},
    {"torch.cuda_oom", "CUDA out of memory", "", "", "", "cuda_oom", S::kError, 65,
     "A rank ran out of GPU memory; reduce batch size or check for another process on the GPU."},
    {"torch.cuda_error", "CUDA error: ", "", R"(CUDA error: (.*)$)", "error", "cuda_error",
     S::kError, 65,
     "A CUDA error in the job; rerun with CUDA_LAUNCH_BLOCKING=1 to locate it and check the "
     "kernel log for Xid errors."},
    // ---- kernel log: fabric ----
    {"kernel.link_down", "Link down", "", "", "", "ib_port_down_or_link_flap", S::kError, 85,
     "A network link went down during the job: check cable/transceiver and the switch port."},
    // "mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid 233522): CREATE_MKEY(0x200) op_mod(0x0)
    // failed, status limits exceeded(0x8), syndrome (0x18af6), err(-12)" (corpus dmesg).
    {"kernel.mlx5_error", "mlx5_core", "err", "", "", "ib_port_down_or_link_flap", S::kWarning, 45,
     "The mlx5 driver logged an error; see the kernel log in this bundle."},
    // ---- torchrun / torch.distributed.elastic ----
    {"torchrun.child_failed", "ChildFailedError", "", "", "", "rank_process_failed", S::kError, 20,
     "A worker process failed; its rank, host and exit code follow in torchrun's table. Its own "
     "output (rank outputs in this bundle) shows why."},
    {"torchrun.failed_exitcode", "failed (exitcode: ", "local_rank",
     R"(failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\))", "exitcode,local_rank,pid",
     "rank_process_failed", S::kError, 20,
     "torchrun saw a worker fail (negative exitcode = killed by that signal, -6 = SIGABRT from "
     "torch's watchdog, -9 = SIGKILL, often the OOM killer)."},
    {"torchrun.table_rank", "rank      : ", "local_rank", R"(rank\s+: (\d+) \(local_rank: (\d+)\))",
     "rank,local_rank", "rank_process_failed", S::kInfo, 0, ""},
    {"torchrun.table_host", "host      : ", "", R"(host\s+: (\S+))", "host", "rank_process_failed",
     S::kInfo, 0, ""},
    {"torchrun.table_exitcode", "exitcode  : ", "", R"(exitcode\s+: (-?\d+) \(pid: (\d+)\))",
     "exitcode,pid", "rank_process_failed", S::kInfo, 0, ""},
    // ---- NCCL collective trace (NCCL_DEBUG_SUBSYS=COLL): input of the desync check ----
    {"nccl.coll_trace", "opCount", "NCCL INFO",
     R"((\w+): opCount (\w+) .*?count (\d+) datatype (\d+) op (\d+) root (-?\d+)(?:.*?\[nranks=(\d+)\])?)",
     "coll,opcount,count,datatype,redop,root,nranks", "collective_trace", S::kInfo, 0, ""},
    // ---- facts and causes the diagnose engine's rules combine (engine.cpp kRules) ----
    {"nccl.version_mismatch_init", "Mismatched NCCL version detected", "",
     R"(rank (\d+) version (\d+) rank (\d+) version (\d+))", "rank_a,version_a,rank_b,version_b",
     "version_mismatch", S::kError, 90, "The ranks run different NCCL versions.",
     EvidenceKind::kCause, "nccl src/init.cc 2.27-2.28"},
    {"nccl.ras_version_mismatch", "NCCL version mismatch with remote peer", "",
     R"(remote peer (\S+) \(local: (\d+), remote (\d+)\))", "peer,version_local,version_remote",
     "version_mismatch", S::kError, 90, "A peer runs another NCCL version.", EvidenceKind::kCause,
     "nccl src/ras/ras.cc 2.24-2.28"},
    {"nccl.socket_family", "is neither AF_INET", "", R"(address ?(\S*) with family (\d+))",
     "addr,family", "socket_error", S::kError, 50,
     "A peer's socket address arrived garbled (family neither IPv4 nor IPv6).",
     EvidenceKind::kSymptom, "nccl src/misc/socket.cc 2.12-2.28"},
    {"nccl.socket_connect_retry", "exceeded error retry count", "connect to",
     R"(connect to (\S+) returned (.+?), exceeded error retry count)", "peer,error", "socket_error",
     S::kError, 50, "Connecting to a peer failed until NCCL gave up.", EvidenceKind::kSymptom,
     "nccl src/misc/socket.cc 2.19-2.28"},
    {"nccl.socket_poll_connect", "socketPollConnect to", "failed",
     R"(socketPollConnect to (\S+) failed with error (.*)$)", "peer,error", "socket_error",
     S::kError, 50, "Connecting to a peer failed.", EvidenceKind::kSymptom,
     "nccl src/misc/socket.cc 2.19-2.28"},
    {"nccl.gdr_no_module", "GPU Direct RDMA Disabled for HCA", "", R"(HCA (\d+) '([^']+)')",
     "netdev,hca", "gdr_peermem", S::kWarning, 70,
     "NCCL found no peer-memory module for the HCA: GPUDirect RDMA is off.", EvidenceKind::kCause,
     "nccl src/transport/net_ib.cc 2.10-2.18"},
    {"nccl.version", "NCCL version ", "", R"(NCCL version (\d+\.\d+\.\d+))", "version",
     "nccl_version", S::kInfo, 0, "", EvidenceKind::kFact,
     "nccl src/init.cc VERSION_STRING 2.10-2.28"},
    {"nccl.bootstrap_iface", "Bootstrap", "Using",
     R"(Bootstrap ?: ?Using ?(?:\[\d+\])?([^\s:\[<]+):([^\s<]+))", "ifname,addr",
     "bootstrap_interface", S::kInfo, 0, "", EvidenceKind::kFact,
     "nccl src/bootstrap.cc 2.10-2.28"},
    {"nccl.net_socket_iface", "NET/Socket : Using", "", R"(Using ?\[\d+\]([^\s:\[<]+):([^\s<]+))",
     "ifname,addr", "socket_interface", S::kInfo, 0, "", EvidenceKind::kFact,
     "nccl src/transport/net_socket.cc 2.10-2.28"},
    {"nccl.net_ib_using", "NET/IB : Using", "",
     R"(Using ?(?:\[RO\])? ?\[\d+\]([\w.-]+):(\d+)/(\w+))", "hca,port,link", "ib_devices", S::kInfo,
     0, "", EvidenceKind::kFact, "nccl src/transport/net_ib.cc 2.10-2.28"},
    {"nccl.transport_net", "via NET/", "Channel",
     R"((\d+)\[\w+\] -> (\d+)\[\w+\] \[(send|receive)\] via NET/(\w+)/(\d+)(?:\(\d+\))?(/GDRDMA)?)",
     "from_rank,to_rank,dir,net,netdev,gdr", "net_transport", S::kInfo, 0, "", EvidenceKind::kFact,
     "nccl src/transport/net.cc 2.10-2.28"},
    {"nccl.ib_qp_info", "NET/IB: ", " GID ",
     R"(Port (\d+) qpn (\d+) mtu (\d+).*? GID (-?\d+) \((\w+)/(\w+)\))",
     "port,qpn,mtu,gid_index,gid_spn,gid_iid", "ib_qp", S::kInfo, 0, "", EvidenceKind::kFact,
     "nccl src/transport/net_ib.cc 2.12-2.28"},
    {"kernel.oom_kill", "Out of memory: Killed process", "", R"(Killed process (\d+) \(([^)]*)\))",
     "pid,process", "oom_or_crash_other_rank", S::kError, 80,
     "The kernel's OOM killer ended a process of the job.", EvidenceKind::kCause,
     "linux mm/oom_kill.c"},
    // ---- catch-all: every NCCL WARN is evidence even when not recognised ----
    {"nccl.warn", "NCCL WARN", "", "", "", "nccl_warning", S::kWarning, 10,
     "An NCCL warning not in the catalog; read it together with the lines around it."},
    {"nccl.warn_short", " WARN ", ".c", "", "", "nccl_warning", S::kWarning, 10,
     "An NCCL warning not in the catalog."},
};

}  // namespace

std::span<const Signature> Catalog() { return kCatalog; }

std::string Match::Field(std::string_view name) const {
  auto it = fields.find(std::string(name));
  return it == fields.end() ? std::string() : it->second;
}

struct LineMatcher::Compiled {
  // Horspool skips ahead by up to the prefilter's length on a mismatch, so a healthy line costs a
  // few dozen byte comparisons per row instead of a memcmp at every occurrence of the first byte.
  std::optional<std::boyer_moore_horspool_searcher<std::string_view::const_iterator>> pre;
  std::optional<std::regex> re;
  std::vector<std::string> names;
};

namespace {
// Wu-Manber over anchors of kAnchor bytes with 2-byte blocks: a block found in no anchor moves the
// scan kAnchor - 1 bytes; only where a block ends an anchor is the exact window looked up.
constexpr std::size_t kAnchor = LineMatcher::kAnchor;
constexpr std::uint8_t kNoAnchorShift = kAnchor - 1;
inline std::uint16_t Block(const char* p) {
  std::uint16_t b;
  std::memcpy(&b, p, 2);  // native byte order, the same when the table is built
  return b;
}
inline std::uint64_t Window(const char* p) {
  std::uint64_t w = 0;
  std::memcpy(&w, p, kAnchor);
  return w;
}
// The 3-byte block whose last byte is p[0], hashed to 16 bits: the second-level shift table.
inline std::uint16_t Block3(const char* p) {
  const std::uint32_t b = std::uint32_t(std::uint8_t(p[-2])) |
                          (std::uint32_t(std::uint8_t(p[-1])) << 8) |
                          (std::uint32_t(std::uint8_t(p[0])) << 16);
  return static_cast<std::uint16_t>((b * 0x9E3779B1u) >> 16);
}
// 16-bit hash of a window for the anchor bitmap (multiplicative, top bits).
inline std::uint32_t WindowHash(std::uint64_t w) {
  return static_cast<std::uint32_t>((w * 0x9E3779B97F4A7C15ull) >> 48);
}

}  // namespace

std::bitset<LineMatcher::kMaxRows> LineMatcher::Candidates(std::string_view line) const {
  if (line.size() < kAnchor) return short_rows_;
  std::bitset<kMaxRows> rows = short_rows_;
  const char* d = line.data();
  for (std::size_t pos = kAnchor - 1; pos < line.size();) {
    std::uint8_t s = shift_[Block(d + pos - 1)];
    if (s != 0) {
      pos += s;
      continue;
    }
    if (auto it = rows_by_window_.find(Window(d + pos + 1 - kAnchor));
        it != rows_by_window_.end()) {
      rows |= it->second;
    }
    ++pos;
  }
  return rows;
}

namespace {

constexpr int kLanes = 4;

/// Lane k scans [pos[k] - kAnchor + 1, end[k]): the block cut at line ends into kLanes ranges of
/// about equal size. A lane's position is the last byte of the window under test.
struct Lanes {
  std::size_t pos[kLanes], end[kLanes];
};
Lanes CutLanes(const char* d, std::size_t n) {
  Lanes l;
  std::size_t cut = 0;
  for (int k = 0; k < kLanes; ++k) {
    std::size_t stop = n;
    if (k + 1 < kLanes) {
      stop = std::max(cut, n * (k + 1) / kLanes);
      const void* nl = stop < n ? std::memchr(d + stop, '\n', n - stop) : nullptr;
      stop = nl ? static_cast<const char*>(nl) - d + 1 : n;
    }
    l.pos[k] = cut + LineMatcher::kAnchor - 1;
    l.end[k] = stop;
    cut = stop;
  }
  return l;
}

/// Hands every hit line to `on_candidate` in block order, with its 0-based line index.
void HandOver(std::string_view block, const std::vector<std::size_t> (&hits)[kLanes],
              const std::function<void(std::string_view line, std::size_t index)>& on_candidate) {
  const char* d = block.data();
  const std::size_t n = block.size();
  std::size_t counted = 0;  // newlines before `counted` are already in `index`
  std::size_t index = 0;
  for (const auto& lane_hits : hits) {
    for (std::size_t start : lane_hits) {
      const void* next = std::memchr(d + start, '\n', n - start);
      const std::size_t end = next ? static_cast<const char*>(next) - d : n;
      index += CountByte(block.substr(counted, start - counted), '\n');
      counted = start;
      on_candidate(block.substr(start, end - start), index);
    }
  }
}

}  // namespace

std::size_t LineMatcher::ScanBlock(
    std::string_view block,
    const std::function<void(std::string_view line, std::size_t index)>& on_candidate) const {
  const std::size_t lines =
      CountByte(block, '\n') + (!block.empty() && block.back() != '\n' ? 1 : 0);
  if (short_rows_.any()) {  // a row without an anchor: every line must be tried
    std::size_t index = 0;
    ForEachLine(block, [&](std::string_view line) { on_candidate(line, index++); });
    return lines;
  }
  // The skip scan runs across line ends (an anchor never holds '\n', so a window that hits lies
  // inside one line). Its steps form a dependency chain (load, table, add) that leaves the core
  // mostly idle, so the block is cut at line ends into kLanes ranges scanned in lock step: the
  // chains overlap. A hit records the line's start and resumes after the line (MatchLine looks
  // at every row of that line itself).
  const char* d = block.data();
  const std::size_t n = block.size();
  const std::uint8_t* shift = shift_.data();
  // A shift never jumps over the end of an anchor occurrence, because every block inside an
  // anchor has a shift no larger than its distance to the anchor's end.
  const Lanes lanes = CutLanes(d, n);
  std::vector<std::size_t> hits[kLanes];  // line starts, ascending per lane
  // The rare path, out of line so that the lanes' positions stay in registers: a zero shift.
  // Returns where the lane goes on.
  auto zero_shift = [&](std::size_t pos, std::vector<std::size_t> & lane_hits)
                        __attribute__((noinline))
                            ->std::size_t {
    // Text is full of 2-byte pieces that end anchors ("er", "e ", ": "); their 3-byte blocks
    // mostly end none, and then the scan can still move up to kAnchor - 2 bytes.
    if (const std::uint8_t s3 = shift3_[Block3(d + pos)]; s3 != 0) return pos + s3;
    const std::size_t at = pos + 1 - kAnchor;
    const std::uint64_t w = Window(d + at);
    const std::uint32_t h = WindowHash(w);
    if (!((anchor_bits_[h >> 6] >> (h & 63)) & 1) ||
        rows_by_window_.find(w) == rows_by_window_.end()) {
      return pos + 1;
    }
    const void* prev = ::memrchr(d, '\n', at);
    lane_hits.push_back(prev ? static_cast<const char*>(prev) - d + 1 : 0);
    const void* next = std::memchr(d + pos, '\n', n - pos);
    return (next ? static_cast<const char*>(next) - d : n) + kAnchor;
  };
  std::size_t p0 = lanes.pos[0], p1 = lanes.pos[1], p2 = lanes.pos[2], p3 = lanes.pos[3];
  const std::size_t e0 = lanes.end[0], e1 = lanes.end[1], e2 = lanes.end[2], e3 = lanes.end[3];
#define SL_STEP(p, k)                                  \
  do {                                                 \
    const std::uint8_t s = shift[Block(d + (p)-1)];    \
    (p) = s != 0 ? (p) + s : zero_shift((p), hits[k]); \
  } while (0)
  while (p0 < e0 && p1 < e1 && p2 < e2 && p3 < e3) {
    SL_STEP(p0, 0);
    SL_STEP(p1, 1);
    SL_STEP(p2, 2);
    SL_STEP(p3, 3);
  }
  while (p0 < e0) SL_STEP(p0, 0);
  while (p1 < e1) SL_STEP(p1, 1);
  while (p2 < e2) SL_STEP(p2, 2);
  while (p3 < e3) SL_STEP(p3, 3);
#undef SL_STEP
  HandOver(block, hits, on_candidate);
  return lines;
}

LineMatcher::LineMatcher() {
  static_assert(std::size(kCatalog) <= kMaxRows, "raise LineMatcher::kMaxRows");
  shift_.assign(1u << 16, kNoAnchorShift);
  shift3_.assign(1u << 16, kAnchor - 2);
  for (std::size_t i = 0; i < std::size(kCatalog); ++i) {
    const Signature& sig = kCatalog[i];
    // Every prefilter is at least kAnchor bytes (checked by a unit test); the anchor is its start.
    if (sig.prefilter.size() >= kAnchor) {
      const std::uint64_t w = Window(sig.prefilter.data());
      rows_by_window_[w].set(i);
      anchor_bits_[WindowHash(w) >> 6] |= std::uint64_t{1} << (WindowHash(w) & 63);
      // The block ending at anchor byte j (1..kAnchor-1) may end an anchor kAnchor-1-j bytes later.
      for (std::size_t j = 1; j < kAnchor; ++j) {
        auto& s = shift_[Block(sig.prefilter.data() + j - 1)];
        s = std::min<std::uint8_t>(s, static_cast<std::uint8_t>(kAnchor - 1 - j));
      }
      for (std::size_t j = 2; j < kAnchor; ++j) {  // hash collisions only shorten shifts
        auto& s = shift3_[Block3(sig.prefilter.data() + j)];
        s = std::min<std::uint8_t>(s, static_cast<std::uint8_t>(kAnchor - 1 - j));
      }
    } else {
      short_rows_.set(i);
    }
  }
  for (const Signature& sig : kCatalog) {
    auto* c = new Compiled;
    if (sig.prefilter.size() >= 4) c->pre.emplace(sig.prefilter.begin(), sig.prefilter.end());
    if (!sig.pattern.empty()) {
      c->re.emplace(std::string(sig.pattern), std::regex::ECMAScript | std::regex::optimize);
    }
    c->names = Split(sig.fields, ',');
    compiled_.push_back(c);
  }
}

LineMatcher::~LineMatcher() {
  for (Compiled* c : compiled_) delete c;
}

namespace {

std::string_view DigitsAt(std::string_view s, std::size_t pos) {
  std::size_t end = pos;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  return s.substr(pos, end - pos);
}

// An extracted "xid" is explained from the one Xid table (shared with the kernel.log check).
void AddXidFields(std::map<std::string, std::string>* fields) {
  auto it = fields->find("xid");
  if (it == fields->end()) return;
  auto xid = ParseInt(it->second);
  if (!xid.ok() || *xid < 0 || *xid > 100000) return;
  const XidInfo* info = FindXid(static_cast<int>(*xid));
  (*fields)["xid_fatal"] = info != nullptr && info->fatal ? "yes" : "no";
  if (info != nullptr) (*fields)["xid_meaning"] = std::string(info->meaning);
}

}  // namespace

void ExtractCommonFields(std::string_view line, std::map<std::string, std::string>* fields) {
  auto put = [fields](const char* k, std::string_view v) {
    if (!v.empty() && !fields->count(k)) (*fields)[k] = std::string(v);
  };
  // torch >= 2.4 prefixes every log line of a rank with "[rankN]:".
  if (auto p = line.find("[rank"); p != std::string_view::npos) put("rank", DigitsAt(line, p + 5));
  if (auto p = line.find("[Rank "); p != std::string_view::npos) put("rank", DigitsAt(line, p + 6));
  if (auto p = line.find("PG ID "); p != std::string_view::npos) put("pg", DigitsAt(line, p + 6));
  // NCCL's "host:pid:tid [cudadev] " prefix (may itself follow "file.txt:" from grep).
  if (auto w = line.find(" WARN ");
      w != std::string_view::npos || line.find(" INFO ") != std::string_view::npos) {
    std::string_view head = line.substr(0, line.find(' '));
    auto parts = Split(head, ':', false);
    if (parts.size() >= 3) {
      std::size_t n = parts.size();
      bool digits = !parts[n - 1].empty() && !parts[n - 2].empty() &&
                    DigitsAt(parts[n - 1], 0).size() == parts[n - 1].size() &&
                    DigitsAt(parts[n - 2], 0).size() == parts[n - 2].size();
      if (digits && !parts[n - 3].empty() && parts[n - 3] != "...") {
        put("host", parts[n - 3]);
        put("pid", parts[n - 2]);
      }
    }
  }
}

std::optional<Match> LineMatcher::MatchLine(std::string_view line) const {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto rows = Candidates(line);
  if (rows.none()) return std::nullopt;
  for (std::size_t i = 0; i < std::size(kCatalog); ++i) {
    if (!rows.test(i)) continue;
    const Signature& sig = kCatalog[i];
    const Compiled& c = *compiled_[i];
    if (c.pre) {
      if (std::search(line.begin(), line.end(), *c.pre) == line.end()) continue;
    } else if (line.find(sig.prefilter) == std::string_view::npos) {
      continue;
    }
    if (!sig.also.empty() && line.find(sig.also) == std::string_view::npos) continue;
    Match m;
    if (c.re) {
      std::match_results<std::string_view::const_iterator> mr;
      if (!std::regex_search(line.begin(), line.end(), mr, *c.re)) continue;
      for (std::size_t g = 0; g < c.names.size() && g + 1 < mr.size(); ++g) {
        if (mr[g + 1].matched && mr[g + 1].length() > 0) m.fields[c.names[g]] = mr[g + 1].str();
      }
    }
    m.signature = &sig;
    m.line = std::string(line);
    ExtractCommonFields(line, &m.fields);
    AddXidFields(&m.fields);
    return m;
  }
  return std::nullopt;
}

}  // namespace sl::diagnose
