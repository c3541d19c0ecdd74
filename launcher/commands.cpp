#include "launcher/commands.h"

namespace sl::launcher {

namespace {
constexpr Command kCommands[] = {
    {"preflight", "Check this node's fabric, GPUs and OS for faults that make NCCL hang",
     SetupPreflight},
    {"env", "Print the tuned, explained NCCL/PyTorch environment for this node", SetupEnv},
    {"run", "Preflight, warm up and supervise a job: safe-launch run [OPTIONS] -- CMD ARGS...",
     SetupRun},
    {"version", "Print safe-launch's version", SetupVersion},
};
}  // namespace

std::span<const Command> Commands() { return kCommands; }

}  // namespace sl::launcher
