// `safe-launch diagnose --flight-recorder DIR|FILES...`: reads every rank's Flight Recorder dump,
// matches them across ranks and prints which rank or node held the job, in which collective, why
// and what to change (text, --json, --html FILE). The analysis is a library call
// (diagnose/flight_recorder/analysis.h) so the log diagnosis can take it as one more source.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/file_writer.h"
#include "diagnose/flight_recorder/analysis.h"
#include "diagnose/flight_recorder/report.h"
#include "launcher/commands.h"

namespace sl::launcher {
namespace {

/// A stuck collective (or a desync) was found: the job's failure is explained, not healthy.
constexpr int kFaultFound = 1;

struct DiagnoseFrArgs {
  std::vector<std::string> paths;
  bool json = false;
  std::string html;
  int threads = 0;
};

int Run(const DiagnoseFrArgs& args) {
  if (args.paths.empty()) {
    std::fprintf(stderr,
                 "safe-launch diagnose: name the dumps: --flight-recorder DIR|FILES... "
                 "(a hang bundle's fr/ folder, or torch's $TORCH_FR_DUMP_TEMP_FILE<rank> files)\n");
    return exit_code::kUsage;
  }
  diagnose::fr::FrOptions options;
  options.threads = args.threads;
  auto analysis = diagnose::fr::AnalyzeFlightRecorder(args.paths, options);
  if (!analysis) {
    std::fprintf(stderr, "safe-launch diagnose: %s\n", analysis.error().Describe().c_str());
    return exit_code::kUsage;
  }
  const auto& a = *analysis;
  auto causes = diagnose::fr::FlightRecorderCauses(a);
  if (args.json) {
    std::printf("%s\n", diagnose::fr::DiagnosisJson(a, causes).dump(2).c_str());
  } else {
    std::fputs(diagnose::fr::DiagnosisText(a, causes).c_str(), stdout);
  }
  if (!args.html.empty()) {
    auto st = DiskFileWriter().WriteAtomic(args.html, diagnose::fr::DiagnosisHtml(a, causes), 0644);
    if (!st) {
      std::fprintf(stderr, "safe-launch diagnose: --html: %s\n", st.error().Describe().c_str());
      return exit_code::kInternal;
    }
  }
  if (a.dumps.empty()) {
    std::fprintf(stderr,
                 "safe-launch diagnose: no readable Flight Recorder dump (%zu unreadable)\n",
                 a.errors.size());
    return exit_code::kUsage;
  }
  return causes.empty() ? exit_code::kOk : kFaultFound;
}

}  // namespace

void SetupDiagnoseFlightRecorder(CLI::App& sub, int* exit_code) {
  auto args = std::make_shared<DiagnoseFrArgs>();
  sub.add_option("--flight-recorder,--fr", args->paths,
                 "Flight Recorder dumps: files (<prefix><rank>, .pkl, .json) or directories "
                 "(searched 4 levels deep, e.g. a run root or a hang bundle)")
      ->expected(1, -1);
  sub.add_flag("--json", args->json, "print safe-launch.diagnosis/1 JSON");
  sub.add_option("--html", args->html, "also write the self-contained diagnosis.html here");
  sub.add_option("--threads", args->threads, "reader threads (default: one per core)")
      ->check(CLI::Range(0, 64));
  sub.callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sl::launcher
