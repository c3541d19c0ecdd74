// `safe-launch preflight`: check this node (or a --sysroot fixture tree) and print the report.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "launcher/commands.h"
#include "launcher/config.h"
#include "preflight/check.h"
#include "preflight/finding_codes.h"
#include "preflight/runner.h"

namespace sl::launcher {
namespace {

struct PreflightArgs {
  std::string sysroot;
  bool json = false;
  bool list = false;
  bool codes = false;
  bool verbose = false;
  std::vector<std::string> only;
  std::vector<std::string> waive;
  std::string since;
};

/// "90", "90s", "30m", "2h", "1d" -> seconds.
Result<double> ParseDuration(const std::string& text) {
  std::string_view s = Trim(text);
  double mult = 1;
  if (!s.empty() && std::string_view("smhd").find(s.back()) != std::string_view::npos) {
    mult = s.back() == 's' ? 1 : s.back() == 'm' ? 60 : s.back() == 'h' ? 3600 : 86400;
    s.remove_suffix(1);
  }
  auto v = ParseDouble(s, "--since");
  if (!v.ok() || *v < 0) {
    return MakeError("expected a duration such as 30m, 2h or 600, got '" + text + "'", "--since");
  }
  return *v * mult;
}

int Run(const PreflightArgs& args) {
  if (args.list) {
    std::fputs((args.codes ? preflight::CodesText() : ListText()).c_str(), stdout);
    return exit_code::kOk;
  }
  for (const auto& id : args.waive) {
    // The listed warm-up comparisons only run in `run`: say so rather than "unknown id".
    if (IsKnownId(id) && StartsWith(id, "warmup")) {
      std::fprintf(stderr,
                   "safe-launch preflight: --waive: '%s' is a warm-up comparison, which "
                   "preflight does not run (fix: pass it to `safe-launch run --waive`)\n",
                   id.c_str());
      return exit_code::kUsage;
    }
  }
  preflight::PreflightOptions options;
  options.sysroot = args.sysroot;
  options.only = args.only;
  options.waive = args.waive;
  options.verbose = args.verbose;
  if (!args.since.empty()) {
    auto ago = ParseDuration(args.since);
    if (!ago.ok()) {
      std::fprintf(stderr, "safe-launch preflight: %s\n", ago.error().Describe().c_str());
      return exit_code::kUsage;
    }
    // /dev/kmsg stamps records in microseconds since boot: convert "N ago" using /proc/uptime.
    RootedFileReader fs(args.sysroot);
    auto uptime = fs.ReadFile("/proc/uptime");
    auto up = uptime.ok() ? ParseDouble(Split(*uptime, ' ').front(), "/proc/uptime")
                          : Result<double>(uptime.error());
    if (!up.ok()) {
      std::fprintf(stderr, "safe-launch preflight: --since needs /proc/uptime: %s\n",
                   up.error().Describe().c_str());
      return exit_code::kUsage;
    }
    options.kernel_log_since_us = static_cast<std::int64_t>(std::max(0.0, *up - *ago) * 1e6);
  }
  auto report = preflight::RunPreflight(options, ProcessEnvironment());
  if (!report.ok()) {
    std::fprintf(stderr, "safe-launch preflight: %s\n", report.error().Describe().c_str());
    return exit_code::kUsage;
  }
  if (args.json) {
    std::cout << JsonText(preflight::ReportToJson(*report)) << "\n";
  } else {
    const bool color = ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
    std::fputs(preflight::RenderText(*report, args.verbose, color).c_str(), stdout);
  }
  return report->verdict == Outcome::kFail ? exit_code::kChecksFailed : exit_code::kOk;
}

}  // namespace

void SetupPreflight(CLI::App& sub, int* exit_code) {
  auto args = std::make_shared<PreflightArgs>();
  sub.add_option("--sysroot", args->sysroot,
                 "Read /sys, /proc, /dev, /etc under DIR (a fixture tree) instead of this node");
  sub.add_flag("--json", args->json, "Print the report as JSON (schema in doc/manual.md)");
  sub.add_option("--only", args->only, "Run only these check ids or groups (e.g. ib.gid,os)")
      ->delimiter(',');
  sub.add_option("--waive", args->waive, "Do not count fail/warn of these check ids")
      ->delimiter(',');
  sub.add_flag("--list", args->list, "List the checks (and the warm-up comparisons) and exit");
  sub.add_flag("--codes", args->codes,
               "With --list: list every finding code (outcome, meaning, next step) instead");
  sub.add_flag("-v,--verbose", args->verbose, "Show evidence (files and raw values) and fixes");
  sub.add_option("--since", args->since,
                 "kernel.log: only records newer than this (e.g. 2h, 30m); default since boot");
  sub.callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sl::launcher
