#include "preflight/check.h"

namespace sl::preflight {

// Each check's row lives in its file under preflight/checks/; this list only orders them.
extern const CheckInfo kIbPortStateCheck, kIbPortErrorsCheck, kIbMtuCheck, kIbGidCheck,
    kOsMemlockCheck, kOsNofileCheck, kOsSysctlCheck, kOsShmCheck, kGpuInventoryCheck, kGpuGdrCheck,
    kPciAcsCheck, kKernelLogCheck, kGpuLeftoverProcsCheck, kEnvNcclCheck, kNetIfnameCheck;

std::span<const CheckInfo> Registry() {
  // In the order the checks run and print. Copied on first use, after every row (a constant)
  // is initialised.
  static const CheckInfo kChecks[] = {
      kIbPortStateCheck,      kIbPortErrorsCheck, kIbMtuCheck,     kIbGidCheck,
      kOsMemlockCheck,        kOsNofileCheck,     kOsSysctlCheck,  kOsShmCheck,
      kGpuInventoryCheck,     kGpuGdrCheck,       kPciAcsCheck,    kKernelLogCheck,
      kGpuLeftoverProcsCheck, kEnvNcclCheck,      kNetIfnameCheck,
  };
  return kChecks;
}

const CheckInfo* FindCheck(std::string_view id) {
  for (const CheckInfo& c : Registry()) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

}  // namespace sl::preflight
