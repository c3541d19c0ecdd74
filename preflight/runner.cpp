#include "preflight/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

std::vector<std::string> AllIds() {
  std::vector<std::string> ids;
  for (const auto& c : Registry()) ids.emplace_back(c.id);
  return ids;
}

/// An id selects a check when equal, or when it is a group prefix ("ib" or "ib." for ib.*).
Status ValidateIds(const std::vector<std::string>& ids, const char* flag) {
  for (const auto& pattern : ids) {
    bool any = false;
    for (const auto& c : Registry()) any = any || IdSelects(pattern, c.id);
    if (!any) {
      std::string hint = ClosestMatch(pattern, AllIds());
      return MakeError(
          "unknown check id '" + pattern + "'", flag,
          hint.empty() ? "see `safe-launch preflight --list`" : "did you mean '" + hint + "'?");
    }
  }
  return OkStatus();
}

bool AnySelects(const std::vector<std::string>& patterns, std::string_view id) {
  for (const auto& p : patterns) {
    if (IdSelects(p, id)) return true;
  }
  return false;
}

// A --sysroot must be a readable tree: an unreadable one would look like a node with nothing.
Status ValidateSysroot(const std::string& sysroot) {
  if (sysroot.empty()) return OkStatus();
  RootedFileReader fs(sysroot);
  if (!fs.IsDir("/")) {
    return MakeError("sysroot is not a readable directory", sysroot,
                     "pass a fixture tree laid out like / (sys/, proc/, dev/)");
  }
  if (::access(sysroot.c_str(), R_OK | X_OK) != 0) {
    return MakeError("sysroot is not readable", sysroot, "check the directory's permissions");
  }
  return OkStatus();
}

// Whether `check` runs in this mode (before or after a job) and selection.
bool Runs(const CheckInfo& check, const PreflightOptions& options) {
  if (!(options.epilog ? check.InEpilog() : check.BeforeJob())) return false;
  return options.only.empty() || AnySelects(options.only, check.id);
}

// An after-job check named in --only before a job would select nothing: say where it runs.
Status ValidateMode(const PreflightOptions& options) {
  if (options.epilog) return OkStatus();
  for (const auto& id : options.only) {
    const CheckInfo* c = FindCheck(id);
    if (c && !c->BeforeJob()) {
      return MakeError("'" + id + "' runs after a job only (it looks for what a job left behind)",
                       "--only", "run it as `safe-launch preflight --slurm --epilog`");
    }
  }
  return OkStatus();
}

}  // namespace

Result<PreflightReport> RunPreflight(const PreflightOptions& options, const Environment& env) {
  if (auto s = ValidateIds(options.only, "--only"); !s.ok()) return s.error();
  if (auto s = ValidateIds(options.waive, "--waive"); !s.ok()) return s.error();
  auto start = std::chrono::steady_clock::now();
  if (auto s = ValidateMode(options); !s.ok()) return s.error();
  if (auto s = ValidateSysroot(options.sysroot); !s.ok()) return s.error();
  RootedFileReader fs(options.sysroot);
  GatherOptions gather;
  for (const auto& check : Registry()) {
    // The /proc/*/fd scan only for a check that decides on it.
    if (Runs(check, options) && !check.BeforeJob()) gather.gpu_holders = true;
  }
  auto report = RunPreflightOnFacts(options, env, GatherNodeFacts(fs, gather));
  if (report.ok()) {
    report->elapsed_ms =  // gathering included
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  return report;
}

Result<PreflightReport> RunPreflightOnFacts(const PreflightOptions& options, const Environment& env,
                                            NodeFacts facts) {
  auto start = std::chrono::steady_clock::now();
  if (auto s = ValidateIds(options.only, "--only"); !s.ok()) return s.error();
  if (auto s = ValidateIds(options.waive, "--waive"); !s.ok()) return s.error();
  if (auto s = ValidateMode(options); !s.ok()) return s.error();
  if (auto s = ValidateSysroot(options.sysroot); !s.ok()) return s.error();
  PreflightReport report;
  report.sysroot = options.sysroot;
  report.facts = std::move(facts);
  report.hostname = report.facts.hostname;

  CheckContext ctx{report.facts, env, options.thresholds, options.verbose,
                   options.kernel_log_since_us};
  for (const auto& check : Registry()) {
    if (!Runs(check, options)) continue;
    std::vector<Finding> found;
    try {
      found = check.run(ctx);
    } catch (const std::exception& e) {
      // Checks return errors as findings; this only guards against a bug taking preflight down.
      Finding f;
      f.check_id = check.id;
      f.entity = "node";
      f.outcome = Outcome::kError;
      f.code = "preflight/check_crashed";
      f.message = std::string("check failed unexpectedly: ") + e.what();
      f.next_step = "report this as a safe-launch bug with `safe-launch preflight --json`";
      found.push_back(std::move(f));
    }
    const bool waived = AnySelects(options.waive, check.id);
    for (auto& f : found) {
      if (f.check_id.empty()) f.check_id = check.id;
      f.waived = waived && f.outcome != Outcome::kPass;
      report.findings.push_back(std::move(f));
    }
  }
  report.verdict = Worst(report.findings);
  // A skip found nothing wrong (no RDMA port to check, no GPUs): a node whose worst finding is a
  // skip is healthy, so its verdict is pass, not SKIP.
  if (report.verdict == Outcome::kSkip) report.verdict = Outcome::kPass;
  report.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return report;
}

namespace {

const char* Colour(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "\033[32m";
    case Outcome::kWarn:
      return "\033[33m";
    case Outcome::kFail:
      return "\033[1;31m";
    case Outcome::kSkip:
      return "\033[2m";
    case Outcome::kError:
      return "\033[35m";
  }
  return "";
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string RenderText(const PreflightReport& report, bool verbose, bool color) {
  std::string out;
  std::size_t id_w = 8, entity_w = 6;
  for (const auto& f : report.findings) {
    id_w = std::max(id_w, f.check_id.size());
    entity_w = std::max(entity_w, std::min<std::size_t>(f.entity.size(), 24));
  }
  int counts[5] = {0, 0, 0, 0, 0};
  int waived = 0;
  for (const auto& f : report.findings) {
    // A waived finding does not count as its outcome (the verdict ignores it too).
    (f.waived ? waived : counts[static_cast<int>(f.outcome)])++;
    std::string tag = f.waived ? "WAIVED" : Upper(OutcomeName(f.outcome));
    if (color) tag = std::string(Colour(f.outcome)) + fmt::format("{:<6}", tag) + "\033[0m";
    out += fmt::format("{:<6} {:<{}} {:<{}} {}\n", tag, f.check_id, id_w, f.entity, entity_w,
                       f.message);
    const bool show_detail = verbose || f.outcome == Outcome::kFail ||
                             f.outcome == Outcome::kError || f.outcome == Outcome::kWarn;
    if (show_detail && !f.next_step.empty() && f.outcome != Outcome::kPass) {
      out += fmt::format("       fix: {}\n", f.next_step);
    }
    if (verbose) {
      if (!f.code.empty()) out += fmt::format("       code: {}\n", f.code);
      for (const auto& e : f.evidence) out += fmt::format("       {} = {}\n", e.source, e.value);
    }
  }
  std::string where = report.sysroot.empty()
                          ? report.hostname
                          : report.hostname + " (sysroot " + report.sysroot + ")";
  std::string verdict = Upper(OutcomeName(report.verdict));
  if (color) verdict = std::string(Colour(report.verdict)) + verdict + "\033[0m";
  out += fmt::format(
      "preflight {}: {} — {} pass, {} warn, {} fail, {} error, {} skip{} in {:.1f} ms\n", where,
      verdict, counts[0], counts[1], counts[2], counts[4], counts[3],
      waived ? fmt::format(", {} waived", waived) : "", report.elapsed_ms);
  return out;
}

nlohmann::json ReportToJson(const PreflightReport& report) {
  nlohmann::json j;
  j["schema"] = "safe-launch.preflight/1";
  j["host"] = report.hostname;
  j["sysroot"] = report.sysroot;
  j["verdict"] = OutcomeName(report.verdict);
  j["elapsed_ms"] = report.elapsed_ms;
  j["findings"] = report.findings;
  j["facts"] = report.facts;
  return j;
}

}  // namespace sl::preflight
