#pragma once
// The subcommand table (as ninja's kTools[]): one entry per subcommand; main() stays thin.
// Each Setup function adds its options to the CLI11 subcommand and installs a callback that
// runs the command and stores the process exit status in *exit_code.
#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <string_view>

#include "common/environment.h"
#include "common/file_writer.h"

namespace sl::launcher {

using SetupFn = void (*)(CLI::App& sub, int* exit_code);

struct Command {
  const char* name;
  const char* summary;
  SetupFn setup;
};

void SetupPreflight(CLI::App& sub, int* exit_code);
void SetupEnv(CLI::App& sub, int* exit_code);
void SetupRun(CLI::App& sub, int* exit_code);
void SetupVersion(CLI::App& sub, int* exit_code);
void SetupDiagnose(CLI::App& sub, int* exit_code);
/// `safe-launch diagnose ROOT` without its printout: diagnoses the job run root and writes
/// diagnosis.{json,md,html} there through `writer` (the run's post-mortem, in-process). Returns
/// diagnose's exit status (0: a cause named, 1: only symptoms or nothing, 2: unreadable).
int DiagnoseRunRoot(const std::string& root, const FileWriter& writer);
void SetupCompletion(CLI::App& sub, int* exit_code);
void SetupBench(CLI::App& sub, int* exit_code);
void SetupWatch(CLI::App& sub, int* exit_code);
void SetupRemediate(CLI::App& sub, int* exit_code);

std::span<const Command> Commands();

/// The subcommand a first word that is not one probably misspells (`prefligth` -> "preflight"):
/// within edit distance 2 of a subcommand, not an option, not a path and not a program on the
/// PATH in `env` (`ruby` stays a job). "" when the word is to be run as the job.
std::string MisspeltCommand(std::string_view word, const Environment& env);

}  // namespace sl::launcher
