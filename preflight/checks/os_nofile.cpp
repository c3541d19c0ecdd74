// os.nofile: the open-files limit of this process (inherited by the job). Each NCCL rank opens
// sockets per peer and per channel plus /dev/infiniband and shared-memory files; at 1024 large
// jobs fail with "Too many open files" during init.
#include "common/parse/limits.h"
#include "common/strings.h"
#include "preflight/check.h"
#include "preflight/proc_limits.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"os.nofile/ok", Outcome::kPass, Outcome::kPass, "the check passed", ""},
    {"os.nofile/soft_below_min", Outcome::kWarn, Outcome::kWarn,
     "the soft limit is below the minimum", kFixInFinding},
    {"os.nofile/limits_unreadable", Outcome::kError, Outcome::kError,
     "/proc/self/limits could not be read", kFixReadSource},
    {"os.nofile/limits_malformed", Outcome::kError, Outcome::kError,
     "/proc/self/limits has a malformed row", kFixReadSource},
};

std::vector<Finding> CheckOsNofile(const CheckContext& ctx) {
  Finding f;
  f.check_id = "os.nofile";
  f.entity = "node";
  auto row = LimitRow(ctx.facts.host.nofile, "the open-files limit", &f);
  if (!row) return {f};
  auto text_of = [](std::uint64_t v) {
    return v == kUnlimited ? std::string("unlimited") : std::to_string(v);
  };
  const std::string values = "soft " + text_of(row->soft) + ", hard " + text_of(row->hard);
  if (row->soft >= ctx.thresholds.min_nofile) {
    f.outcome = Outcome::kPass;
    f.code = "os.nofile/ok";
    f.message = "open files " + values;
    return {f};
  }
  f.outcome = Outcome::kWarn;
  f.code = "os.nofile/soft_below_min";
  f.message = "open-files limit " + text_of(row->soft) + " is below " +
              std::to_string(ctx.thresholds.min_nofile) + " (" + values +
              "): large jobs fail with \"Too many open files\"";
  f.next_step =
      "raise nofile: /etc/security/limits.d/*.conf `* - nofile 1048576`; under Slurm tasks "
      "inherit srun's caller's limit (PropagateResourceLimits) or slurmd's `LimitNOFILE=` when "
      "excepted; containers: `--ulimit nofile=1048576:1048576`";
  if (row->hard >= ctx.thresholds.min_nofile) {
    f.next_step +=
        "; the hard limit allows it now: `ulimit -n " + text_of(row->hard) + "` in the job script";
  }
  return {f};
}

}  // namespace

extern const CheckInfo kOsNofileCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kOsNofileCheck = {"os.nofile", "open-files limit is high enough", CheckOsNofile,
                                      kCodes};

}  // namespace sl::preflight
