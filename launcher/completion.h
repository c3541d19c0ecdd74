#pragma once
// `safe-launch completion bash`: the bash completion script, generated from the CLI11 app that
// the subcommand table builds, so it names every subcommand and flag there is and cannot drift.
// The build writes it to share/bash-completion/completions/safe-launch (packaging/CMakeLists.txt).
#include <CLI/CLI.hpp>
#include <string>

namespace sl::launcher {

/// The completion script for `app` (safe-launch's root app with every subcommand of Commands()
/// set up): subcommands, each one's flags, the accepted values of `IsMember` options, and after
/// `--` the job's command line completed as a command of its own. Pure.
std::string BashCompletion(const CLI::App& app);

}  // namespace sl::launcher
