// safe-launch entry point: picks a subcommand from the table and returns its exit status.
// `safe-launch [OPTIONS] -- CMD ARGS...` is shorthand for `safe-launch run [OPTIONS] -- CMD`.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "common/exit_codes.h"
#include "diagnose/signatures.h"
#include "launcher/commands.h"
#include "launcher/config.h"

namespace {

bool IsCommandName(const std::string& arg) {
  for (const auto& c : sl::launcher::Commands()) {
    if (arg == c.name) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Top-level flags of safe-launch itself stay with it; anything else first is a job's `run`.
  const bool top_flag =
      !args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "--version");
  if (!args.empty() && !IsCommandName(args[0]) && !top_flag) {
    // `safe-launch prefligth` would otherwise start a job named prefligth on every node.
    if (std::string near = sl::launcher::MisspeltCommand(args[0], sl::ProcessEnvironment());
        !near.empty()) {
      std::fprintf(stderr,
                   "safe-launch: '%s' is not a subcommand; did you mean '%s'? (to run a program "
                   "of that name as the job: safe-launch -- %s ...)\n",
                   args[0].c_str(), near.c_str(), args[0].c_str());
      return sl::exit_code::kUsage;
    }
    args.insert(args.begin(), "run");
  }
  if (args.empty()) args.push_back("--help");
  // The hang scanner's and the log reader's skip scan: `scalar` keeps the vector kernel off
  // (bench/supervise.sh and bench/diagnose.sh compare both in one run).
  if (const char* scan = std::getenv("SAFE_LAUNCH_SCAN"); scan != nullptr && *scan != '\0') {
    const std::string_view v(scan);
    if (v == "scalar") {
      sl::diagnose::LineMatcher::PreferScalarScan(true);
    } else if (v != "auto") {
      std::fprintf(stderr,
                   "safe-launch: SAFE_LAUNCH_SCAN=%s is not 'scalar' or 'auto'; using 'auto' "
                   "(unset it, or set scalar to keep the vector scan off)\n",
                   scan);
    }
  }

  CLI::App app{"safe-launch: preflight, tune, warm up and supervise multi-node PyTorch/NCCL jobs",
               "safe-launch"};
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", std::string("safe-launch ") + SAFE_LAUNCH_VERSION);
  int exit_code = sl::exit_code::kOk;
  for (const auto& c : sl::launcher::Commands()) {
    c.setup(*app.add_subcommand(c.name, c.summary), &exit_code);
  }
  sl::launcher::ValidateEveryValue(app);
  // CLI11 wants argv order reversed when given a vector.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? sl::exit_code::kOk : sl::exit_code::kUsage;
  } catch (const std::exception& e) {
    // Library code returns errors as values; what still escapes is a bug of ours. Say so and exit
    // with EX_SOFTWARE instead of abort()'s 134 (a job's own status comes back through the
    // supervisor, whose hooks are guarded).
    std::fprintf(stderr, "safe-launch: internal error: %s (please report it)\n", e.what());
    return sl::exit_code::kInternal;
  }
  return exit_code;
}
