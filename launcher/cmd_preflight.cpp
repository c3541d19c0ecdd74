// Placeholder until the 'preflight' subcommand lands.
#include <cstdio>

#include "common/exit_codes.h"
#include "launcher/commands.h"

namespace sl::launcher {

void SetupPreflight(CLI::App& sub, int* exit_code) {
  sub.allow_extras();
  sub.callback([exit_code] {
    std::fprintf(stderr, "safe-launch: 'preflight' is not available in this build yet\n");
    *exit_code = exit_code::kInternal;
  });
}

}  // namespace sl::launcher
