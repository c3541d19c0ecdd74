// os.memlock: the locked-memory limit of this process, which the job it starts inherits.
// RDMA pins every registered buffer (ibv_reg_mr counts against RLIMIT_MEMLOCK), so NCCL's IB
// transport at a distro default of 64 KiB fails with ENOMEM ("Cannot allocate memory",
// CREATE_CQ/REG_MR errors) or hangs in init. Under Slurm the ranks get the limit srun
// propagates, not the one of an interactive shell on the node, so the fix names both.
#include "common/parse/limits.h"
#include "common/strings.h"
#include "preflight/check.h"
#include "preflight/proc_limits.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"os.memlock/unlimited", Outcome::kPass, Outcome::kPass, "the limit is unlimited", ""},
    {"os.memlock/meets_threshold", Outcome::kPass, Outcome::kPass,
     "the limit meets the recipe threshold", ""},
    {"os.memlock/soft_below_min", Outcome::kFail, Outcome::kFail,
     "the soft limit is below the minimum", kFixInFinding},
    {"os.memlock/low_without_rdma", Outcome::kWarn, Outcome::kWarn,
     "the soft limit is below the minimum but the node has no RDMA device", kFixInFinding},
    {"os.memlock/finite", Outcome::kWarn, Outcome::kWarn,
     "the limit is finite but above the distro default", kFixInFinding},
    {"os.memlock/limits_unreadable", Outcome::kError, Outcome::kError,
     "/proc/self/limits could not be read", kFixReadSource},
    {"os.memlock/limits_malformed", Outcome::kError, Outcome::kError,
     "/proc/self/limits has a malformed row", kFixReadSource},
};

constexpr const char* kId = "os.memlock";
constexpr std::uint64_t kSmallLimit = 64ull << 20;  // 64 KiB..64 MiB: distro/container defaults

std::string LimitText(std::uint64_t v) {
  return v == kUnlimited ? "unlimited" : HumanBytes(v) + " (" + std::to_string(v) + " bytes)";
}

std::string Fix(const Environment& env) {
  std::string fix =
      "make memlock unlimited where the ranks start: /etc/security/limits.d/*.conf `* soft "
      "memlock unlimited` + `* hard memlock unlimited` (new login); under Slurm the tasks get "
      "srun's caller's limits (PropagateResourceLimits, default ALL), so either raise it on the "
      "submit host or set `PropagateResourceLimitsExcept=MEMLOCK` in slurm.conf and give slurmd "
      "itself `LimitMEMLOCK=infinity` (systemd unit override, then restart slurmd); in "
      "containers run with `--ulimit memlock=-1:-1` (Docker/Podman) or raise the runtime's "
      "default (containerd/CRI-O `LimitMEMLOCK=infinity`)";
  if (Lookup(env, "SLURM_JOB_ID")) {
    fix = "this runs inside Slurm job " + *Lookup(env, "SLURM_JOB_ID") + ": " + fix;
  }
  return fix;
}

std::vector<Finding> CheckOsMemlock(const CheckContext& ctx) {
  Finding f;
  f.check_id = kId;
  f.entity = "node";
  auto row = LimitRow(ctx.facts.host.memlock, "the memlock limit", &f);
  if (!row) return {f};
  const std::uint64_t soft = row->soft;
  const std::string values = "soft " + LimitText(soft) + ", hard " + LimitText(row->hard);
  if (soft == kUnlimited) {
    f.outcome = Outcome::kPass;
    f.code = "os.memlock/unlimited";
    f.message = "memlock unlimited (" + values + ")";
    return {f};
  }
  if (ctx.thresholds.min_memlock != 0 && soft >= ctx.thresholds.min_memlock) {
    f.outcome = Outcome::kPass;
    f.code = "os.memlock/meets_threshold";
    f.message = "memlock " + LimitText(soft) + " meets the threshold of " +
                HumanBytes(ctx.thresholds.min_memlock) + " (" + values + ")";
    return {f};
  }
  f.next_step = Fix(ctx.env);
  if (soft <= kSmallLimit && ctx.facts.ib_ports.empty()) {
    // Only RDMA registration counts against the limit: with no InfiniBand/RoCE device NCCL runs
    // on sockets, which pin nothing. Failing would block every job on the node (issue 15).
    f.outcome = Outcome::kWarn;
    f.code = "os.memlock/low_without_rdma";
    f.message = "memlock limit is only " + LimitText(soft) +
                ", but this node has no InfiniBand/RoCE device: sockets do not pin memory, so "
                "only a job that expects RDMA here is affected; " +
                values;
  } else if (soft <= kSmallLimit) {
    f.outcome = Outcome::kFail;
    f.code = "os.memlock/soft_below_min";
    f.message = "memlock limit is only " + LimitText(soft) +
                ": RDMA cannot pin NCCL's buffers (ibv_reg_mr/ibv_create_cq fail with ENOMEM, "
                "or NCCL hangs in init); " +
                values;
  } else {
    f.outcome = Outcome::kWarn;
    f.code = "os.memlock/finite";
    f.message = "memlock limit is finite (" + values +
                "): large jobs can exhaust it when NCCL registers more buffers";
  }
  if (soft != row->hard && row->hard == kUnlimited) {
    f.message +=
        "; the hard limit is unlimited, so `ulimit -l unlimited` in the job script "
        "also works";
  }
  return {f};
}

}  // namespace

extern const CheckInfo kOsMemlockCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kOsMemlockCheck = {
    "os.memlock", "memlock limit is unlimited where the ranks run", CheckOsMemlock, kCodes};

}  // namespace sl::preflight
