#include <cstdio>

#include "common/exit_codes.h"
#include "launcher/commands.h"

namespace sl::launcher {

void SetupVersion(CLI::App& sub, int* exit_code) {
  sub.callback([exit_code] {
    std::printf("safe-launch %s\n", SAFE_LAUNCH_VERSION);
    *exit_code = exit_code::kOk;
  });
}

}  // namespace sl::launcher
