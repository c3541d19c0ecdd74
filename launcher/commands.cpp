#include "launcher/commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/strings.h"

namespace sl::launcher {

namespace {
constexpr Command kCommands[] = {
    {"preflight", "Check this node's fabric, GPUs and OS for faults that make NCCL hang",
     SetupPreflight},
    {"env", "Print the tuned, explained NCCL/PyTorch environment for this node", SetupEnv},
    {"run", "Preflight, warm up and supervise a job: safe-launch run [OPTIONS] -- CMD ARGS...",
     SetupRun},
    {"version", "Print safe-launch's version", SetupVersion},
    {"diagnose",
     "Name the root cause of a failed or hung job from its logs, bundles or Flight Recorder dumps",
     SetupDiagnose},
    {"remediate",
     "Drain the node a job's diagnosis names and requeue the job without it: safe-launch "
     "remediate --on-node-fault=requeue RUN_ROOT",
     SetupRemediate},
    {"completion", "Print the bash completion script: safe-launch completion bash",
     SetupCompletion},
    {"bench", "Bandwidth sweep alone: expected line, slow node named, history, nccl-tests import",
     SetupBench},
    {"watch", "Live view of a job across its nodes: safe-launch watch [RUN_ROOT | --job ID]",
     SetupWatch},
};

// An executable regular file named `word` in one of PATH's directories, as execvp would find it.
bool OnPath(std::string_view word, const Environment& env) {
  auto path = Lookup(env, "PATH");
  if (!path) return false;
  for (const auto& dir : Split(*path, ':')) {
    const std::string file = (dir.empty() ? std::string(".") : dir) + "/" + std::string(word);
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(file.c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::span<const Command> Commands() { return kCommands; }

std::string MisspeltCommand(std::string_view word, const Environment& env) {
  if (word.empty() || word.front() == '-' || word.find('/') != std::string_view::npos) return "";
  std::string best;
  std::size_t best_d = 3;  // edit distance 2 at most
  for (const auto& c : kCommands) {
    const std::size_t d = EditDistance(ToLower(word), c.name);
    if (d < best_d) {
      best_d = d;
      best = c.name;
    }
  }
  if (best.empty() || best == word || OnPath(word, env)) return "";
  return best;
}

}  // namespace sl::launcher
