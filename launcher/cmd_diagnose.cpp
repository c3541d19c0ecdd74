// `safe-launch diagnose [--json] [--explain] FILE|DIR|- ...`: the post-mortem of a failed or hung
// job from its logs, NCCL debug files, kernel logs, torchrun error files, bundles or run
// directories, and `--flight-recorder DIR|FILES...`: every rank's Flight Recorder dump matched
// across ranks (text, --json, --html FILE). A directory input is also searched for dumps, and
// what the Flight Recorder analysis finds ranks with the log rules' causes (one engine).
// Exit 0 when a cause was named, 1 when only symptoms or nothing were found (a healthy set of
// dumps too), 2 on usage errors (an input that cannot be read, no dump where dumps were named).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/file_writer.h"
#include "diagnose/flight_recorder/analysis.h"
#include "diagnose/flight_recorder/report.h"
#include "diagnose/ingest.h"
#include "diagnose/report.h"
#include "launcher/commands.h"

namespace sl::launcher {
namespace {

struct DiagnoseArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> flight_recorder;
  bool json = false;
  bool explain = false;
  std::string html;
  int threads = 0;
};

// The Flight Recorder's causes as claims for the engine. Its entity is a sentence ("node gpu07
// (ranks 56-63)", "rank 5"): kept whole in the field it starts with.
std::vector<diagnose::CauseClaim> ClaimsOf(const std::vector<diagnose::fr::Cause>& causes) {
  std::vector<diagnose::CauseClaim> claims;
  for (const auto& c : causes) {
    diagnose::CauseClaim claim{.source = "flight_recorder",
                               .rule = "fr." + c.category,
                               .category = c.category,
                               .confidence = c.confidence,
                               .why = c.message};
    if (c.entity.rfind("node", 0) == 0) {
      claim.entity.node = c.entity;
    } else {  // "rank 5", "ranks 3, 9-11 on gpu01": the report prints "rank " itself
      const auto space = c.entity.find(' ');
      claim.entity.rank = space == std::string::npos ? c.entity : c.entity.substr(space + 1);
    }
    for (const auto& e : c.evidence) {
      claim.evidence.push_back(
          {e.file, static_cast<std::uint64_t>(std::max<std::int64_t>(e.line, 0)), e.text, ""});
    }
    claims.push_back(std::move(claim));
  }
  return claims;
}

// --flight-recorder: the dumps alone, with the analysis' own report (grid, per-rank state).
int RunFlightRecorder(const DiagnoseArgs& args) {
  diagnose::fr::FrOptions options;
  options.threads = args.threads;
  auto analysis = diagnose::fr::AnalyzeFlightRecorder(args.flight_recorder, options);
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
  return causes.empty() ? exit_code::kChecksFailed : exit_code::kOk;
}

// Dumps found in the directory inputs (a bundle's fr/, a run root) become claims; none is fine.
std::vector<diagnose::CauseClaim> FlightRecorderClaims(const DiagnoseArgs& args) {
  const RootedFileReader host("");
  std::vector<std::string> dirs;
  for (const auto& in : args.inputs) {
    if (in != "-" && host.IsDir(in)) dirs.push_back(in);
  }
  if (dirs.empty()) return {};
  diagnose::fr::FrOptions options;
  options.threads = args.threads;
  auto analysis = diagnose::fr::AnalyzeFlightRecorder(dirs, options);
  if (!analysis || analysis->dumps.empty()) return {};
  return ClaimsOf(diagnose::fr::FlightRecorderCauses(*analysis));
}

int RunDiagnose(const DiagnoseArgs& args) {
  if (!args.flight_recorder.empty()) {
    if (!args.inputs.empty()) {
      std::fprintf(stderr,
                   "safe-launch diagnose: --flight-recorder takes the dumps alone; to join them "
                   "with logs, give their directory as an input instead\n");
      return exit_code::kUsage;
    }
    return RunFlightRecorder(args);
  }
  if (args.inputs.empty()) {
    std::fprintf(stderr,
                 "safe-launch diagnose: name the logs, bundles or run directories to read (- for "
                 "standard input), or --flight-recorder DIR\n");
    return exit_code::kUsage;
  }
  if (std::count(args.inputs.begin(), args.inputs.end(), "-") > 1) {
    std::fprintf(stderr, "safe-launch diagnose: '-' (standard input) can be given once\n");
    return exit_code::kUsage;
  }
  const auto claims = FlightRecorderClaims(args);
  auto run = diagnose::DiagnoseInputs(args.inputs, stdin, claims);
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
  sub.add_option("--flight-recorder,--fr", args->flight_recorder,
                 "Flight Recorder dumps alone: files (<prefix><rank>, .pkl, .json) or directories "
                 "(searched 4 levels deep, e.g. a run root or a hang bundle)")
      ->expected(1, -1);
  sub.add_option("--html", args->html,
                 "With --flight-recorder: also write the self-contained diagnosis.html here");
  sub.add_option("--threads", args->threads,
                 "Flight Recorder reader threads (default: one per core)")
      ->check(CLI::Range(0, 64));
  sub.add_option("inputs", args->inputs,
                 "Job output, NCCL_DEBUG_FILE files, kernel logs, torchrun error files, a bundle "
                 "(directory or .tar.gz) or a run directory; - for standard input");
  sub.callback([args, exit_code] { *exit_code = RunDiagnose(*args); });
}

}  // namespace sl::launcher
