// The variable registry as data. Names, defaults and accepted values were checked against
// NVIDIA/nccl src/ (NCCL_PARAM / DEFINE_NCCL_PARAM / ncclGetEnv) and PyTorch's ProcessGroupNCCL.hpp
// / FlightRecorder; version bounds come from the releases that introduced them (see doc/manual.md).
#include "nccl/registry.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/strings.h"
#include "nccl/name_filter.h"

namespace sl::nccl {
namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 40;
constexpr Version V(int a, int b, int c = 0) { return Version{a, b, c}; }

// Detailed rows: everything safe-launch sets, and the variables users commonly get wrong.
constexpr VarSpec kDetailed[] = {
    // ---- NCCL: fabric selection ----
    {"NCCL_IB_HCA", VarType::kIbHca, "", 0, 0, "",
     "RDMA devices/ports NCCL uses: prefix match, '=' exact, '^' exclude, ':N' port", "nccl"},
    {"NCCL_IB_DISABLE", VarType::kBool, "", 0, 1, "0",
     "1 disables the IB/RoCE transport: NCCL then runs over TCP sockets", "nccl"},
    {"NCCL_SOCKET_IFNAME", VarType::kIfname, "", 0, 0, "",
     "interfaces for bootstrap and the socket transport: prefix, '=' exact, '^' exclude", "nccl"},
    {"NCCL_SOCKET_FAMILY", VarType::kEnum, "AF_INET|AF_INET6", 0, 0, "",
     "address family of the socket interface NCCL picks", "nccl"},
    {"NCCL_IB_GID_INDEX", VarType::kInt, "", -1, 255, "-1",
     "RoCE GID table index; -1 lets NCCL (>= 2.21) pick a RoCE v2 entry itself", "nccl"},
    {"NCCL_IB_ROCE_VERSION_NUM", VarType::kEnum, "1|2", 0, 0, "2",
     "RoCE version NCCL looks for when choosing the GID index", "nccl"},
    {"NCCL_IB_ADDR_FAMILY", VarType::kEnum, "AF_INET|AF_INET6", 0, 0, "AF_INET",
     "address family of the GID NCCL chooses automatically", "nccl"},
    {"NCCL_IB_ADDR_RANGE", VarType::kString, "", 0, 0, "",
     "CIDR range the auto-chosen GID must fall in, e.g. 10.0.0.0/16", "nccl"},
    {"NCCL_IB_TIMEOUT", VarType::kInt, "", 1, 31, "20",
     "IB verbs timeout exponent: 4.096 us * 2^N before a retry", "nccl"},
    {"NCCL_IB_RETRY_CNT", VarType::kInt, "", 0, 7, "7", "IB verbs retry count", "nccl"},
    {"NCCL_IB_SL", VarType::kInt, "", -1, 15, "-1", "InfiniBand service level (-1: 0)", "nccl"},
    {"NCCL_IB_TC", VarType::kInt, "", -1, 255, "-1",
     "traffic class (RoCE: DSCP << 2) for IB/RoCE traffic (-1: 0)", "nccl"},
    {"NCCL_IB_QPS_PER_CONNECTION", VarType::kInt, "", 1, 128, "1",
     "queue pairs per connection (more helps ECMP on RoCE)", "nccl"},
    {"NCCL_IB_PCI_RELAXED_ORDERING", VarType::kInt, "", 0, 2, "2",
     "PCI relaxed ordering for IB verbs: 0 off, 1 on, 2 auto", "nccl"},
    {"NCCL_IB_ADAPTIVE_ROUTING", VarType::kInt, "", -2, 1, "-2",
     "adaptive routing: 0 off, 1 on, default auto", "nccl"},
    {"NCCL_IB_MERGE_NICS", VarType::kBool, "", 0, 1, "1", "merge dual-port NICs into one device",
     "nccl"},
    {"NCCL_IB_CUDA_SUPPORT", VarType::kBool, "", 0, 1, "", "old switch for GPUDirect RDMA", "nccl",
     std::nullopt, std::nullopt, "NCCL_NET_GDR_LEVEL", V(2, 4)},
    {"NCCL_IB_GDR_LEVEL", VarType::kString, "", 0, 0, "", "old name of NCCL_NET_GDR_LEVEL", "nccl",
     std::nullopt, std::nullopt, "NCCL_NET_GDR_LEVEL", V(2, 4)},
    {"NCCL_NET_GDR_LEVEL", VarType::kEnum, "LOC|PIX|PXB|PHB|SYS|0|1|2|3|4|5", 0, 0, "",
     "how far apart NIC and GPU may be for GPUDirect RDMA", "nccl"},
    {"NCCL_NET_GDR_READ", VarType::kInt, "", -2, 1, "-2", "GPUDirect RDMA for sends", "nccl"},
    {"NCCL_NET", VarType::kString, "", 0, 0, "",
     "network plugin/transport to use by name, e.g. IB or Socket", "nccl"},
    {"NCCL_P2P_DISABLE", VarType::kBool, "", 0, 1, "0", "1 disables GPU peer-to-peer", "nccl"},
    {"NCCL_P2P_LEVEL", VarType::kEnum, "LOC|NVL|PIX|PXB|PHB|SYS|0|1|2|3|4|5", 0, 0, "",
     "how far apart two GPUs may be to use P2P", "nccl"},
    {"NCCL_SHM_DISABLE", VarType::kBool, "", 0, 1, "0",
     "1 disables the shared-memory transport (/dev/shm)", "nccl"},
    {"NCCL_CROSS_NIC", VarType::kInt, "", 0, 2, "2",
     "rings/trees may use different NICs on different nodes: 0 no, 1 yes, 2 auto", "nccl"},
    {"NCCL_NVLS_ENABLE", VarType::kInt, "", 0, 2, "2", "NVLink SHARP: 0 off, 1 on, 2 auto", "nccl"},
    {"NCCL_COLLNET_ENABLE", VarType::kBool, "", 0, 1, "0", "CollNet (SHARP) support", "nccl"},
    {"NCCL_ALGO", VarType::kString, "", 0, 0, "", "restrict algorithms (Ring, Tree, ...)", "nccl"},
    {"NCCL_PROTO", VarType::kString, "", 0, 0, "", "restrict protocols (LL, LL128, Simple)",
     "nccl"},
    {"NCCL_BUFFSIZE", VarType::kInt, "", 65536, kBig, "4194304",
     "buffer size per channel between peers, bytes", "nccl"},
    {"NCCL_MIN_NCHANNELS", VarType::kInt, "", 1, 64, "", "minimum number of channels", "nccl"},
    {"NCCL_MAX_NCHANNELS", VarType::kInt, "", 1, 64, "", "maximum number of channels", "nccl"},
    {"NCCL_NSOCKS_PERTHREAD", VarType::kInt, "", 1, 64, "",
     "sockets per helper thread (socket transport)", "nccl"},
    {"NCCL_SOCKET_NTHREADS", VarType::kInt, "", 1, 16, "",
     "helper threads per connection (socket transport)", "nccl"},
    {"NCCL_TOPO_FILE", VarType::kString, "", 0, 0, "", "XML topology file to load", "nccl"},
    {"NCCL_TOPO_DUMP_FILE", VarType::kString, "", 0, 0, "", "where to dump the detected topology",
     "nccl"},
    // ---- NCCL: debugging, RAS ----
    {"NCCL_DEBUG", VarType::kEnum, "VERSION|WARN|INFO|ABORT|TRACE", 0, 0, "",
     "log level (unset: nothing but fatal errors on stderr)", "nccl"},
    {"NCCL_DEBUG_FILE", VarType::kString, "", 0, 0, "",
     "log file; %h is replaced by the host name, %p by the pid", "nccl"},
    {"NCCL_DEBUG_SUBSYS", VarType::kString, "", 0, 0, "INIT,BOOTSTRAP,ENV",
     "log subsystems: INIT,COLL,P2P,SHM,NET,GRAPH,TUNING,ENV,ALLOC,CALL,PROXY,NVLS,BOOTSTRAP,"
     "REG,PROFILE,RAS,ALL (^ to exclude)",
     "nccl"},
    {"NCCL_RAS_ENABLE", VarType::kBool, "", 0, 1, "1", "RAS subsystem (ncclras queries) on/off",
     "nccl", V(2, 24, 3)},
    {"NCCL_RAS_ADDR", VarType::kHostPort, "", 0, 0, "localhost:28028",
     "address the RAS client socket listens on; one per node, so jobs sharing a node collide",
     "nccl", V(2, 24, 3)},
    {"NCCL_COMM_BLOCKING", VarType::kBool, "", 0, 1, "",
     "blocking communicator calls (unset: per config)", "nccl"},
    {"NCCL_LAUNCH_MODE", VarType::kEnum, "PARALLEL|GROUP", 0, 0, "PARALLEL", "kernel launch mode",
     "nccl"},
    {"NCCL_CUMEM_ENABLE", VarType::kBool, "", 0, 1, "", "cuMem* allocations", "nccl"},
    {"NCCL_IGNORE_CPU_AFFINITY", VarType::kBool, "", 0, 1, "0", "ignore the job's CPU affinity",
     "nccl"},
    // ---- PyTorch ProcessGroupNCCL / Flight Recorder ----
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", VarType::kInt, "", 0, 3, "3",
     "on a NCCL error/timeout: 0 nothing, 1 abort comm + tear down, 2 abort comm only, "
     "3 tear down without aborting (default)",
     "torch", V(2, 2)},
    {"NCCL_ASYNC_ERROR_HANDLING", VarType::kInt, "", 0, 3, "", "old name", "torch", std::nullopt,
     std::nullopt, "TORCH_NCCL_ASYNC_ERROR_HANDLING", V(2, 2)},
    {"TORCH_NCCL_BLOCKING_WAIT", VarType::kBool, "", 0, 1, "0",
     "wait() blocks and raises on timeout", "torch", V(2, 2)},
    {"NCCL_BLOCKING_WAIT", VarType::kBool, "", 0, 1, "", "old name", "torch", std::nullopt,
     std::nullopt, "TORCH_NCCL_BLOCKING_WAIT", V(2, 2)},
    {"TORCH_NCCL_DESYNC_DEBUG", VarType::kBool, "", 0, 1, "0",
     "report which rank desynchronised on a timeout", "torch", V(2, 2)},
    {"NCCL_DESYNC_DEBUG", VarType::kBool, "", 0, 1, "", "old name", "torch", std::nullopt,
     std::nullopt, "TORCH_NCCL_DESYNC_DEBUG", V(2, 2)},
    {"TORCH_NCCL_ENABLE_TIMING", VarType::kBool, "", 0, 1, "0",
     "CUDA events around each collective (durations in Flight Recorder)", "torch", V(2, 2)},
    {"NCCL_ENABLE_TIMING", VarType::kBool, "", 0, 1, "", "old name", "torch", std::nullopt,
     std::nullopt, "TORCH_NCCL_ENABLE_TIMING", V(2, 2)},
    {"TORCH_NCCL_ENABLE_MONITORING", VarType::kBool, "", 0, 1, "1",
     "heartbeat monitor that kills a process whose watchdog is stuck", "torch", V(2, 2)},
    {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", VarType::kInt, "", 1, 86400, "480",
     "seconds without watchdog heartbeat before the monitor aborts the process", "torch", V(2, 2)},
    {"TORCH_NCCL_DUMP_ON_TIMEOUT", VarType::kBool, "", 0, 1, "1",
     "write Flight Recorder dumps when the watchdog times out", "torch", V(2, 3)},
    {"TORCH_NCCL_TRACE_CPP_STACK", VarType::kBool, "", 0, 1, "0",
     "capture C++ stacks in Flight Recorder entries", "torch", V(2, 3)},
    {"TORCH_FR_BUFFER_SIZE", VarType::kInt, "", 0, 10000000, "2000",
     "Flight Recorder ring size in entries (0 disables it)", "torch", V(2, 9)},
    {"TORCH_NCCL_TRACE_BUFFER_SIZE", VarType::kInt, "", 0, 10000000, "",
     "Flight Recorder ring size (old name)", "torch", V(2, 2), std::nullopt, "TORCH_FR_BUFFER_SIZE",
     V(2, 9)},
    {"TORCH_FR_DUMP_TEMP_FILE", VarType::kString, "", 0, 0, "~/.cache/fr_trace/nccl_trace_rank_",
     "Flight Recorder dump file prefix; the rank number is appended", "torch", V(2, 9)},
    {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", VarType::kString, "", 0, 0, "",
     "Flight Recorder dump file prefix (old name)", "torch", V(2, 3), std::nullopt,
     "TORCH_FR_DUMP_TEMP_FILE", V(2, 9)},
    {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", VarType::kString, "", 0, 0, "",
     "prefix of a named pipe per rank (<prefix><rank>.pipe); writing to it dumps Flight Recorder "
     "on demand",
     "torch", V(2, 3)},
    {"TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", VarType::kInt, "", 0, kBig, "60000",
     "milliseconds to wait for the dump before tearing down", "torch", V(2, 3)},
    {"TORCH_NCCL_COORD_CHECK_MILSEC", VarType::kInt, "", 1, kBig, "1000",
     "interval of the watchdog's check for dump signals from other ranks", "torch", V(2, 3)},
    {"TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN", VarType::kBool, "", 0, 1, "1",
     "log the C++ stack when the watchdog times out", "torch", V(2, 3)},
    {"TORCH_NCCL_AVOID_RECORD_STREAMS", VarType::kBool, "", 0, 1, "0",
     "stash tensors instead of recordStream calls", "torch", V(2, 2)},
    {"TORCH_NCCL_HIGH_PRIORITY", VarType::kBool, "", 0, 1, "0",
     "use high-priority CUDA streams for NCCL", "torch", V(2, 3)},
    {"TORCH_NCCL_USE_COMM_NONBLOCKING", VarType::kBool, "", 0, 1, "0",
     "nonblocking NCCL communicators", "torch", V(2, 2)},
    {"TORCH_NCCL_NAN_CHECK", VarType::kBool, "", 0, 1, "0", "check inputs for NaN", "torch",
     V(2, 5)},
    {"TORCH_NCCL_PROPAGATE_ERROR", VarType::kBool, "", 0, 1, "0",
     "propagate a failing rank's error to the others", "torch", V(2, 7)},
    {"TORCH_NCCL_RETHROW_CUDA_ERRORS", VarType::kBool, "", 0, 1, "1",
     "rethrow CUDA errors seen by the watchdog", "torch", V(2, 5)},
    {"TORCH_NCCL_CUDA_EVENT_CACHE", VarType::kBool, "", 0, 1, "1", "cache CUDA events", "torch",
     V(2, 5)},
    {"TORCH_NCCL_EXTRA_DUMP_ON_EXEC", VarType::kBool, "", 0, 1, "0",
     "dump Flight Recorder on any exception as well", "torch", V(2, 6)},
    {"TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK", VarType::kBool, "", 0, 1, "0",
     "register allocations with NCCL via allocator hooks", "torch", V(2, 2)},
    // ---- NCCL_* names that are not NCCL run-time settings, but common in job environments ----
    {"NCCL_VERSION", VarType::kString, "", 0, 0, "",
     "set by NVIDIA NGC container images to the NCCL they ship; NCCL does not read it", "env"},
    {"NCCL_HOME", VarType::kString, "", 0, 0, "", "build-time NCCL location; not read at run time",
     "env"},
    {"NCCL_ROOT", VarType::kString, "", 0, 0, "", "build-time NCCL location; not read at run time",
     "env"},
    {"NCCL_ROOT_DIR", VarType::kString, "", 0, 0, "",
     "build-time NCCL location (PyTorch builds); not read at run time", "env"},
    {"NCCL_INCLUDE_DIR", VarType::kString, "", 0, 0, "",
     "build-time NCCL headers (PyTorch builds); not read at run time", "env"},
    {"NCCL_LIB_DIR", VarType::kString, "", 0, 0, "",
     "build-time NCCL library (PyTorch builds); not read at run time", "env"},
};

struct BulkName {
  const char* name;
  const char* default_value;
};
constexpr BulkName kNcclNames[] = {
#include "nccl/nccl_names.inc"
};

const std::vector<VarSpec>& All() {
  static const std::vector<VarSpec> kAll = [] {
    std::vector<VarSpec> all(std::begin(kDetailed), std::end(kDetailed));
    for (const BulkName& b : kNcclNames) {
      bool have =
          std::any_of(all.begin(), all.end(), [&](const VarSpec& s) { return s.name == b.name; });
      if (have) continue;
      all.push_back(VarSpec{b.name, VarType::kString, "", 0, 0, b.default_value,
                            "NCCL parameter (not validated by safe-launch; see NCCL's env docs)",
                            "nccl"});
    }
    std::sort(all.begin(), all.end(),
              [](const VarSpec& a, const VarSpec& b) { return a.name < b.name; });
    return all;
  }();
  return kAll;
}

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
      return "host:port, e.g. 127.0.0.1:28028";
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
      auto colon = value.rfind(':');
      if (colon == std::string_view::npos || colon == 0) return bad("expected host:port");
      auto port = ParseInt(value.substr(colon + 1), spec.name);
      if (!port.ok() || *port < 1 || *port > 65535) {
        return bad("port '" + std::string(value.substr(colon + 1)) + "' is not in 1..65535");
      }
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

}  // namespace sl::nccl
