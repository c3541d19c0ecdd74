// The variable registry as data. Names, defaults and accepted values were checked against
// NVIDIA/nccl src/ (NCCL_PARAM / DEFINE_NCCL_PARAM / ncclGetEnv) and PyTorch's ProcessGroupNCCL.hpp
// / FlightRecorder; version bounds come from the releases that introduced them (see doc/manual.md).
#include "nccl/registry.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/strings.h"
#include "nccl/name_filter.h"
#include "nccl/ras.h"

namespace sl::nccl {
namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 40;
constexpr Version V(int a, int b, int c = 0) { return Version{a, b, c}; }

// Detailed rows: everything safe-launch sets, and the variables users commonly get wrong.
constexpr VarSpec kDetailed[] = {
    // ---- NCCL: fabric selection ----
    {.name = "NCCL_IB_HCA",
     .type = VarType::kIbHca,
     .meaning = "RDMA devices/ports NCCL uses: prefix match, '=' exact, '^' exclude, ':N' port",
     .owner = "nccl"},
    {.name = "NCCL_IB_DISABLE",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "1 disables the IB/RoCE transport: NCCL then runs over TCP sockets",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_SOCKET_IFNAME",
     .type = VarType::kIfname,
     .meaning = "interfaces for bootstrap and the socket transport: prefix, '=' exact, '^' exclude",
     .owner = "nccl"},
    {.name = "NCCL_SOCKET_FAMILY",
     .type = VarType::kEnum,
     .values = "AF_INET|AF_INET6",
     .meaning = "address family of the socket interface NCCL picks",
     .owner = "nccl"},
    {.name = "NCCL_IB_GID_INDEX",
     .type = VarType::kInt,
     .min = -1,
     .max = 255,
     .default_value = "-1",
     .meaning = "RoCE GID table index; -1 lets NCCL (>= 2.21) pick a RoCE v2 entry itself",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_IB_ROCE_VERSION_NUM",
     .type = VarType::kEnum,
     .values = "1|2",
     .default_value = "2",
     .meaning = "RoCE version NCCL looks for when choosing the GID index",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_IB_ADDR_FAMILY",
     .type = VarType::kEnum,
     .values = "AF_INET|AF_INET6",
     .default_value = "AF_INET",
     .meaning = "address family of the GID NCCL chooses automatically",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_IB_ADDR_RANGE",
     .type = VarType::kString,
     .meaning = "CIDR range the auto-chosen GID must fall in, e.g. 10.0.0.0/16",
     .owner = "nccl"},
    {.name = "NCCL_IB_TIMEOUT",
     .type = VarType::kInt,
     .min = 1,
     .max = 31,
     .default_value = "20",
     .meaning = "IB verbs timeout exponent: 4.096 us * 2^N before a retry",
     .owner = "nccl"},
    {.name = "NCCL_IB_RETRY_CNT",
     .type = VarType::kInt,
     .max = 7,
     .default_value = "7",
     .meaning = "IB verbs retry count",
     .owner = "nccl"},
    {.name = "NCCL_IB_SL",
     .type = VarType::kInt,
     .min = -1,
     .max = 15,
     .default_value = "-1",
     .meaning = "InfiniBand service level (-1: 0)",
     .owner = "nccl"},
    {.name = "NCCL_IB_TC",
     .type = VarType::kInt,
     .min = -1,
     .max = 255,
     .default_value = "-1",
     .meaning = "traffic class (RoCE: DSCP << 2) for IB/RoCE traffic (-1: 0)",
     .owner = "nccl"},
    {.name = "NCCL_IB_QPS_PER_CONNECTION",
     .type = VarType::kInt,
     .min = 1,
     .max = 128,
     .default_value = "1",
     .meaning = "queue pairs per connection (more helps ECMP on RoCE)",
     .owner = "nccl"},
    {.name = "NCCL_IB_PCI_RELAXED_ORDERING",
     .type = VarType::kInt,
     .max = 2,
     .default_value = "2",
     .meaning = "PCI relaxed ordering for IB verbs: 0 off, 1 on, 2 auto",
     .owner = "nccl"},
    {.name = "NCCL_IB_ADAPTIVE_ROUTING",
     .type = VarType::kInt,
     .min = -2,
     .max = 1,
     .default_value = "-2",
     .meaning = "adaptive routing: 0 off, 1 on, default auto",
     .owner = "nccl"},
    {.name = "NCCL_IB_MERGE_NICS",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "1",
     .meaning = "merge dual-port NICs into one device",
     .owner = "nccl"},
    {.name = "NCCL_IB_CUDA_SUPPORT",
     .type = VarType::kBool,
     .max = 1,
     .meaning = "old switch for GPUDirect RDMA",
     .owner = "nccl",
     .replaced_by = "NCCL_NET_GDR_LEVEL",
     .renamed_in = V(2, 4)},
    {.name = "NCCL_IB_GDR_LEVEL",
     .type = VarType::kString,
     .meaning = "old name of NCCL_NET_GDR_LEVEL",
     .owner = "nccl",
     .replaced_by = "NCCL_NET_GDR_LEVEL",
     .renamed_in = V(2, 4)},
    {.name = "NCCL_NET_GDR_LEVEL",
     .type = VarType::kEnum,
     .values = "LOC|PIX|PXB|PHB|SYS|0|1|2|3|4|5",
     .meaning = "how far apart NIC and GPU may be for GPUDirect RDMA",
     .owner = "nccl"},
    {.name = "NCCL_NET_GDR_READ",
     .type = VarType::kInt,
     .min = -2,
     .max = 1,
     .default_value = "-2",
     .meaning = "GPUDirect RDMA for sends",
     .owner = "nccl"},
    {.name = "NCCL_NET",
     .type = VarType::kString,
     .meaning = "network plugin/transport to use by name, e.g. IB or Socket",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_P2P_DISABLE",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "1 disables GPU peer-to-peer",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_P2P_LEVEL",
     .type = VarType::kEnum,
     .values = "LOC|NVL|PIX|PXB|PHB|SYS|0|1|2|3|4|5",
     .meaning = "how far apart two GPUs may be to use P2P",
     .owner = "nccl"},
    {.name = "NCCL_SHM_DISABLE",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "1 disables the shared-memory transport (/dev/shm)",
     .owner = "nccl"},
    {.name = "NCCL_CROSS_NIC",
     .type = VarType::kInt,
     .max = 2,
     .default_value = "2",
     .meaning = "rings/trees may use different NICs on different nodes: 0 no, 1 yes, 2 auto",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_NVLS_ENABLE",
     .type = VarType::kInt,
     .max = 2,
     .default_value = "2",
     .meaning = "NVLink SHARP: 0 off, 1 on, 2 auto",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_COLLNET_ENABLE",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "CollNet (SHARP) support",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_ALGO",
     .type = VarType::kString,
     .meaning = "restrict algorithms (Ring, Tree, ...)",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_PROTO",
     .type = VarType::kString,
     .meaning = "restrict protocols (LL, LL128, Simple)",
     .owner = "nccl",
     .scope = Scope::kMustMatch},
    {.name = "NCCL_BUFFSIZE",
     .type = VarType::kInt,
     .min = 65536,
     .max = kBig,
     .default_value = "4194304",
     .meaning = "buffer size per channel between peers, bytes",
     .owner = "nccl"},
    {.name = "NCCL_MIN_NCHANNELS",
     .type = VarType::kInt,
     .min = 1,
     .max = 64,
     .meaning = "minimum number of channels",
     .owner = "nccl"},
    {.name = "NCCL_MAX_NCHANNELS",
     .type = VarType::kInt,
     .min = 1,
     .max = 64,
     .meaning = "maximum number of channels",
     .owner = "nccl"},
    {.name = "NCCL_NSOCKS_PERTHREAD",
     .type = VarType::kInt,
     .min = 1,
     .max = 64,
     .meaning = "sockets per helper thread (socket transport)",
     .owner = "nccl"},
    {.name = "NCCL_SOCKET_NTHREADS",
     .type = VarType::kInt,
     .min = 1,
     .max = 16,
     .meaning = "helper threads per connection (socket transport)",
     .owner = "nccl"},
    {.name = "NCCL_TOPO_FILE",
     .type = VarType::kString,
     .meaning = "XML topology file to load",
     .owner = "nccl"},
    {.name = "NCCL_TOPO_DUMP_FILE",
     .type = VarType::kString,
     .meaning = "where to dump the detected topology",
     .owner = "nccl"},
    // ---- NCCL: debugging, RAS ----
    {.name = "NCCL_DEBUG",
     .type = VarType::kEnum,
     .values = "VERSION|WARN|INFO|ABORT|TRACE",
     .meaning = "log level (unset: nothing but fatal errors on stderr)",
     .owner = "nccl"},
    {.name = "NCCL_DEBUG_FILE",
     .type = VarType::kString,
     .meaning = "log file; %h is replaced by the host name, %p by the pid",
     .owner = "nccl",
     .scope = Scope::kPerHost},
    {.name = "NCCL_DEBUG_SUBSYS",
     .type = VarType::kString,
     .default_value = "INIT,BOOTSTRAP,ENV",
     .meaning =
         "log subsystems: INIT,COLL,P2P,SHM,NET,GRAPH,TUNING,ENV,ALLOC,CALL,PROXY,NVLS,BOOTSTRAP,"
         "REG,PROFILE,RAS,ALL (^ to exclude)",
     .owner = "nccl"},
    {.name = "NCCL_RAS_ENABLE",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "1",
     .meaning = "RAS subsystem (ncclras queries) on/off",
     .owner = "nccl",
     .since = V(2, 24, 3)},
    {.name = "NCCL_RAS_ADDR",
     .type = VarType::kHostPort,
     .default_value = "localhost:28028",
     .meaning =
         "address the RAS client socket listens on; one per node, so jobs sharing a node collide",
     .owner = "nccl",
     .since = V(2, 24, 3)},
    {.name = "NCCL_COMM_BLOCKING",
     .type = VarType::kBool,
     .max = 1,
     .meaning = "blocking communicator calls (unset: per config)",
     .owner = "nccl"},
    {.name = "NCCL_LAUNCH_MODE",
     .type = VarType::kEnum,
     .values = "PARALLEL|GROUP",
     .default_value = "PARALLEL",
     .meaning = "kernel launch mode",
     .owner = "nccl"},
    {.name = "NCCL_CUMEM_ENABLE",
     .type = VarType::kBool,
     .max = 1,
     .meaning = "cuMem* allocations",
     .owner = "nccl"},
    {.name = "NCCL_IGNORE_CPU_AFFINITY",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "ignore the job's CPU affinity",
     .owner = "nccl"},
    // ---- PyTorch ProcessGroupNCCL / Flight Recorder ----
    {.name = "TORCH_NCCL_ASYNC_ERROR_HANDLING",
     .type = VarType::kInt,
     .max = 3,
     .default_value = "3",
     .meaning = "on a NCCL error/timeout: 0 nothing, 1 abort comm + tear down, 2 abort comm only, "
                "3 tear down without aborting (default)",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "NCCL_ASYNC_ERROR_HANDLING",
     .type = VarType::kInt,
     .max = 3,
     .meaning = "old name",
     .owner = "torch",
     .replaced_by = "TORCH_NCCL_ASYNC_ERROR_HANDLING",
     .renamed_in = V(2, 2)},
    {.name = "TORCH_NCCL_BLOCKING_WAIT",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "wait() blocks and raises on timeout",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "NCCL_BLOCKING_WAIT",
     .type = VarType::kBool,
     .max = 1,
     .meaning = "old name",
     .owner = "torch",
     .replaced_by = "TORCH_NCCL_BLOCKING_WAIT",
     .renamed_in = V(2, 2)},
    {.name = "TORCH_NCCL_DESYNC_DEBUG",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "report which rank desynchronised on a timeout",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "NCCL_DESYNC_DEBUG",
     .type = VarType::kBool,
     .max = 1,
     .meaning = "old name",
     .owner = "torch",
     .replaced_by = "TORCH_NCCL_DESYNC_DEBUG",
     .renamed_in = V(2, 2)},
    {.name = "TORCH_NCCL_ENABLE_TIMING",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "CUDA events around each collective (durations in Flight Recorder)",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "NCCL_ENABLE_TIMING",
     .type = VarType::kBool,
     .max = 1,
     .meaning = "old name",
     .owner = "torch",
     .replaced_by = "TORCH_NCCL_ENABLE_TIMING",
     .renamed_in = V(2, 2)},
    {.name = "TORCH_NCCL_ENABLE_MONITORING",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "1",
     .meaning = "heartbeat monitor that kills a process whose watchdog is stuck",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
     .type = VarType::kInt,
     .min = 1,
     .max = 86400,
     .default_value = "480",
     .meaning = "seconds without watchdog heartbeat before the monitor aborts the process",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "TORCH_NCCL_DUMP_ON_TIMEOUT",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "1",
     .meaning = "write Flight Recorder dumps when the watchdog times out",
     .owner = "torch",
     .since = V(2, 3)},
    {.name = "TORCH_NCCL_TRACE_CPP_STACK",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "capture C++ stacks in Flight Recorder entries",
     .owner = "torch",
     .since = V(2, 3)},
    {.name = "TORCH_FR_BUFFER_SIZE",
     .type = VarType::kInt,
     .max = 10000000,
     .default_value = "2000",
     .meaning = "Flight Recorder ring size in entries (0 disables it)",
     .owner = "torch",
     .since = V(2, 9)},
    {.name = "TORCH_NCCL_TRACE_BUFFER_SIZE",
     .type = VarType::kInt,
     .max = 10000000,
     .meaning = "Flight Recorder ring size (old name)",
     .owner = "torch",
     .since = V(2, 2),
     .replaced_by = "TORCH_FR_BUFFER_SIZE",
     .renamed_in = V(2, 9)},
    {.name = "TORCH_FR_DUMP_TEMP_FILE",
     .type = VarType::kString,
     .default_value = "~/.cache/fr_trace/nccl_trace_rank_",
     .meaning = "Flight Recorder dump file prefix; the rank number is appended",
     .owner = "torch",
     .since = V(2, 9),
     .scope = Scope::kPerHost},
    {.name = "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
     .type = VarType::kString,
     .meaning = "Flight Recorder dump file prefix (old name)",
     .owner = "torch",
     .since = V(2, 3),
     .replaced_by = "TORCH_FR_DUMP_TEMP_FILE",
     .renamed_in = V(2, 9),
     .scope = Scope::kPerHost},
    {.name = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE",
     .type = VarType::kString,
     .meaning = "prefix of a named pipe per rank (<prefix><rank>.pipe); writing to it dumps Flight "
                "Recorder "
                "on demand",
     .owner = "torch",
     .since = V(2, 3)},
    {.name = "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC",
     .type = VarType::kInt,
     .max = kBig,
     .default_value = "60000",
     .meaning = "milliseconds to wait for the dump before tearing down",
     .owner = "torch",
     .since = V(2, 3)},
    {.name = "TORCH_NCCL_COORD_CHECK_MILSEC",
     .type = VarType::kInt,
     .min = 1,
     .max = kBig,
     .default_value = "1000",
     .meaning = "interval of the watchdog's check for dump signals from other ranks",
     .owner = "torch",
     .since = V(2, 3)},
    {.name = "TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "1",
     .meaning = "log the C++ stack when the watchdog times out",
     .owner = "torch",
     .since = V(2, 3)},
    {.name = "TORCH_NCCL_AVOID_RECORD_STREAMS",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "stash tensors instead of recordStream calls",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "TORCH_NCCL_HIGH_PRIORITY",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "use high-priority CUDA streams for NCCL",
     .owner = "torch",
     .since = V(2, 3)},
    {.name = "TORCH_NCCL_USE_COMM_NONBLOCKING",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "nonblocking NCCL communicators",
     .owner = "torch",
     .since = V(2, 2)},
    {.name = "TORCH_NCCL_NAN_CHECK",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "check inputs for NaN",
     .owner = "torch",
     .since = V(2, 5)},
    {.name = "TORCH_NCCL_PROPAGATE_ERROR",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "propagate a failing rank's error to the others",
     .owner = "torch",
     .since = V(2, 7)},
    {.name = "TORCH_NCCL_RETHROW_CUDA_ERRORS",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "1",
     .meaning = "rethrow CUDA errors seen by the watchdog",
     .owner = "torch",
     .since = V(2, 5)},
    {.name = "TORCH_NCCL_CUDA_EVENT_CACHE",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "1",
     .meaning = "cache CUDA events",
     .owner = "torch",
     .since = V(2, 5)},
    {.name = "TORCH_NCCL_EXTRA_DUMP_ON_EXEC",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "dump Flight Recorder on any exception as well",
     .owner = "torch",
     .since = V(2, 6)},
    {.name = "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK",
     .type = VarType::kBool,
     .max = 1,
     .default_value = "0",
     .meaning = "register allocations with NCCL via allocator hooks",
     .owner = "torch",
     .since = V(2, 2)},
    // ---- NCCL_* names that are not NCCL run-time settings, but common in job environments ----
    {.name = "NCCL_VERSION",
     .type = VarType::kString,
     .meaning = "set by NVIDIA NGC container images to the NCCL they ship; NCCL does not read it",
     .owner = "env"},
    {.name = "NCCL_HOME",
     .type = VarType::kString,
     .meaning = "build-time NCCL location; not read at run time",
     .owner = "env"},
    {.name = "NCCL_ROOT",
     .type = VarType::kString,
     .meaning = "build-time NCCL location; not read at run time",
     .owner = "env"},
    {.name = "NCCL_ROOT_DIR",
     .type = VarType::kString,
     .meaning = "build-time NCCL location (PyTorch builds); not read at run time",
     .owner = "env"},
    {.name = "NCCL_INCLUDE_DIR",
     .type = VarType::kString,
     .meaning = "build-time NCCL headers (PyTorch builds); not read at run time",
     .owner = "env"},
    {.name = "NCCL_LIB_DIR",
     .type = VarType::kString,
     .meaning = "build-time NCCL library (PyTorch builds); not read at run time",
     .owner = "env"},
};

struct BulkName {
  const char* name;
  const char* default_value;
};
constexpr BulkName kNcclNames[] = {
#include "nccl/nccl_names.inc"
};

// Scopes of names that have no detailed row (nccl_names.inc gives them kString, job-wide).
struct BulkScope {
  std::string_view name;
  Scope scope;
};
constexpr BulkScope kBulkScopes[] = {
    {.name = "NCCL_NET_PLUGIN", .scope = Scope::kMustMatch},
    {.name = "NCCL_HOSTID", .scope = Scope::kPerHost},
    {.name = "NCCL_COMM_ID", .scope = Scope::kPerHost},
};
// Per-host names that are not NCCL variables but travel with them in a job's environment.
constexpr std::string_view kOtherPerHost[] = {"TORCH_COMPILE_DEBUG_DIR", "TORCHINDUCTOR_CACHE_DIR"};

Scope BulkScopeOf(std::string_view name) {
  for (const BulkScope& b : kBulkScopes) {
    if (b.name == name) return b.scope;
  }
  return Scope::kJobWide;
}

const std::vector<VarSpec>& All() {
  static const std::vector<VarSpec> kAll = [] {
    std::vector<VarSpec> all(std::begin(kDetailed), std::end(kDetailed));
    for (const BulkName& b : kNcclNames) {
      bool have =
          std::any_of(all.begin(), all.end(), [&](const VarSpec& s) { return s.name == b.name; });
      if (have) continue;
      all.push_back(
          VarSpec{.name = b.name,
                  .type = VarType::kString,
                  .default_value = b.default_value,
                  .meaning = "NCCL parameter (not validated by safe-launch; see NCCL's env docs)",
                  .owner = "nccl",
                  .scope = BulkScopeOf(b.name)});
    }
    std::sort(all.begin(), all.end(),
              [](const VarSpec& a, const VarSpec& b) { return a.name < b.name; });
    return all;
  }();
  return kAll;
}

// Values an old name does not read: older ProcessGroupNCCL knows modes 0..2 and would treat 3 as
// "no handling", so a failed collective hangs instead of tearing down.
struct OldNameValue {
  std::string_view name, value, replacement, why;
};
constexpr OldNameValue kOldNameValues[] = {
    {.name = "NCCL_ASYNC_ERROR_HANDLING",
     .value = "3",
     .replacement = "1",
     .why = " has no mode 3 (SkipCleanUp), so 1 (TearDown: kill the process on error)"},
};

std::vector<std::string> EnumValues(const VarSpec& spec) { return Split(spec.values, '|'); }

}  // namespace

std::span<const VarSpec> Variables() { return All(); }

const VarSpec* FindVariable(std::string_view name) {
  const auto& all = All();
  auto it = std::lower_bound(all.begin(), all.end(), name,
                             [](const VarSpec& s, std::string_view n) { return s.name < n; });
  if (it != all.end() && it->name == name) return &*it;
  return nullptr;
}

Scope VariableScope(std::string_view name) {
  if (name.find("RANK") != std::string_view::npos) return Scope::kPerHost;
  for (std::string_view n : kOtherPerHost) {
    if (n == name) return Scope::kPerHost;
  }
  const VarSpec* spec = FindVariable(name);
  return spec != nullptr ? spec->scope : Scope::kJobWide;
}

bool IsLintedName(std::string_view name) {
  return StartsWith(name, "NCCL_") || StartsWith(name, "TORCH_NCCL_") ||
         StartsWith(name, "TORCH_FR_");
}

std::string SuggestVariable(std::string_view name) {
  std::vector<std::string> names;
  for (const VarSpec& s : All()) names.emplace_back(s.name);
  std::string best = ClosestMatch(name, names);
  if (!best.empty()) return best;
  // Long names differ by more than ClosestMatch allows (TORCH_NCCL_TRACE_BUFER_SIZ): accept a
  // distance up to a quarter of the length.
  std::size_t best_d = name.size() / 4 + 1;
  for (const auto& n : names) {
    std::size_t d = EditDistance(name, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

std::string DescribeAccepted(const VarSpec& spec) {
  switch (spec.type) {
    case VarType::kInt:
      if (spec.max >= kBig) return "an integer >= " + std::to_string(spec.min);
      return "an integer in " + std::to_string(spec.min) + ".." + std::to_string(spec.max);
    case VarType::kBool:
      return "0 or 1";
    case VarType::kEnum: {
      std::string out = "one of ";
      auto v = EnumValues(spec);
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
      return out;
    }
    case VarType::kIbHca:
      return "a device list such as =mlx5_0:1,mlx5_1:1 (^ excludes, = exact, :N port)";
    case VarType::kIfname:
      return "an interface list such as =eth0 or ^docker,lo";
    case VarType::kHostPort:
      return "host:port, e.g. " + FormatRasAddress(kRasHost, kRasPort);
    case VarType::kString:
      return "any text";
  }
  return "any text";
}

Status ValidateValue(const VarSpec& spec, std::string_view value) {
  const std::string where = std::string(spec.name) + "=" + std::string(value);
  auto bad = [&](std::string why) {
    return MakeError(std::move(why), where,
                     "set " + std::string(spec.name) + " to " + DescribeAccepted(spec) +
                         " (NCCL/torch silently fall back to the default on a bad value)");
  };
  switch (spec.type) {
    case VarType::kInt:
    case VarType::kBool: {
      auto n = ParseInt(value, spec.name);
      if (!n.ok()) return bad("'" + std::string(value) + "' is not an integer");
      if (*n < spec.min || *n > spec.max) {
        return bad(std::to_string(*n) + " is outside the accepted range (" +
                   DescribeAccepted(spec) + ")");
      }
      return OkStatus();
    }
    case VarType::kEnum: {
      std::string upper;
      for (char c : Trim(value))
        upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      for (const auto& v : EnumValues(spec)) {
        if (v == upper) return OkStatus();
      }
      return bad("'" + std::string(value) + "' is not accepted (" + DescribeAccepted(spec) + ")");
    }
    case VarType::kIbHca: {
      auto f = ParseIbHca(value);
      if (!f.ok()) return bad(f.error().message);
      return OkStatus();
    }
    case VarType::kIfname: {
      auto f = ParseSocketIfname(value);
      if (!f.ok()) return bad(f.error().message);
      return OkStatus();
    }
    case VarType::kHostPort: {
      // NCCL reads NCCL_RAS_ADDR as host:port; the one parser (nccl/ras.h) also takes the
      // parts alone, which the job's value must not rely on.
      RasNamed named;
      auto addr = ParseRasAddress(value, &named);
      if (!addr.ok()) {
        auto colon = value.rfind(':');
        if (colon == std::string_view::npos) return bad(addr.error().message);
        return bad("port '" + std::string(value.substr(colon + 1)) + "' is not in 1..65535");
      }
      if (!named.host || !named.port) return bad("expected host:port");
      return OkStatus();
    }
    case VarType::kString:
      return OkStatus();
  }
  return OkStatus();
}

bool AppliesTo(const VarSpec& spec, const std::optional<Version>& v) {
  if (!v) return true;
  if (spec.since && *v < *spec.since) return false;
  if (spec.until && !(*v < *spec.until)) return false;
  return true;
}

std::string NameFor(std::string_view name, const Versions& versions) {
  const VarSpec* spec = FindVariable(name);
  if (spec == nullptr) return std::string(name);
  const auto& owner_version = spec->owner == "torch" ? versions.torch : versions.nccl;
  if (!spec->replaced_by.empty()) {
    // An old name: the new one is read from `renamed_in` on.
    if (owner_version && spec->renamed_in && *owner_version >= *spec->renamed_in) {
      return std::string(spec->replaced_by);
    }
    if (!owner_version) return std::string(spec->replaced_by);
    return std::string(name);
  }
  // A new name: find its old alias and use that for versions before the rename.
  for (const VarSpec& s : All()) {
    if (s.replaced_by == name && s.renamed_in && owner_version && *owner_version < *s.renamed_in) {
      return std::string(s.name);
    }
  }
  return std::string(name);
}

std::optional<std::string> ValueForOldName(std::string_view name, std::string_view value,
                                           const Versions& versions, std::string* why) {
  for (const OldNameValue& o : kOldNameValues) {
    if (o.name != name || o.value != value) continue;
    *why = "; torch " + (versions.torch ? versions.torch->ToString() : std::string("unknown")) +
           std::string(o.why);
    return std::string(o.replacement);
  }
  return std::nullopt;
}

}  // namespace sl::nccl
