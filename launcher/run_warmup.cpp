// Warm-up phase of `run` (issue 6): infer the topology, start one safe-launch-warmup per local
// rank, print the verdict (every node one line, node 0 the details), write warmup.json, and
// decide whether the job starts. The work itself is warmup/warmup_phase.h.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "launcher/run_phases.h"
#include "warmup/topology.h"
#include "warmup/warmup_phase.h"

namespace sl::launcher {

struct WarmupArgs {
  int nnodes = 0, node_rank = -1, nproc_per_node = 0, warmup_port = 0;
  std::string rendezvous;
  double timeout_s = 120;
  bool no_warmup = false;
  bool force_warmup = false;
  std::string on_fail = "abort";
  std::string node_name;
  std::string backend = "auto";
};

namespace {

// A free TCP port on the loopback address, for single-node warm-ups that named no port: every
// rank is local, so a fixed default (29501) would only collide with other jobs on the node.
int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

void LogBlock(const std::string& text, bool error) {
  for (const auto& line : SplitLines(text)) {
    if (Trim(line).empty()) continue;
    if (error)
      log::Error("{}", line);
    else
      log::Info("{}", line);
  }
}

}  // namespace

std::shared_ptr<WarmupArgs> AddWarmupOptions(CLI::App& sub) {
  auto a = std::make_shared<WarmupArgs>();
  auto* g = &sub;
  g->add_option("--nnodes", a->nnodes,
                "Nodes in the job (default: torchrun's --nnodes, else SLURM_NNODES)")
      ->check(CLI::Range(1, 1000000));
  g->add_option("--node-rank", a->node_rank,
                "This node's rank (default: torchrun's --node-rank, else SLURM_NODEID)")
      ->check(CLI::Range(0, 1000000));
  g->add_option("--nproc-per-node", a->nproc_per_node,
                "Ranks (GPUs) per node (default: torchrun's --nproc-per-node, else 1)")
      ->check(CLI::Range(1, 4096));
  g->add_option("--rendezvous", a->rendezvous,
                "Node 0's HOST:PORT (default: torchrun's --rdzv-endpoint/--master-addr, else the "
                "first host of SLURM_JOB_NODELIST)");
  g->add_option("--warmup-port", a->warmup_port,
                "Port of the warm-up store on node 0 (default: rendezvous port + 1)")
      ->check(CLI::Range(1, 65535));
  g->add_option("--warmup-timeout", a->timeout_s,
                "Seconds the whole warm-up may take on this node (default 120)");
  g->add_flag("--no-warmup", a->no_warmup, "Skip the cross-node warm-up");
  g->add_flag("--warmup", a->force_warmup,
              "Run the warm-up even for a single-node job (multi-node jobs always run it)");
  g->add_option("--on-warmup-fail", a->on_fail,
                "abort (default: exit 69, job not started) or warn (start anyway)")
      ->check(CLI::IsMember({"abort", "warn"}));
  g->add_option("--node-name", a->node_name,
                "Name of this node in warm-up messages (default: its host name)");
  g->add_option("--warmup-backend", a->backend, "auto (NCCL on GPUs, else Gloo), nccl or gloo")
      ->check(CLI::IsMember({"auto", "nccl", "gloo"}));
  return a;
}

int RunWarmupPhase(const WarmupArgs& args, RunContext& ctx) {
  if (args.no_warmup) {
    log::Info("warm-up skipped (--no-warmup)");
    ctx.status_extra["warmup"] = {{"verdict", "skipped"}};
    return exit_code::kOk;
  }
  if (!(args.timeout_s > 0) || args.timeout_s > 86400) {
    log::Error("--warmup-timeout must be between 0 and 86400 seconds, got {}", args.timeout_s);
    return exit_code::kUsage;
  }
  if (!ctx.have_facts) {
    RootedFileReader fs(ctx.sysroot);
    ctx.facts = GatherNodeFacts(fs);
    ctx.have_facts = true;
  }

  warmup::TopologyFlags flags;
  if (args.nnodes > 0) flags.nnodes = args.nnodes;
  if (args.node_rank >= 0) flags.node_rank = args.node_rank;
  if (args.nproc_per_node > 0) flags.nproc_per_node = args.nproc_per_node;
  if (!args.rendezvous.empty()) flags.rendezvous = args.rendezvous;
  if (args.warmup_port > 0) flags.warmup_port = args.warmup_port;
  auto topo = warmup::InferTopology(flags, ctx.command, ctx.base_env,
                                       static_cast<int>(ctx.facts.gpus.size()));
  if (!topo.ok()) {
    log::Error("warm-up: cannot tell the job's layout: {}", topo.error().Describe());
    log::Error("pass --nnodes/--node-rank/--nproc-per-node/--rendezvous, or --no-warmup");
    return exit_code::kUsage;
  }
  warmup::Topology t = *topo;
  if (t.nnodes == 1 && !args.force_warmup) {
    // A single-node job gains little from a warm-up (nothing to compare; its collective faults
    // show within seconds) and would pay libtorch's start-up; --warmup asks for it anyway.
    log::Debug("warm-up skipped: single-node job (pass --warmup to run it)");
    ctx.status_extra["warmup"] = {{"verdict", "skipped"}, {"reason", "single node"}};
    return exit_code::kOk;
  }
  if (t.nnodes == 1 && !flags.rendezvous && !flags.warmup_port) {
    t.rendezvous_host = "127.0.0.1";
    if (int port = FreeLoopbackPort(); port > 0) t.warmup_port = port;
  }
  log::Init(ctx.host, std::to_string(t.node_rank), spdlog::get_level() <= spdlog::level::debug);
  log::Info("warm-up: node {} of {}, {} rank(s) here, store {}:{} ({} from {}), timeout {:g} s",
            t.node_rank, t.nnodes, t.nproc_per_node, t.rendezvous_host, t.warmup_port, "rendezvous",
            t.source["rendezvous"], args.timeout_s);

  warmup::WarmupOptions o;
  o.topology = t;
  o.facts = ctx.facts;
  o.node_name = !args.node_name.empty()       ? args.node_name
                : !ctx.facts.hostname.empty() ? ctx.facts.hostname
                                              : ctx.host;
  o.env = ctx.job_env.empty() ? ctx.base_env : ctx.job_env;
  o.run_dir = ctx.run_dir;
  o.timeout = std::chrono::milliseconds(static_cast<long long>(args.timeout_s * 1000));
  o.backend = args.backend;
  auto outcome = warmup::RunWarmup(o);
  if (StopSignalSeen()) {
    // A SIGTERM/SIGINT ended the warm-up: no verdict of its own to report; the stop check after
    // this phase (cmd_run) writes status.json and exits 128+S.
    ctx.status_extra["warmup"] = {{"verdict", "interrupted"}, {"report", outcome.json_path}};
    return exit_code::kOk;
  }

  if (!outcome.details.empty()) {
    LogBlock(outcome.details, false);  // node 0: the job-wide details
  } else if (!outcome.passed && outcome.report.contains("findings")) {
    // Other nodes (or node 0 failing before any report): the reasons and fixes, briefly.
    for (const auto& f : outcome.report["findings"]) {
      if (f.value("outcome", "") == "pass") continue;
      log::Error("  {}: {}", f.value("check", ""), f.value("message", ""));
      if (!f.value("next_step", "").empty()) log::Error("    fix: {}", f.value("next_step", ""));
    }
  }
  if (outcome.passed) {
    log::Info("{}", outcome.verdict_line);
  } else {
    log::Error("{}", outcome.verdict_line);
  }
  if (!outcome.json_path.empty()) log::Info("warm-up report: {}", outcome.json_path);
  ctx.status_extra["warmup"] = {{"verdict", outcome.report.value("verdict", "fail")},
                                {"report", outcome.json_path}};
  if (!outcome.passed) {
    if (args.on_fail == "abort") {
      log::Error(
          "job not started (--on-warmup-fail=abort; --on-warmup-fail=warn starts it anyway)");
      return exit_code::kWarmupFailed;
    }
    log::Warn("starting the job anyway (--on-warmup-fail=warn)");
  }
  return exit_code::kOk;
}

}  // namespace sl::launcher
