// Warm-up phase of `run`. Placeholder until the cross-node warm-up lands: no flags, always "go".
#include "common/exit_codes.h"
#include "launcher/run_phases.h"

namespace sl::launcher {

struct WarmupArgs {};

std::shared_ptr<WarmupArgs> AddWarmupOptions(CLI::App& sub) {
  return std::make_shared<WarmupArgs>();
}

int RunWarmupPhase(const WarmupArgs& args, RunContext& ctx) { return exit_code::kOk; }

}  // namespace sl::launcher
