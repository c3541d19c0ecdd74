// `safe-launch env`: resolve the recipe for this node (or a --sysroot fixture tree) and print the
// plan as sh exports, JSON, or an explained table.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/json_text.h"
#include "common/log.h"
#include "common/node_facts.h"
#include "launcher/commands.h"
#include "recipes/plan.h"
#include "recipes/version_probe.h"
#include "watchdog/run_dir.h"

namespace sl::launcher {
namespace {

struct EnvArgs {
  std::string sysroot;
  std::string recipe;
  std::string format = "sh";
  bool explain = false;
  std::string nccl_version;
  std::string torch_version;
  std::string run_dir;
  std::string python = "/usr/bin/python3";
};

int Fail(const Error& e) {
  std::fprintf(stderr, "safe-launch env: %s\n", e.Describe().c_str());
  return exit_code::kUsage;
}

// The sh line that makes the default run directory when the exports are eval'd; a failure stops a
// `set -e` script there, like a failing `safe-launch env --run-dir` does.
std::string MakeRunDirLine(const std::string& dir) {
  const std::string q = recipes::ShellQuote(dir);
  return "mkdir -p -m 700 -- " + q + " || { echo \"safe-launch env: cannot create the run " +
         "directory \"" + q + "\" (give a writable --run-dir DIR)\" >&2; false; }\n";
}

int Run(const EnvArgs& args) {
  const Environment env = ProcessEnvironment();
  if (!args.sysroot.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(args.sysroot, ec)) {
      return Fail(MakeError("not a readable directory", args.sysroot,
                            "give the root of a fixture tree (it holds sys/, proc/, ...)"));
    }
  }
  RootedFileReader fs(args.sysroot);
  NodeFacts facts = GatherNodeFacts(fs, {.kernel_log = false});  // no check reads the kernel log

  recipes::DetectOptions detect;
  detect.python = args.python;
  if (!args.nccl_version.empty()) detect.nccl_override = args.nccl_version;
  if (!args.torch_version.empty()) detect.torch_override = args.torch_version;
  auto versions = recipes::DetectVersions(detect, env);
  if (!versions.ok()) return Fail(versions.error());

  std::error_code ec;
  std::string cwd = std::filesystem::current_path(ec).string();
  std::string host = facts.hostname.empty() ? log::HostName() : facts.hostname;
  recipes::ResolveOptions options;
  options.recipe = args.recipe;
  options.versions = *versions;
  options.conf = nccl::ReadConfFiles(fs, env, versions->nccl);
  options.run_dir = watchdog::DefaultRunDir(args.run_dir, env, cwd, host,
                                            std::chrono::system_clock::now(), ::getpid());
  options.run_dir = std::filesystem::absolute(options.run_dir, ec).lexically_normal().string();
  while (options.run_dir.size() > 1 && options.run_dir.back() == '/') options.run_dir.pop_back();

  auto plan = recipes::ResolveForNode(options, env, facts);
  if (!plan.ok()) return Fail(plan.error());

  if (args.explain) {
    std::cout << recipes::PlanToText(*plan);
  } else if (args.format == "json") {
    std::cout << JsonText(recipes::PlanToJson(*plan)) << "\n";
  } else {
    // The exports point NCCL and torch at files in the run directory: it must exist before the
    // job starts or the logs and Flight Recorder dumps are silently lost. A --run-dir the user
    // named is made here, and without it nothing is printed and the exit status says so (as
    // `run` does). The default one is new on every call (UTC time and pid outside Slurm): made
    // here it would leave an empty directory behind each look at the exports, so the printed
    // code makes it when it is eval'd, in the job that uses it.
    if (!args.run_dir.empty()) {
      std::filesystem::create_directories(plan->run_dir, ec);
      if (ec) {
        return Fail(
            MakeError("cannot create the run directory the exports point at: " + ec.message(),
                      plan->run_dir, "give a writable --run-dir DIR"));
      }
    } else {
      std::cout << MakeRunDirLine(plan->run_dir);
    }
    std::cout << recipes::PlanToShell(*plan);
  }
  // --explain already lists the conflicts; the other formats go to a file or eval, so say it here.
  for (const auto& c : args.explain ? std::vector<recipes::Conflict>{} : plan->conflicts) {
    std::fprintf(stderr, "safe-launch env: %s: %s=%s: %s (fix: %s)\n",
                 c.warning_only ? "warning" : "conflict", c.name.c_str(), c.value.c_str(),
                 c.message.c_str(), c.fix.c_str());
  }
  return exit_code::kOk;
}

}  // namespace

void SetupEnv(CLI::App& sub, int* exit_code) {
  auto args = std::make_shared<EnvArgs>();
  sub.add_option("--sysroot", args->sysroot, "Read node facts from this fixture tree");
  sub.add_option("--recipe", args->recipe,
                 "Recipe name (default, infiniband, roce, socket-only, or one in "
                 "$SAFE_LAUNCH_RECIPE_PATH) or path to a .toml file; default: chosen from facts");
  sub.add_option("--format", args->format, "Output: sh (export lines to eval) or json")
      ->check(CLI::IsMember({"sh", "json"}));
  sub.add_flag("--explain", args->explain, "Human table: every value with its source and reason");
  sub.add_option("--nccl-version", args->nccl_version,
                 "NCCL version the job uses (default: detected from the torch wheel or system)");
  sub.add_option("--torch-version", args->torch_version,
                 "torch version the job uses (default: read from --python's site-packages)");
  sub.add_option("--run-dir", args->run_dir,
                 "Run directory for NCCL logs and Flight Recorder dumps (default: "
                 "${SLURM_SUBMIT_DIR:-$PWD}/safe-launch-runs/<job>/<host>)");
  sub.add_option("--python", args->python, "The Python the job runs (for version detection)");
  sub.callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace sl::launcher
