// BuildConfig: `run`'s flags through CLI11's validators, the --waive split between preflight
// checks and warm-up comparisons, and the layout per launcher.
#include "launcher/config.h"

#include <catch2/catch.hpp>

#include "launcher/layout.h"
#include "preflight/check.h"
#include "warmup/compare.h"

using sl::Environment;
using sl::launcher::BuildConfig;
using Argv = std::vector<std::string>;

namespace {

std::string ErrorText(const Argv& argv, const Environment& env = {}) {
  auto c = BuildConfig(argv, env);
  REQUIRE_FALSE(c.ok());
  return c.error().Describe();
}

}  // namespace

TEST_CASE("flag values out of range are refused by the validators, naming the flag") {
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--nnodes", "0"},
                                                        {"--node-rank", "-1"},
                                                        {"--nproc-per-node", "5000"},
                                                        {"--warmup-port", "70000"},
                                                        {"--warmup-timeout", "0"},
                                                        {"--warmup-timeout", "86401"},
                                                        {"--kill-grace", "-1"},
                                                        {"--kill-grace", "nan"},
                                                        {"--on-preflight-fail", "maybe"},
                                                        {"--on-warmup-fail", "retry"},
                                                        {"--warmup-backend", "mpi"},
                                                        {"--stall-timeout", "-5"},
                                                        {"--stall-timeout", "nan"},
                                                        {"--on-hang", "explode"}}) {
    INFO(flag << " " << value);
    std::string text = ErrorText({flag, value, "--", "true"});
    CHECK(text.find(flag) != std::string::npos);
  }
}

TEST_CASE("values at the ends of the ranges are accepted") {
  auto c = BuildConfig({"--kill-grace", "0", "--warmup-timeout", "86400", "--warmup-port", "65535",
                        "--on-preflight-fail=warn", "--", "true"},
                       {});
  REQUIRE(c.ok());
  CHECK(c->kill_grace_s == 0);
  CHECK(c->warmup.timeout_s == 86400);
  CHECK(c->on_preflight_fail == "warn");
  CHECK(c->topology->warmup_port == 65535);
  CHECK(c->command == Argv{"true"});
}

TEST_CASE("a job command is required unless --list is given") {
  CHECK(ErrorText({"--nnodes", "1"}).find("no command given") != std::string::npos);
  auto list = BuildConfig({"--list"}, {});
  REQUIRE(list.ok());
  CHECK(list->list);
}

TEST_CASE("the --waive ids split into preflight checks and warm-up comparisons") {
  auto c =
      BuildConfig({"--waive", "ib.mtu,warmup.consistency.mtu", "--waive", "os", "--", "true"}, {});
  REQUIRE(c.ok());
  CHECK(c->waive == Argv{"ib.mtu", "os"});
  CHECK(c->warmup.waive == Argv{"warmup.consistency.mtu"});
}

TEST_CASE("an unknown --waive id is a usage error naming it and the nearest id") {
  std::string text = ErrorText({"--waive", "warmup.consistency.mut", "--", "true"});
  CHECK(text.find("unknown check id 'warmup.consistency.mut'") != std::string::npos);
  CHECK(text.find("did you mean 'warmup.consistency.mtu'") != std::string::npos);
  CHECK(ErrorText({"--waive", "ib.gidd", "--", "true"}).find("'ib.gidd'") != std::string::npos);
}

TEST_CASE("with --no-warmup no layout is built, so an elastic torchrun job still runs") {
  Argv job = {"--", "torchrun", "--nnodes=1:4", "--rdzv-endpoint=h:1", "x.py"};
  auto refused = BuildConfig(job, {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().where == "torchrun --nnodes");
  CHECK(refused.error().message.find("layout") != std::string::npos);
  job.insert(job.begin(), "--no-warmup");
  auto c = BuildConfig(job, {});
  REQUIRE(c.ok());
  CHECK_FALSE(c->topology);
  CHECK(c->warmup.skip);
}

TEST_CASE("a lower-priority source's garbage does not count when a higher one decides") {
  auto c = BuildConfig({"--nnodes", "2", "--rendezvous", "h", "--", "true"},
                       {{"SLURM_NNODES", "two"}, {"MASTER_PORT", "http"}, {"SLURM_NODEID", "1"}});
  REQUIRE_FALSE(c.ok());  // MASTER_PORT is the only port source left: it is chosen, and bad
  CHECK(c.error().where == "MASTER_PORT");
  auto ok = BuildConfig({"--nnodes", "2", "--rendezvous", "h:7", "--", "true"},
                        {{"SLURM_NNODES", "two"}, {"MASTER_PORT", "http"}, {"SLURM_NODEID", "1"}});
  REQUIRE(ok.ok());
  CHECK(ok->topology->nnodes == 2);
  CHECK(ok->topology->node_rank == 1);
  CHECK(ok->topology->rendezvous_port == 7);
}

TEST_CASE("torchrun's --nproc-per-node=gpu waits for the node's GPU count") {
  auto c = BuildConfig({"--", "torchrun", "--nproc-per-node=gpu", "x.py"}, {});
  REQUIRE(c.ok());
  sl::warmup::Topology t = *c->topology;
  CHECK(t.nproc_per_node_spec == "gpu");
  REQUIRE(sl::launcher::ResolveLocalGpus(&t, 4).ok());
  CHECK(t.nproc_per_node == 4);
  CHECK(t.WorldSize() == 4);
}

TEST_CASE("each launcher is one function: torchrun, torch env and Slurm hints stand alone") {
  using sl::launcher::SlurmHints;
  using sl::launcher::TorchEnvHints;
  using sl::launcher::TorchrunHints;
  CHECK_FALSE(TorchrunHints({"python", "x.py", "--nnodes=2"}, {}).nnodes);
  auto tr = TorchrunHints({"torchrun", "--nnodes=3", "x.py"}, {});
  REQUIRE(tr.nnodes);
  CHECK(*tr.nnodes->value == 3);
  CHECK(tr.nproc_per_node->source == "torchrun default");
  auto env = TorchEnvHints({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1234"}});
  CHECK(env.rendezvous->value->host == "n0");
  CHECK(*env.port->value == 1234);
  auto slurm = SlurmHints({{"SLURM_JOB_NODELIST", "g[1-2]"}, {"SLURM_NODEID", "1"}});
  CHECK(slurm.rendezvous->value->host == "g1");
  CHECK(slurm.hosts->value->size() == 2);
  CHECK(*slurm.node_rank->value == 1);
  CHECK_FALSE(slurm.nnodes);
}

TEST_CASE("the list shows every preflight check, then every warm-up comparison") {
  std::string text = sl::launcher::ListText();
  // An after-job check is tagged where it runs (preflight --slurm --epilog).
  const auto leftover = text.find("gpu.leftover_procs ");
  REQUIRE(leftover != std::string::npos);
  CHECK(text.find("[epilog only]", leftover) < text.find('\n', leftover));
  const auto kernel = text.find("kernel.log ");
  CHECK(text.find("[also in the epilog]", kernel) < text.find('\n', kernel));
  std::size_t last_check = 0;
  for (const auto& c : sl::preflight::Registry()) {
    auto at = text.find(std::string(c.id) + " ");
    REQUIRE(at != std::string::npos);
    last_check = std::max(last_check, at);
  }
  int comparisons = 0;
  for (const auto& c : sl::warmup::Comparisons()) {
    auto at = text.find(std::string(c.id) + " ");
    REQUIRE(at != std::string::npos);
    CHECK(at > last_check);
    CHECK(text.find(c.summary) != std::string::npos);
    ++comparisons;
  }
  CHECK(comparisons == 14);
}

TEST_CASE("two safe-launch on one Slurm node are refused, naming the variable and the fix") {
  const Environment step{{"SLURM_JOB_ID", "5"},
                         {"SLURM_STEP_ID", "0"},
                         {"SLURM_NODEID", "1"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                         {"SLURM_PROCID", "2"}};
  std::string e = ErrorText({"--no-warmup", "true"}, step);
  CHECK(e.find("2 safe-launch processes") != std::string::npos);
  CHECK(e.find("SLURM_STEP_TASKS_PER_NODE=2(x2)") != std::string::npos);
  CHECK(e.find("--ntasks-per-node=1") != std::string::npos);
  CHECK(e.find("--per-task") != std::string::npos);
  // --per-task allows it: its own run directory per task; no warm-up here, as this step's
  // layout is incomplete (node 1 of an unknown node count).
  auto c = BuildConfig({"--per-task", "true"}, step);
  REQUIRE(c.ok());
  CHECK(c->warmup.skip);
  CHECK(c->tasks.rank == "2");
  // One task per node (the template) and the batch script itself pass.
  Environment one = step;
  one["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  CHECK(BuildConfig({"--no-warmup", "true"}, one).ok());
  Environment batch{{"SLURM_JOB_ID", "5"}, {"SLURM_NTASKS_PER_NODE", "4"}};
  CHECK(BuildConfig({"--no-warmup", "true"}, batch).ok());
}

TEST_CASE("in per-task mode local rank 0 of each node runs the warm-up among the nodes") {
  Environment ompi{{"OMPI_COMM_WORLD_SIZE", "4"},       {"OMPI_COMM_WORLD_RANK", "3"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                   {"PMIX_NAMESPACE", "4242"},          {"MASTER_ADDR", "gpu01"}};
  auto c = BuildConfig({"--per-task", "true"}, ompi);
  REQUIRE(c.ok());
  CHECK_FALSE(c->warmup.skip);
  REQUIRE(c->topology);
  CHECK(c->topology->nnodes == 2);  // world = node count, node rank = rank / local size
  CHECK(c->topology->node_rank == 1);
  CHECK(c->topology->nproc_per_node == 2);
  CHECK(c->job_key == "mpi-4242");
  CHECK(c->SharesNode());
  CHECK_FALSE(c->NodeLeader());  // local rank 1 waits for local rank 0's verdict
  ompi["OMPI_COMM_WORLD_LOCAL_RANK"] = "0";
  CHECK(BuildConfig({"--per-task", "true"}, ompi)->NodeLeader());
  // Without an id of the launch the tasks cannot meet: each is on its own, warm-up skipped.
  ompi.erase("PMIX_NAMESPACE");
  auto alone = BuildConfig({"--per-task", "true"}, ompi);
  REQUIRE(alone.ok());
  CHECK(alone->warmup.skip);
  CHECK(alone->warmup.skip_reason.find("PMIX_NAMESPACE") != std::string::npos);
  CHECK(alone->NodeLeader());
  // srun --ntasks-per-node=2 --per-task: ranks per node from the step's task count.
  const Environment step{{"SLURM_JOB_ID", "5"},
                         {"SLURM_STEP_ID", "0"},
                         {"SLURM_NODEID", "1"},
                         {"SLURM_LOCALID", "1"},
                         {"SLURM_NNODES", "2"},
                         {"SLURM_JOB_NODELIST", "gpu[01-02]"},
                         {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                         {"SLURM_PROCID", "3"}};
  auto s = BuildConfig({"--per-task", "true"}, step);
  REQUIRE(s.ok());
  CHECK(s->job_key == "5.0");
  CHECK(s->topology->nproc_per_node == 2);
  CHECK(s->topology->rendezvous_host == "gpu01");
  CHECK_FALSE(s->NodeLeader());
}
