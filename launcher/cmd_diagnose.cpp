// `safe-launch diagnose [--json] [--explain] FILE|DIR|- ...`: the post-mortem of a failed or hung
// job from its logs, NCCL debug files, kernel logs, torchrun error files, bundles or run
// directories, and `--flight-recorder DIR|FILES...`: every rank's Flight Recorder dump matched
// across ranks (text, --json, --html FILE). A directory input is also searched for dumps, and
// what the Flight Recorder analysis finds ranks with the log rules' causes (one engine).
// Exit 0 when a cause was named, 1 when only symptoms or nothing were found (a healthy set of
// dumps too), 2 on usage errors (an input that cannot be read, no dump where dumps were named).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/file_writer.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "diagnose/flight_recorder/analysis.h"
#include "diagnose/flight_recorder/dump.h"
#include "diagnose/flight_recorder/report.h"
#include "diagnose/ingest.h"
#include "diagnose/job_report.h"
#include "diagnose/report.h"
#include "diagnose/stacks_analysis.h"
#include "launcher/commands.h"
#include "launcher/remediation.h"

namespace sl::launcher {
namespace {

// Reading many or large inputs takes a while: on a terminal (stderr), one line that is
// rewritten at most 10 times a second and erased at the end; nothing when stderr is not one.
class TermProgress {
 public:
  TermProgress() : on_(::isatty(2) == 1) {}
  diagnose::ReadProgress Callback() {
    if (!on_) return {};
    return [this](const std::string& file, std::uint64_t files, std::uint64_t bytes) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_ < std::chrono::milliseconds(100)) return;
      last_ = now;
      shown_ = true;
      std::string name = file.size() > 60 ? "..." + file.substr(file.size() - 57) : file;
      std::fprintf(stderr, "\r\x1b[Kdiagnose: %llu files, %s read; %s",
                   static_cast<unsigned long long>(files), HumanBytes(bytes).c_str(),
                   Printable(name, 80).c_str());
    };
  }
  void Done() {
    if (shown_) std::fputs("\r\x1b[K", stderr);
  }

 private:
  bool on_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

struct DiagnoseArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> flight_recorder;
  bool json = false;
  bool explain = false;
  std::string html;
  std::string out_dir;
  bool no_write = false;
  bool features = false;
  bool priors = false;
  int threads = 0;
};

// The Flight Recorder's causes as claims for the engine. Its entity is a sentence ("node gpu07
// (ranks 56-63)", "rank 5"): kept whole in the field it starts with.
std::vector<diagnose::CauseClaim> ClaimsOf(const std::vector<diagnose::fr::Cause>& causes) {
  std::vector<diagnose::CauseClaim> claims;
  for (const auto& c : causes) {
    // The category by the analysis' code; a cause without a mapped code keeps its own.
    const auto* row = diagnose::FindFactCategory(diagnose::FlightRecorderCategories(), c.rule);
    diagnose::CauseClaim claim{.source = "flight_recorder",
                               .rule = c.rule.empty() ? "fr." + c.category : c.rule,
                               .category = row != nullptr ? std::string(row->category) : c.category,
                               .confidence = c.confidence,
                               .entity = {},
                               .evidence = {},
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
    std::printf("%s\n", JsonText(diagnose::fr::DiagnosisJson(a, causes)).c_str());
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

// A file named on the command line that is a Flight Recorder pickle: the PROTO opcode (0x80)
// first and a rank at the end of its name, as torch names its dumps (`fr_rank_0.pkl` is not a
// log whose lines could be read).
bool IsNamedDump(const RootedFileReader& host, const std::string& in) {
  if (in == "-" || host.IsDir(in)) return false;
  const std::size_t slash = in.find_last_of('/');
  if (diagnose::fr::RankFromFileName(slash == std::string::npos ? in : in.substr(slash + 1)) < 0) {
    return false;
  }
  auto head = host.ReadFile(in, 1);
  return head.ok() && !head->empty() && static_cast<unsigned char>((*head)[0]) == 0x80;
}

// The inputs, looked at once: what the log reader reads, and the Flight Recorder pickles named
// on their own (the analysis reads those, never the log reader).
struct InputSplit {
  std::vector<std::string> logs;
  std::vector<std::string> dumps;
};

InputSplit SplitInputs(const DiagnoseArgs& args) {
  const RootedFileReader host("");
  InputSplit out;
  for (const auto& in : args.inputs) (IsNamedDump(host, in) ? out.dumps : out.logs).push_back(in);
  return out;
}

// Dumps found in the directory inputs (a bundle's fr/, a run root) and the dumps named on their
// own; none is fine (nullopt).
std::optional<diagnose::fr::FrAnalysis> FlightRecorderOfInputs(const DiagnoseArgs& args,
                                                               const InputSplit& inputs) {
  const RootedFileReader host("");
  std::vector<std::string> paths = inputs.dumps;
  for (const auto& in : inputs.logs) {
    if (in != "-" && host.IsDir(in)) paths.push_back(in);
  }
  if (paths.empty()) return std::nullopt;
  diagnose::fr::FrOptions options;
  options.threads = args.threads;
  auto analysis = diagnose::fr::AnalyzeFlightRecorder(paths, options);
  if (!analysis || analysis->dumps.empty()) return std::nullopt;
  return std::move(*analysis);
}

// The ranks' stacks in the bundles of the directory inputs (a run root, a bundle) and the stacks
// pasted into the file inputs, as claims: who is elsewhere while the others wait
// (diagnose/stacks_analysis.h). None is fine.
std::vector<diagnose::CauseClaim> StacksOfInputs(const InputSplit& inputs) {
  const RootedFileReader host("");
  std::vector<std::string> dirs;
  std::vector<diagnose::CauseClaim> pasted;
  for (const auto& in : inputs.logs) {
    if (in == "-") continue;
    if (host.IsDir(in)) {
      dirs.push_back(in);
      continue;
    }
    // Stacks pasted into a log file (py-spy or faulthandler output in a report): read again
    // here, only for their stacks, the first 4 MiB of each (a report; a job log is larger).
    auto text = host.ReadFile(in, 4u << 20);
    if (!text.ok()) continue;  // the log reader names an unreadable input itself
    for (auto& c : diagnose::PastedStacksClaims(*text, in)) pasted.push_back(std::move(c));
  }
  std::vector<diagnose::CauseClaim> claims;
  if (!dirs.empty()) claims = diagnose::StacksClaims(diagnose::ReadBundleStacks(dirs, host));
  for (auto& c : pasted) claims.push_back(std::move(c));
  return claims;
}

// Where diagnosis.{md,json,html} go: --out DIR, else the single input when it is a run root
// (children that are node run directories), else nowhere ("").
std::string ReportDir(const DiagnoseArgs& args) {
  if (args.no_write) return "";
  if (!args.out_dir.empty()) return args.out_dir;
  const RootedFileReader host("");
  if (args.inputs.size() == 1 && diagnose::IsRunRoot(args.inputs[0], host)) return args.inputs[0];
  return "";
}

// A run root owned by someone else (root diagnosing a user's job) is not written into: files
// of ours in their directory would be theirs to trip over. Only a chosen --out is written.
std::string ForeignOwner(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "";
  if (st.st_uid == ::geteuid()) return "";
  return fmt::format("{} belongs to uid {}, not to this user (uid {})", dir, st.st_uid,
                     ::geteuid());
}

// diagnosis.{json,md,html} into `dir`. A failure is said on stderr; the diagnosis was printed
// already and the exit status stays what the diagnosis decides.
void WriteReports(const std::string& dir, bool chosen, const diagnose::DiagnoseRun& run,
                  const diagnose::fr::FrAnalysis* fr, bool explain, const FileWriter& writer) {
  if (!chosen) {
    if (std::string why = ForeignOwner(dir); !why.empty()) {
      std::fprintf(stderr,
                   "safe-launch diagnose: not writing diagnosis.{md,json,html}: %s (--out DIR "
                   "writes them elsewhere)\n",
                   why.c_str());
      return;
    }
  }
  if (chosen) {
    std::error_code ec;  // --out names a directory that may not exist yet
    std::filesystem::create_directories(dir, ec);
  }
  // A remediation already recorded in this run root (remediation.json) stays in the reports.
  const auto remediation = RootedFileReader("").ReadFile(dir + "/remediation.json", 1 << 20);
  const nlohmann::json rem =
      remediation.ok() ? nlohmann::json::parse(*remediation, nullptr, false) : nlohmann::json();
  std::string md = diagnose::JobDiagnosisMarkdown(run);
  std::string html = diagnose::JobDiagnosisHtml(run, fr);
  if (rem.is_object()) {
    md = WithRemediationMarkdown(std::move(md), rem);
    html = WithRemediationHtml(std::move(html), rem);
  }
  const std::pair<const char*, std::string> files[] = {
      {"diagnosis.json", JsonText(diagnose::JobDiagnosisJson(run, explain)) + "\n"},
      {"diagnosis.md", std::move(md)},
      {"diagnosis.html", std::move(html)},
  };
  for (const auto& [name, content] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    if (auto st = writer.WriteAtomic(path, content, 0644); !st) {
      std::fprintf(stderr, "safe-launch diagnose: %s not written: %s\n", name,
                   st.error().Describe().c_str());
      return;
    }
  }
  std::fprintf(stderr, "safe-launch diagnose: wrote diagnosis.{md,json,html} in %s\n", dir.c_str());
}

// --features: what the model scores, for tools/fit_diagnosis.py (a developer flag).
void PrintFeatures(const diagnose::DiagnoseRun& run, bool json) {
  if (json) {
    std::printf("%s\n", JsonText(diagnose::FeaturesOnlyJson(run.diagnosis.features), -1).c_str());
    return;
  }
  for (const auto& f : run.diagnosis.features) std::printf("%s\t%g\n", f.id.c_str(), f.value);
}

// --priors: the vocabulary's pseudo-observations the fit adds to the train split.
int PrintPriors() {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& p : diagnose::PriorExamples()) {
    nlohmann::json f = nlohmann::json::object();
    for (const auto& [id, value] : p.features) f[id] = value;
    nlohmann::json one = {{"id", p.id}, {"category", p.category}, {"features", std::move(f)}};
    if (p.weight >= 0) one["weight"] = p.weight;
    all.push_back(std::move(one));
  }
  std::printf(
      "%s\n",
      JsonText(nlohmann::json{{"schema", "safe-launch.priors/1"}, {"priors", all}}, -1).c_str());
  return exit_code::kOk;
}

// The diagnosis of valid inputs: printed (when `print`), and diagnosis.{json,md,html} written
// through `writer` where ReportDir says.
int DiagnoseAndWrite(const DiagnoseArgs& args, const FileWriter& writer, bool print) {
  const InputSplit inputs = SplitInputs(args);
  const auto fr = FlightRecorderOfInputs(args, inputs);
  auto claims =
      fr ? ClaimsOf(diagnose::fr::FlightRecorderCauses(*fr)) : std::vector<diagnose::CauseClaim>{};
  for (auto& c : StacksOfInputs(inputs)) claims.push_back(std::move(c));
  TermProgress progress;
  auto run = diagnose::DiagnoseInputs(inputs.logs, stdin, claims,
                                      print ? progress.Callback() : diagnose::ReadProgress{});
  progress.Done();
  if (!run.ok()) {
    std::fprintf(stderr, "safe-launch diagnose: %s\n", run.error().Describe().c_str());
    return exit_code::kUsage;
  }
  if (fr) run->read.dumps = fr->dumps.size();
  if (args.features) {
    PrintFeatures(*run, args.json);
    return exit_code::kOk;
  }
  if (print && args.json) {
    std::printf("%s\n", JsonText(diagnose::JobDiagnosisJson(*run, args.explain)).c_str());
  } else if (print) {
    std::fputs(diagnose::DiagnosisText(run->diagnosis, run->read, args.explain).c_str(), stdout);
  }
  std::fflush(stdout);
  if (const std::string dir = ReportDir(args); !dir.empty()) {
    WriteReports(dir, !args.out_dir.empty(), *run, fr ? &*fr : nullptr, args.explain, writer);
  }
  return run->diagnosis.named() ? exit_code::kOk : exit_code::kChecksFailed;
}

int RunDiagnose(const DiagnoseArgs& args) {
  if (args.priors) return PrintPriors();
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
  return DiagnoseAndWrite(args, DiskFileWriter(), /*print=*/true);
}

}  // namespace

int DiagnoseRunRoot(const std::string& root, const FileWriter& writer) {
  DiagnoseArgs args;
  args.inputs = {root};
  return DiagnoseAndWrite(args, writer, /*print=*/false);
}

void SetupDiagnose(CLI::App& sub, int* exit_code) {
  auto args = std::make_shared<DiagnoseArgs>();
  sub.add_flag("--json", args->json, "Print the diagnosis as JSON (safe-launch.diagnosis/1)");
  sub.add_flag("--explain", args->explain,
               "Show every feature the model scored (its weight per cause shown and its source) "
               "and which rule fired on which lines");
  sub.add_flag("--features", args->features,
               "Developer: print the model's features of the inputs (with --json: "
               "safe-launch.features/1), what tools/fit_diagnosis.py fits on; writes nothing");
  sub.add_flag("--priors", args->priors,
               "Developer: print the vocabulary's pseudo-observations the fit adds (JSON)");
  auto* fr =
      sub.add_option(
             "--flight-recorder,--fr", args->flight_recorder,
             "Flight Recorder dumps alone: files (<prefix><rank>, .pkl, .json) or directories "
             "(searched 4 levels deep, e.g. a run root or a hang bundle)")
          ->expected(1, -1);
  sub.add_option("--html", args->html,
                 "With --flight-recorder: also write the self-contained diagnosis.html here")
      ->needs(fr);
  sub.add_flag("--no-write", args->no_write,
               "Do not write diagnosis.{md,json,html} into the run root");
  sub.add_option("--out", args->out_dir,
                 "Write diagnosis.{md,json,html} into DIR (default: the run root, when the one "
                 "input is one)");
  sub.add_option("--threads", args->threads,
                 "Flight Recorder reader threads (default: one per core)")
      ->check(CLI::Range(0, 64));
  sub.add_option("inputs", args->inputs,
                 "Job output, NCCL_DEBUG_FILE files, kernel logs, torchrun error files, a bundle "
                 "(directory or .tar.gz) or a run directory; - for standard input");
  sub.callback([args, exit_code] { *exit_code = RunDiagnose(*args); });
}

}  // namespace sl::launcher
