// os.shm: size of the /dev/shm mount. NCCL's intra-node SHM transport and its proxy buffers
// live there (plus PyTorch DataLoader workers); a 64 MiB container default makes NCCL fail with
// "unhandled system error" / "No space left on device" ("Error while creating shared memory
// segment") as soon as several GPUs share a node.
#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"os.shm/size_unknown", Outcome::kError, Outcome::kError,
     "the /dev/shm size could not be worked out", kFixReadSource},
    {"os.shm/ok", Outcome::kPass, Outcome::kPass, "the check passed", ""},
    {"os.shm/too_small", Outcome::kFail, Outcome::kFail, "/dev/shm is below the minimum size",
     kFixInFinding},
};

std::vector<Finding> CheckOsShm(const CheckContext& ctx) {
  Finding f;
  f.check_id = "os.shm";
  f.entity = "/dev/shm";
  const Fact<ShmSize>& shm = ctx.facts.host.shm;
  if (!shm.ok()) {
    f.outcome = Outcome::kError;
    f.code = "os.shm/size_unknown";
    f.message = "cannot tell the size of /dev/shm: " + shm.error.Describe();
    f.next_step = shm.error.fix.empty() ? "check /proc/mounts (or run `df -h /dev/shm` on the node)"
                                        : shm.error.fix;
    return {f};
  }
  f.With(shm->source, shm->raw);
  const std::string size = HumanBytes(shm->bytes) + " (" + shm->how + ")";
  if (shm->bytes >= ctx.thresholds.min_shm) {
    f.outcome = Outcome::kPass;
    f.code = "os.shm/ok";
    f.message = "/dev/shm is " + size;
    return {f};
  }
  f.outcome = Outcome::kFail;
  f.code = "os.shm/too_small";
  f.message = "/dev/shm is only " + size + ", below " + HumanBytes(ctx.thresholds.min_shm) +
              ": NCCL's shared-memory transport fails (\"No space left on device\" / "
              "\"unhandled system error\") or falls back to slower paths";
  f.next_step =
      "give the container a larger /dev/shm: `docker run --shm-size=16g` (or `--ipc=host`), "
      "Kubernetes: mount an emptyDir with `medium: Memory` (and a sizeLimit) at /dev/shm, "
      "Enroot/Pyxis: the host's /dev/shm is used, so remount it on the host "
      "(`mount -o remount,size=50% /dev/shm`)";
  return {f};
}

}  // namespace

extern const CheckInfo kOsShmCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kOsShmCheck = {
    "os.shm", "/dev/shm is large enough for NCCL's shared-memory transport", CheckOsShm, kCodes};

}  // namespace sl::preflight
