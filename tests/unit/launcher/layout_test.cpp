// The job's layout as `run` builds it: BuildConfig over safe-launch's flags, the launched command
// and the environment (the local GPU count resolved afterwards, as the warm-up phase does).
#include "launcher/layout.h"

#include <catch2/catch.hpp>

#include "launcher/config.h"
#include "launcher/slurm_stop.h"

using sl::Environment;
using sl::launcher::TorchrunArguments;
using sl::warmup::Topology;
using Cmd = std::vector<std::string>;
using Flags = std::vector<std::string>;

namespace {

sl::Result<Topology> InferTopology(const Flags& flags, const Cmd& command, const Environment& env,
                                   int local_gpus = 0) {
  Flags argv = flags;
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  auto config = sl::launcher::BuildConfig(argv, env);
  if (!config.ok()) return config.error();
  REQUIRE(config->topology);
  Topology t = *config->topology;
  if (auto s = sl::launcher::ResolveLocalGpus(&t, local_gpus); !s.ok()) return s.error();
  return t;
}

}  // namespace

TEST_CASE("torchrun dashed arguments give nodes, rank, ranks per node and the endpoint") {
  Cmd cmd = {"torchrun", "--nnodes=4",    "--nproc-per-node",
             "8",        "--node-rank=2", "--rdzv-endpoint=gpu01:29400",
             "train.py", "--nnodes=99"};
  auto t = InferTopology({}, cmd, {});
  REQUIRE(t.ok());
  CHECK(t->nnodes == 4);
  CHECK(t->nproc_per_node == 8);
  CHECK(t->node_rank == 2);
  CHECK(t->rendezvous_host == "gpu01");
  CHECK(t->rendezvous_port == 29400);
  CHECK(t->warmup_port == 29401);
  CHECK(t->source.at("nnodes") == "torchrun --nnodes");
}

TEST_CASE("torch 1.13 underscore spellings are understood") {
  Cmd cmd = {"python3",
             "-m",
             "torch.distributed.run",
             "--nnodes",
             "2",
             "--nproc_per_node=4",
             "--node_rank",
             "1",
             "--master_addr",
             "10.0.0.1",
             "--master_port=23456",
             "t.py"};
  auto t = InferTopology({}, cmd, {});
  REQUIRE(t.ok());
  CHECK(t->nnodes == 2);
  CHECK(t->nproc_per_node == 4);
  CHECK(t->node_rank == 1);
  CHECK(t->rendezvous_host == "10.0.0.1");
  CHECK(t->rendezvous_port == 23456);
  CHECK(t->warmup_port == 23457);
}

TEST_CASE("rdzv endpoint without a port uses torchrun's default 29400") {
  auto t = InferTopology({}, {"/usr/bin/torchrun", "--nnodes=2", "--rdzv_endpoint", "head", "x.py"},
                         {{"SLURM_NODEID", "1"}});
  REQUIRE(t.ok());
  CHECK(t->rendezvous_host == "head");
  CHECK(t->rendezvous_port == 29400);
  CHECK(t->node_rank == 1);
  CHECK(t->source.at("node_rank") == "SLURM_NODEID");
}

TEST_CASE("IPv6 endpoints in brackets keep the address whole") {
  auto t = InferTopology(
      {}, {"torchrun", "--nnodes=2", "--node-rank=0", "--rdzv-endpoint=[fd00::1]:1234", "x.py"},
      {});
  REQUIRE(t.ok());
  CHECK(t->rendezvous_host == "fd00::1");
  CHECK(t->rendezvous_port == 1234);
}

TEST_CASE("explicit safe-launch flags win over torchrun and Slurm") {
  Flags f = {"--nnodes",         "3",   "--node-rank",  "2",
             "--nproc-per-node", "2",   "--rendezvous", "10.1.1.1:4000",
             "--warmup-port",    "5000"};
  Environment env = {
      {"SLURM_NNODES", "8"}, {"SLURM_NODEID", "5"}, {"SLURM_JOB_NODELIST", "n[1-8]"}};
  auto t = InferTopology(f, {"torchrun", "--nnodes=4", "--nproc-per-node=8", "x.py"}, env);
  REQUIRE(t.ok());
  CHECK(t->nnodes == 3);
  CHECK(t->node_rank == 2);
  CHECK(t->nproc_per_node == 2);
  CHECK(t->rendezvous_host == "10.1.1.1");
  CHECK(t->rendezvous_port == 4000);
  CHECK(t->warmup_port == 5000);
  CHECK(t->hosts.empty());  // Slurm's 8 hosts do not describe a 3-node job
}

TEST_CASE("Slurm gives node count, node id and node 0 as the first host of the list") {
  Environment env = {{"SLURM_NNODES", "4"},
                     {"SLURM_NODEID", "3"},
                     {"SLURM_JOB_NODELIST", "gpu[01-04]"},
                     {"MASTER_PORT", "31000"}};
  auto t = InferTopology({}, {"python", "train.py"}, env);
  REQUIRE(t.ok());
  CHECK(t->nnodes == 4);
  CHECK(t->node_rank == 3);
  CHECK(t->rendezvous_host == "gpu01");
  CHECK(t->rendezvous_port == 31000);
  CHECK(t->hosts.size() == 4);
  CHECK(t->NodeLabel(2) == "node 2 (gpu03)");
}

TEST_CASE("torchrun's node count combines with Slurm's node id and host list") {
  Environment env = {
      {"SLURM_NNODES", "2"}, {"SLURM_NODEID", "1"}, {"SLURM_JOB_NODELIST", "a[1-2]-ib"}};
  auto t = InferTopology({}, {"torchrun", "--nnodes", "2", "--nproc-per-node=gpu", "x.py"}, env,
                         /*local_gpus=*/8);
  REQUIRE(t.ok());
  CHECK(t->nproc_per_node == 8);
  CHECK(t->node_rank == 1);
  CHECK(t->rendezvous_host == "a1-ib");
  CHECK(t->rendezvous_port == 29500);
}

TEST_CASE("torchrun's PET_ environment stands in for absent arguments") {
  auto t = InferTopology({}, {"torchrun", "x.py"},
                         {{"PET_NNODES", "2"},
                          {"PET_NODE_RANK", "1"},
                          {"PET_NPROC_PER_NODE", "3"},
                          {"PET_MASTER_ADDR", "h0"}});
  REQUIRE(t.ok());
  CHECK(t->nnodes == 2);
  CHECK(t->node_rank == 1);
  CHECK(t->nproc_per_node == 3);
  CHECK(t->rendezvous_host == "h0");
  CHECK(t->source.at("nnodes") == "PET_NNODES");
}

TEST_CASE("torchrun --standalone is one node on localhost") {
  auto t = InferTopology({}, {"torchrun", "--standalone", "--nproc-per-node=2", "x.py"},
                         {{"SLURM_NNODES", "4"}});
  REQUIRE(t.ok());
  CHECK(t->nnodes == 1);
  CHECK(t->node_rank == 0);
  CHECK(t->rendezvous_host == "127.0.0.1");
  CHECK(t->nproc_per_node == 2);
}

TEST_CASE("arguments after the training script belong to the script") {
  auto a = TorchrunArguments({"torchrun", "--nnodes=2", "train.py", "--node-rank", "7"});
  CHECK(a.count("nnodes") == 1);
  CHECK(a.count("node-rank") == 0);
}

TEST_CASE("a command that is not torchrun yields no torchrun arguments") {
  CHECK(TorchrunArguments({"python", "train.py", "--nnodes=2"}).empty());
}

TEST_CASE("an elastic node range is refused unless min equals max") {
  auto t = InferTopology({}, {"torchrun", "--nnodes=1:4", "--rdzv-endpoint=h:1", "x.py"}, {});
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().where == "torchrun --nnodes");
  CHECK(t.error().fix.find("--nnodes") != std::string::npos);
  auto ok = InferTopology({}, {"torchrun", "--nnodes=2:2", "--rdzv-endpoint=h:1", "x.py"}, {});
  REQUIRE(ok.ok());
  CHECK(ok->nnodes == 2);
}

TEST_CASE("a multi-node job without any way to find node 0 is an error with the fix") {
  auto t = InferTopology({}, {"python", "x.py"}, {{"SLURM_NNODES", "2"}});
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().fix.find("--rendezvous") != std::string::npos);
}

TEST_CASE("a node rank outside the node count names both sources") {
  auto t = InferTopology({}, {"torchrun", "--nnodes=2", "--master-addr=h", "x.py"},
                         {{"SLURM_NODEID", "2"}});
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message.find("SLURM_NODEID") != std::string::npos);
  CHECK(t.error().message.find("torchrun --nnodes") != std::string::npos);
}

TEST_CASE("garbage values are errors naming where they came from") {
  auto t = InferTopology({}, {"torchrun", "--nproc_per_node=eight", "x.py"}, {});
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().where == "torchrun --nproc-per-node");
  auto s = InferTopology({}, {"x"}, {{"SLURM_NNODES", "two"}});
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().where == "SLURM_NNODES");
  Flags f = {"--rendezvous", "host:99999"};
  auto r = InferTopology(f, {"x"}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where == "--rendezvous");
}

TEST_CASE("nproc-per-node=gpu without GPUs asks for an explicit count") {
  auto t = InferTopology({}, {"torchrun", "--nproc-per-node=gpu", "x.py"}, {}, 0);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().fix.find("--nproc-per-node") != std::string::npos);
}

TEST_CASE("the warm-up port is the rendezvous port plus one and must stay in range") {
  Flags f = {"--rendezvous", "h:65535"};
  auto t = InferTopology(f, {"x"}, {});
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().fix.find("--warmup-port") != std::string::npos);
}

TEST_CASE("the tasks on this node come from Open MPI, Hydra or the Slurm step") {
  using sl::launcher::TasksOnThisNode;
  auto t = TasksOnThisNode({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                            {"OMPI_COMM_WORLD_RANK", "7"},
                            {"SLURM_STEP_ID", "0"},
                            {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}});
  CHECK(t.count == 4);
  CHECK(t.local_rank == 3);
  CHECK(t.rank == "7");
  t = TasksOnThisNode({{"MPI_LOCALNRANKS", "2"}, {"MPI_LOCALRANKID", "1"}, {"PMI_RANK", "3"}});
  CHECK(t.count == 2);
  CHECK(t.rank == "3");
  // Node 1 of "3,1": one task here although node 0 has three.
  t = TasksOnThisNode(
      {{"SLURM_STEP_ID", "0"}, {"SLURM_NODEID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "3,1"}});
  CHECK(t.count == 1);
  // A second local task is proof enough, whatever the counts say.
  t = TasksOnThisNode({{"SLURM_STEP_ID", "0"}, {"SLURM_LOCALID", "1"}});
  CHECK(t.count == 2);
  CHECK(t.source == "SLURM_LOCALID=1");
  t = TasksOnThisNode({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS_PER_NODE", "2"}});
  CHECK(t.count == 2);
  CHECK(TasksOnThisNode({{"SLURM_NTASKS_PER_NODE", "2"}}).count == 1);  // batch script
  CHECK(sl::launcher::CheckOncePerNode(t).error().fix.find("--ntasks-per-node=1") !=
        std::string::npos);
}

TEST_CASE("slurmctld's job record tells a time limit, scancel, a node failure and a step apart") {
  using sl::launcher::SlurmStopCause;
  auto cause = [](const std::string& line) {
    return SlurmStopCause(line).value("cause", std::string());
  };
  // While ending, a job reads COMPLETING: the reason tells a time limit from a cancel.
  CHECK(cause("JobId=7 JobName=t JobState=COMPLETING Reason=TimeLimit Dependency=(null)") ==
        "time_limit");
  CHECK(cause("JobId=7 JobState=TIMEOUT Reason=TimeLimit") == "time_limit");
  CHECK(cause("JobId=1 JobName=b.sh JobState=COMPLETING Reason=None ExitCode=0:15") == "scancel");
  CHECK(cause("JobId=1 JobState=CANCELLED Reason=None") == "scancel");
  CHECK(cause("JobId=3 JobState=NODE_FAIL Reason=NodeDown") == "node_failure");
  CHECK(cause("JobId=3 JobState=COMPLETING Reason=NodeDown") == "node_failure");
  CHECK(cause("JobId=4 JobState=RUNNING Reason=None") == "step_stopped");
  CHECK(cause("slurm_load_jobs error: Invalid job id specified") == "unknown");
  auto j = SlurmStopCause("JobId=7 JobState=COMPLETING Reason=TimeLimit");
  CHECK(j["job_state"] == "COMPLETING");
  CHECK(j["reason"] == "TimeLimit");
}

TEST_CASE("mpirun's rank variables give the layout and each rank's torch variables") {
  using sl::launcher::MpiHints;
  const Environment ompi{{"OMPI_COMM_WORLD_SIZE", "8"},
                         {"OMPI_COMM_WORLD_RANK", "5"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}};
  auto h = MpiHints(ompi);
  REQUIRE(h.nnodes);
  CHECK(*h.nnodes->value == 2);
  CHECK(*h.node_rank->value == 1);
  CHECK(*h.nproc_per_node->value == 4);
  auto hydra = MpiHints({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}, {"MPI_LOCALNRANKS", "2"}});
  CHECK(*hydra.nnodes->value == 1);
  CHECK_FALSE(MpiHints({{"PMI_RANK", "1"}}).nnodes);
  CHECK_FALSE(MpiHints({{"PMI_SIZE", "3"}, {"PMI_RANK", "1"}, {"MPI_LOCALNRANKS", "2"}})
                  .nnodes->value.ok());
  // The torch variables each rank needs, never overriding what is set.
  auto tasks = sl::launcher::TasksOnThisNode(ompi);
  Environment with_rank = ompi;
  with_rank["RANK"] = "99";
  auto add = sl::launcher::RankEnvironment(with_rank, tasks, "gpu01", 29500);
  CHECK(add.count("RANK") == 0);
  CHECK(add.at("WORLD_SIZE") == "8");
  CHECK(add.at("LOCAL_RANK") == "1");
  CHECK(add.at("LOCAL_WORLD_SIZE") == "4");
  CHECK(add.at("MASTER_ADDR") == "gpu01");
  CHECK(add.at("MASTER_PORT") == "29500");
  CHECK(sl::launcher::RankEnvironment(ompi, tasks, "", 0).at("RANK") == "5");
}

TEST_CASE("the endpoint torch will use comes from torchrun, else MASTER_ADDR, never the flags") {
  using sl::launcher::TorchEndpoint;
  const std::vector<std::string> tr = {"torchrun", "--nnodes=2", "--rdzv_endpoint=gpu01",
                                       "train.py"};
  auto e = TorchEndpoint(tr, {{"MASTER_ADDR", "other"}});
  REQUIRE(e);
  CHECK(e->host == "gpu01");
  CHECK(e->port == 29400);  // torchrun's c10d default
  CHECK(e->source == "torchrun --rdzv-endpoint");
  auto m = TorchEndpoint({"torchrun", "--master_addr=h0", "--master-port=1234", "x.py"}, {});
  REQUIRE(m);
  CHECK(m->port == 1234);
  CHECK(m->source == "torchrun --master-addr + torchrun --master-port");
  auto env = TorchEndpoint({"python", "train.py"}, {{"MASTER_ADDR", "h1"}, {"MASTER_PORT", "77"}});
  REQUIRE(env);
  CHECK(env->host == "h1");
  CHECK(env->port == 77);
  CHECK(env->source == "MASTER_ADDR + MASTER_PORT");
  CHECK_FALSE(TorchEndpoint({"python", "train.py"}, {{"SLURM_JOB_NODELIST", "gpu[01-02]"}}));
}

TEST_CASE("the launch's id comes from Slurm, else PMIx, else Open MPI, else none") {
  using sl::launcher::JobKey;
  CHECK(JobKey({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "2"}, {"PMIX_NAMESPACE", "9"}}) == "7.2");
  CHECK(JobKey({{"PMIX_NAMESPACE", "9"}, {"OMPI_MCA_ess_base_jobid", "8"}}) == "mpi-9");
  CHECK(JobKey({{"OMPI_MCA_ess_base_jobid", "8"}}) == "mpi-8");
  CHECK(JobKey({{"PMI_RANK", "1"}}).empty());
  // mpirun inside an allocation: its ranks on the first node run in the batch step, the others
  // under the srun that started their daemon (step 0); they must still meet.
  sl::Environment batch{
      {"SLURM_JOB_ID", "7"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"PMIX_NAMESPACE", "12@1"}};
  sl::Environment stepped = batch;
  stepped["SLURM_STEP_ID"] = "0";
  CHECK(JobKey(batch) == "7.mpi-12@1");
  CHECK(JobKey(stepped) == JobKey(batch));
}
