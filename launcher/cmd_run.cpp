// Placeholder until the 'run' subcommand lands.
#include <cstdio>

#include "common/exit_codes.h"
#include "launcher/commands.h"

namespace sl::launcher {

void SetupRun(CLI::App& sub, int* exit_code) {
  sub.allow_extras();
  sub.callback([exit_code] {
    std::fprintf(stderr, "safe-launch: 'run' is not available in this build yet\n");
    *exit_code = exit_code::kInternal;
  });
}

}  // namespace sl::launcher
