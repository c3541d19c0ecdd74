#pragma once
// What a node is, as facts read from sysfs/procfs: the shared input of preflight checks, recipe
// resolution (recipes/) and the cross-node comparison (warm-up). Gathering reads through a
// FileReader, so a --sysroot fixture tree yields the same facts as the machine it was built from.
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/fact.h"
#include "common/file_reader.h"
#include "common/gpu_holders.h"
#include "common/parse/ib_sysfs.h"
#include "common/parse/kmsg.h"
#include "common/parse/limits.h"
#include "common/parse/pci_config.h"
#include "common/result.h"

namespace sl {

/// One row of a port's GID table (what show_gids prints).
struct GidEntry {
  int index = 0;
  std::string gid;   ///< "0000:0000:0000:0000:0000:ffff:0b00:0048" as in sysfs
  std::string type;  ///< gid_attrs/types/I: "IB/RoCE v1" or "RoCE v2" ("" when unreadable)
  std::string ndev;  ///< gid_attrs/ndevs/I, "" for InfiniBand
  std::string ipv4;  ///< dotted IPv4 for IPv4-mapped GIDs, else ""
  bool IsZero() const;
  bool IsLinkLocal() const;  ///< fe80::/64
  bool IsRoceV2() const { return type == "RoCE v2"; }
  /// 1 for "IB/RoCE v1" / "RoCE v1", 2 for "RoCE v2", 0 when unknown (NCCL's prefix rule).
  int RoceVersion() const;
  /// show_gids VER column: "v1", "v2" or "" when unknown.
  std::string VersionShort() const;
};

/// A file of an IB device/port that could not be read or parsed while gathering, as the published
/// JSON's "ib_problems" lists it. Not stored: IbProblems() derives the rows from the facts' errors
/// (ib_class, IbDeviceFacts, IbPortFacts), and a peer's rows are attached back to its facts when
/// its JSON is read. The checks turn them into `error` findings (never a guess, never a pass).
struct IbProblem {
  std::string device;     ///< "mlx5_0"
  int port = 0;           ///< 0 for device-level files
  std::string attribute;  ///< "state", "rate", "link_layer", "gids/3", "netdev_mtu", "ports"...
  std::string path;       ///< node path, e.g. /sys/class/infiniband/mlx5_0/ports/1/state
  std::string message;    ///< reason, with the host path (root prefix included)
};

/// The sysfs files of one port as gathered, each with its evidence (fact.h): the node path, the
/// text as read and, when it could not be read or parsed, why. Checks quote `path` and turn an
/// `error` into "cannot check"; the plain IbPort fields are the values taken from these. Not
/// published: a peer's ports carry the values only (node_facts_json.cpp).
struct IbPortFacts {
  Fact<SysfsCodeName> state;       ///< .../ports/N/state, "4: ACTIVE"
  Fact<SysfsCodeName> phys_state;  ///< .../ports/N/phys_state, "5: LinkUp"
  Fact<double> rate;               ///< .../ports/N/rate in Gb/s; raw "400 Gb/sec (4X NDR)"
  Fact<std::string> link_layer;    ///< .../ports/N/link_layer
  /// ls .../ports/N/gids (numeric entries, ascending). Only RoCE needs the table for a decision.
  Fact<std::vector<int>> gid_indices;
  /// .../gids/I as read (trimmed text), by I; InfiniBand: index 0 only.
  std::map<int, Fact<std::string>> gids;
  /// .../gid_attrs/types/I and .../gid_attrs/ndevs/I of the entries in use (not all-zero). A
  /// failed read leaves the GidEntry's type/ndev empty: NCCL then treats the version as unknown.
  std::map<int, Fact<std::string>> gid_types, gid_ndevs;
  Fact<int> netdev_mtu;  ///< /sys/class/net/<netdev>/mtu; "not gathered" without a netdev
};

/// The files of one /sys/class/infiniband device, each with its evidence (fact.h).
struct IbDeviceFacts {
  std::string name;  ///< "mlx5_0"
  /// .../fw_ver, .../hca_type, .../board_id, trimmed. Descriptive only and absent on some
  /// providers (rxe has no board_id): a failed read is never a gather problem. IbPort carries
  /// the values ("" when unread).
  Fact<std::string> fw_ver, hca_type, board_id;
  /// ls .../ports (numeric entries, ascending); an error makes the device "device_unreadable".
  Fact<std::vector<int>> ports;
};

/// One port of one /sys/class/infiniband device.
struct IbPort {
  std::string device;          ///< "mlx5_0"
  int port = 1;                ///< 1-based
  std::string state;           ///< "ACTIVE", "DOWN", "INIT", "ARMED" (text after "N: ")
  std::string phys_state;      ///< "LinkUp", "Disabled", "Polling"
  std::string rate_text;       ///< "400 Gb/sec (4X NDR)"
  double rate_gbps = 0;        ///< 400
  std::string link_layer;      ///< "InfiniBand" or "Ethernet" (RoCE)
  std::string netdev;          ///< RoCE: the netdev behind the port ("ens3np0"), else ""
  int netdev_mtu = 0;          ///< /sys/class/net/<netdev>/mtu, 0 when unknown
  int active_mtu = 0;          ///< IB MTU in bytes from libibverbs, 0 when not checkable
  std::vector<GidEntry> gids;  ///< non-empty entries only (RoCE: all; InfiniBand: index 0)
  // The raw codes and table size ib.port.state and ib.gid cite, and the device identity the
  // published facts carry (node_facts_json.cpp):
  int state_code = 0;       ///< the number in "4: ACTIVE"
  int phys_state_code = 0;  ///< the number in "5: LinkUp"
  int gid_table_len = 0;    ///< number of gids/I entries (empty ones included)
  std::string fw_ver;       ///< IbDeviceFacts::fw_ver, "28.39.1002"
  std::string hca_type;     ///< IbDeviceFacts::hca_type, "MT4129"
  std::string board_id;     ///< IbDeviceFacts::board_id
  IbPortFacts sysfs;        ///< the files the values above came from, with their evidence
  std::string Name() const { return device + ":" + std::to_string(port); }
  bool IsRoce() const { return link_layer == "Ethernet"; }
  bool IsUp() const { return state == "ACTIVE" && phys_state == "LinkUp"; }
};

struct GpuInfo {
  std::string pci_address;  ///< "0000:18:00.0"
  std::string device_id;    ///< "0x2335"
  std::string model;        ///< "NVIDIA H200" when /proc/driver/nvidia/gpus/*/information says
};

/// The sysfs files of one network interface as gathered, each with its evidence (fact.h): the
/// node path, the text as read and, when it could not be read or parsed, why. net.ifname quotes
/// the paths; the plain NetInterface fields are the values taken from these. Not published.
struct NetInterfaceFacts {
  Fact<std::string> operstate;  ///< /sys/class/net/<if>/operstate, trimmed
  Fact<int> mtu;                ///< /sys/class/net/<if>/mtu
  /// /sys/class/net/<if>/flags and .../ifindex: a failed read or parse leaves the value 0 and is
  /// no gather problem (older kernels, containers).
  Fact<std::uint32_t> flags;
  Fact<int> ifindex;
};

struct NetInterface {
  std::string name;
  std::string operstate;  ///< "up", "down", "unknown"
  int mtu = 0;
  std::vector<std::string> addresses;  ///< IPv4/IPv6 without prefix length
  int ifindex = 0;                     ///< /sys/class/net/<if>/ifindex (getifaddrs order)
  std::uint32_t flags = 0;             ///< /sys/class/net/<if>/flags: IFF_UP = 0x1, ...
  NetInterfaceFacts sysfs;             ///< the files the values above came from
};

/// Where the interface list came from, with evidence: the listing, the entries that are no
/// interface one can read, and (under a sysroot) the procfs files the IPv4 addresses come from.
struct NetFacts {
  Fact<std::vector<std::string>> class_net;  ///< ls /sys/class/net, in listing order
  /// Entries of /sys/class/net that lead nowhere (a dangling or refused link), by name: an
  /// interface that could not be read, not one that is absent. Never in NodeFacts::interfaces.
  std::map<std::string, Fact<std::string>> unreadable_entries;
  /// Sysroot only: /proc/net/fib_trie and /proc/net/route (absent when not in the tree; route
  /// malformed when it does not parse). "not gathered" on a live node (getifaddrs).
  Fact<std::string> fib_trie, route;
};

/// /dev/shm size and how it was worked out, for evidence.
struct ShmSize {
  std::uint64_t bytes = 0;
  std::string source;  ///< node path the value came from ("/proc/mounts", "statvfs(/dev/shm)")
  std::string raw;     ///< the mount line or the statvfs figure
  std::string how;     ///< "size=65536k", "tmpfs default: half of MemTotal 2113591344 kB", ...
};

/// One sysctl value as read ("net.core.rmem_max" -> [212992]).
struct SysctlFact {
  std::string name;                         ///< "net.core.rmem_max"
  Fact<std::vector<std::uint64_t>> values;  ///< path /proc/sys/...; raw = the value text
};

/// One PCI function of /sys/bus/pci/devices, as pci.acs needs it.
struct PciFunctionFact {
  std::string bdf;                ///< "0000:0b:01.0"
  Fact<std::uint64_t> pci_class;  ///< .../class, 0x060400 for a PCI-to-PCI bridge
  Fact<ConfigAcsResult> acs;      ///< bridges only: ACS from .../config (raw = "N bytes")
  bool IsBridge() const { return pci_class.ok() && (*pci_class >> 8) == 0x0604; }
};

/// What the os.*, gpu.*, pci.acs and kernel.log checks decide on, each with its evidence (the
/// node path and raw text), read once by GatherNodeFacts.
struct HostEvidence {
  Fact<ProcLimit> memlock, nofile;  ///< rows of /proc/self/limits
  Fact<ShmSize> shm;
  std::vector<SysctlFact> sysctls;         ///< in the order of kGatheredSysctls (os_facts.cpp)
  Fact<std::vector<std::string>> modules;  ///< the lines of /proc/modules
  /// The GPUDirect RDMA module /proc/modules lists: "nvidia_peermem" or "nv_peer_mem", "" when
  /// neither; raw = its line. Unread (with modules' error) when /proc/modules could not be read.
  Fact<std::string> peermem;
  Fact<std::vector<std::string>> nvidia_gpu_dirs;  ///< ls /proc/driver/nvidia/gpus
  bool nvidia_version_present = false;             ///< /proc/driver/nvidia/version exists
  Fact<std::string> nvidia_version_line;           ///< its first line, trimmed
  Fact<KmsgParse> kmsg;                    ///< /dev/kmsg records; raw = the first bad line, if any
  std::uint64_t kmsg_bytes = 0;            ///< bytes of /dev/kmsg read (whole records)
  bool kmsg_truncated = false;             ///< the log held more than GatherOptions::kmsg_max_bytes
  Fact<std::string> dmesg_restrict;        ///< /proc/sys/kernel/dmesg_restrict
  Fact<std::vector<PciFunctionFact>> pci;  ///< ls /sys/bus/pci/devices
  std::vector<std::string> iommu_units;    ///< ls /sys/class/iommu (empty when unreadable)
  /// Why /sys/class/iommu could not be listed although it is there (EACCES, EIO, a link that
  /// leads nowhere): "" when it was read or is absent (no IOMMU driver loaded).
  std::string iommu_unreadable;
  Fact<std::string> cmdline;  ///< /proc/cmdline, trimmed
  /// Processes holding /dev/nvidia* (ls /proc, /proc/*/fd): gathered for the epilog only
  /// (GatherOptions::gpu_holders), "not gathered" otherwise.
  Fact<std::vector<GpuHolder>> gpu_holders;
};

struct NodeFacts {
  std::string hostname;
  std::string root;  ///< host path prefix of the tree the facts were read from ("" = live node)
  /// ls /sys/class/infiniband: absent on a socket-only node; an error means the fabric is unread.
  Fact<std::vector<std::string>> ib_class;
  std::vector<IbDeviceFacts> ib_devices;  ///< in listing order, with or without readable ports
  std::vector<IbPort> ib_ports;
  std::vector<GpuInfo> gpus;
  std::string nvidia_driver;             ///< "580.159.04", "" without the NVIDIA driver
  bool nvidia_open_kernel = false;       ///< /proc/driver/nvidia/version says "Open Kernel Module"
  std::vector<NetInterface> interfaces;  ///< by ifindex, as getifaddrs (and NCCL) lists them
  NetFacts net;                          ///< where `interfaces` came from
  std::vector<Error> problems;  ///< files that could not be read while gathering (never fatal)
  HostEvidence host;            ///< the host checks' facts with their evidence
  /// IB port counters: directory node path (".../ports/1/counters", ".../hw_counters") -> file
  /// name -> value. A directory that could not be listed (rxe, older kernels) is absent.
  std::map<std::string, std::map<std::string, Fact<std::uint64_t>>> ib_counters;

  // Values of the host facts (HostEvidence holds each once, with its evidence), as the plan,
  // the warm-up comparisons and the published JSON use them: 0 / nullopt / "" when unread.
  /// Max locked memory, bytes (kUnlimited for unlimited).
  std::uint64_t MemlockSoft() const { return host.memlock.ok() ? host.memlock->soft : 0; }
  std::uint64_t MemlockHard() const { return host.memlock.ok() ? host.memlock->hard : 0; }
  /// Max open files.
  std::uint64_t NofileSoft() const { return host.nofile.ok() ? host.nofile->soft : 0; }
  std::uint64_t NofileHard() const { return host.nofile.ok() ? host.nofile->hard : 0; }
  /// Size of the /dev/shm mount.
  std::optional<std::uint64_t> ShmBytes() const {
    return host.shm.ok() ? std::optional<std::uint64_t>(host.shm->bytes) : std::nullopt;
  }
  /// nvidia_peermem or nv_peer_mem is loaded; PeermemModule says which ("" when none).
  bool PeermemLoaded() const { return host.peermem.ok() && !host.peermem->empty(); }
  std::string PeermemModule() const { return host.peermem.ok() ? *host.peermem : std::string(); }

  /// Where a node path was read on this machine (root prefix + path), as errors name it.
  std::string HostPath(std::string_view node_path) const { return root + std::string(node_path); }
  bool IsSysroot() const { return !root.empty(); }
};

/// True when nothing at all is at `path`: no entry, no link, and the nearest existing ancestor
/// is a directory. A source that is absent may mean "no such hardware"; anything else that cannot
/// be read (a dangling link, a file where a directory should be, a directory where a file should
/// be, a FIFO) is unreadable and must become an error, never "empty".
bool PathAbsent(const FileReader& fs, std::string_view path);

/// The IB/RoCE files that could not be read or parsed, by device/port, in the order they were
/// gathered: the errors of ib_class, of each device's ports listing and of each port's facts
/// (state, phys_state, rate, link_layer; RoCE: the gids listing; gids/I; netdev_mtu). What the
/// published JSON's "ib_problems" holds, what recipe choice refuses on and what the ib.* checks
/// report as device_unreadable.
std::vector<IbProblem> IbProblems(const NodeFacts& facts);

/// The network files that could not be read or parsed, in the order they were gathered: the
/// /sys/class/net listing, fib_trie and route, then by entry in listing order an entry that leads
/// nowhere or the interface's operstate and mtu. What net.ifname reports as file_unreadable.
std::vector<Error> NetReadErrors(const NodeFacts& facts);

/// What to gather beyond the facts every caller needs.
struct GatherOptions {
  /// /dev/kmsg (hundreds of records, one read each): only the kernel.log check needs it, so
  /// `env`, `run --no-preflight` and the warm-up leave it out (host.kmsg stays "not gathered").
  bool kernel_log = true;
  /// At most this much of /dev/kmsg is read (it is read from its oldest record on: a larger log
  /// is cut, and the check says so). 32 MiB holds the largest ring (log_buf_len=32M) in full.
  std::size_t kmsg_max_bytes = std::size_t{32} << 20;
  /// Every /proc/<pid>/fd link (thousands of reads on a busy node): only gpu.leftover_procs,
  /// an after-job check, needs it.
  bool gpu_holders = false;
};
/// Reads the node through `fs`. Never fails as a whole: unreadable parts land in `problems`.
/// IB/RoCE ports come from node_facts.cpp; everything else from GatherHostFacts.
NodeFacts GatherNodeFacts(const FileReader& fs, const GatherOptions& options = {});
/// Host part (common/host_facts.cpp): hostname (/proc/sys/kernel/hostname under a sysroot,
/// gethostname() live), GPUs, NVIDIA driver, limits, /dev/shm, peermem, interfaces.
void GatherHostFacts(const FileReader& fs, NodeFacts* facts);
/// The host checks' facts with evidence (common/os_facts.cpp): limits, /dev/shm, sysctls,
/// modules, NVIDIA /proc files, /dev/kmsg, PCI bridges' ACS, IOMMU.
void GatherHostEvidence(const FileReader& fs, NodeFacts* facts, const GatherOptions& options);
/// The error counters (IsIbErrorCounter) in counters/ and hw_counters/ of every gathered IB
/// port into facts->ib_counters (os_facts.cpp).
void GatherIbCounters(const FileReader& fs, NodeFacts* facts);

void to_json(nlohmann::json& j, const IbProblem& v);
void from_json(const nlohmann::json& j, IbProblem& v);
void to_json(nlohmann::json& j, const GidEntry& v);
void from_json(const nlohmann::json& j, GidEntry& v);
void to_json(nlohmann::json& j, const IbPort& v);
void from_json(const nlohmann::json& j, IbPort& v);
void to_json(nlohmann::json& j, const GpuInfo& v);
void from_json(const nlohmann::json& j, GpuInfo& v);
void to_json(nlohmann::json& j, const NetInterface& v);
void from_json(const nlohmann::json& j, NetInterface& v);
void to_json(nlohmann::json& j, const NodeFacts& v);
void from_json(const nlohmann::json& j, NodeFacts& v);

}  // namespace sl
