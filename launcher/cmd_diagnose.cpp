// `safe-launch diagnose [--json] [--explain] FILE|DIR|- ...`: the post-mortem of a failed or hung
// job from its logs, NCCL debug files, kernel logs, torchrun error files, bundles or run
// directories. Exit 0 when a cause was named, 1 when only symptoms or nothing were found, 2 on
// usage errors (an input that cannot be read).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "diagnose/ingest.h"
#include "diagnose/report.h"
#include "launcher/commands.h"

namespace sl::launcher {
namespace {

struct DiagnoseArgs {
  std::vector<std::string> inputs;
  bool json = false;
  bool explain = false;
};

int RunDiagnose(const DiagnoseArgs& args) {
  if (std::count(args.inputs.begin(), args.inputs.end(), "-") > 1) {
    std::fprintf(stderr, "safe-launch diagnose: '-' (standard input) can be given once\n");
    return exit_code::kUsage;
  }
  auto run = diagnose::DiagnoseInputs(args.inputs);
  if (!run.ok()) {
    std::fprintf(stderr, "safe-launch diagnose: %s\n", run.error().Describe().c_str());
    return exit_code::kUsage;
  }
  if (args.json) {
    std::printf("%s\n",
                diagnose::DiagnosisJson(run->diagnosis, run->read, args.explain).dump(2).c_str());
  } else {
    std::fputs(diagnose::DiagnosisText(run->diagnosis, run->read, args.explain).c_str(), stdout);
  }
  return run->diagnosis.named() ? exit_code::kOk : exit_code::kChecksFailed;
}

}  // namespace

void SetupDiagnose(CLI::App& sub, int* exit_code) {
  auto args = std::make_shared<DiagnoseArgs>();
  sub.add_flag("--json", args->json, "Print the diagnosis as JSON (safe-launch.diagnosis/1)");
  sub.add_flag("--explain", args->explain, "Show which rule fired on which lines");
  sub.add_option("inputs", args->inputs,
                 "Job output, NCCL_DEBUG_FILE files, kernel logs, torchrun error files, a bundle "
                 "(directory or .tar.gz) or a run directory; - for standard input")
      ->required();
  sub.callback([args, exit_code] { *exit_code = RunDiagnose(*args); });
}

}  // namespace sl::launcher
