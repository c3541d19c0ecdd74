#include "recipes/plan.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "nccl/registry.h"
#include "tests/unit/common/test_facts.h"

using namespace sl;
using namespace sl::recipes;

namespace {

Versions Modern() {
  Versions v;
  v.nccl = Version{2, 28, 9};
  v.torch = Version{2, 11, 0};
  return v;
}

Plan MustResolve(std::string_view recipe, const Environment& env, const NodeFacts& facts,
                 const Versions& v = Modern()) {
  auto r = LoadRecipe(recipe);
  REQUIRE(r.ok());
  auto p = Resolve(*r, env, facts, v, "/runs/job1/gpu01");
  INFO((p.ok() ? "" : p.error().Describe()));
  REQUIRE(p.ok());
  return *p;
}

bool HasNote(const Plan& p, std::string_view name) {
  for (const auto& n : p.notes) {
    if (n.name == name) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("infiniband plan pins exactly the active ports with '='") {
  Plan p = MustResolve("infiniband", {}, testing::IbNode());
  const PlanEntry* hca = p.Find("NCCL_IB_HCA");
  REQUIRE(hca != nullptr);
  CHECK(hca->value ==
        "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1,"
        "mlx5_10:1,mlx5_11:1");
  CHECK(hca->source == Source::kComputed);
  CHECK_THAT(hca->reason, Catch::Contains("skipped mlx5_3:1 (DOWN"));
  CHECK_THAT(hca->origin, Catch::StartsWith("recipes/infiniband.toml:"));
}

TEST_CASE("defaults: debug file per host and pid, Flight Recorder and pipe in the run dir") {
  Plan p = MustResolve("default", {}, testing::IbNode());
  CHECK(p.Find("NCCL_DEBUG")->value == "WARN");
  CHECK(p.Find("NCCL_DEBUG_FILE")->value == "/runs/job1/gpu01/nccl.%h.%p.log");
  CHECK(p.Find("TORCH_NCCL_ASYNC_ERROR_HANDLING")->value == "3");
  CHECK(p.Find("TORCH_FR_BUFFER_SIZE")->value == "2000");
  CHECK(p.Find("TORCH_NCCL_DUMP_ON_TIMEOUT")->value == "1");
  CHECK(p.Find("TORCH_FR_DUMP_TEMP_FILE")->value == "/runs/job1/gpu01/fr_rank_");
  CHECK(p.Find("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")->value == "/runs/job1/gpu01/frpipe_");
  CHECK(p.Find("TORCH_FR_BUFFER_SIZE")->source == Source::kRecipe);
  CHECK_THAT(p.Find("TORCH_FR_BUFFER_SIZE")->reason, Catch::Contains("Flight Recorder"));
}

TEST_CASE("older torch gets the old Flight Recorder names") {
  Versions v = Modern();
  v.torch = Version{2, 5, 1};
  Plan p = MustResolve("default", {}, testing::IbNode(), v);
  CHECK(p.Find("TORCH_FR_BUFFER_SIZE") == nullptr);
  CHECK(p.Find("TORCH_NCCL_TRACE_BUFFER_SIZE")->value == "2000");
  CHECK(p.Find("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")->value == "/runs/job1/gpu01/fr_rank_");
  // Names the version does not read at all are left out with a note.
  Versions ancient = Modern();
  ancient.torch = Version{1, 13, 0};
  Plan q = MustResolve("default", {}, testing::IbNode(), ancient);
  // torch < 2.2 knows modes 0..2 only: TearDown (1) instead of SkipCleanUp (3).
  CHECK(q.Find("NCCL_ASYNC_ERROR_HANDLING")->value == "1");
  CHECK_THAT(q.Find("NCCL_ASYNC_ERROR_HANDLING")->reason, Catch::Contains("no mode 3"));
  CHECK(q.Find("TORCH_NCCL_DUMP_ON_TIMEOUT") == nullptr);
  CHECK(HasNote(q, "TORCH_NCCL_DUMP_ON_TIMEOUT"));
}

TEST_CASE("a value the user set is kept and the recipe's value is reported") {
  Environment env{{"NCCL_DEBUG", "INFO"}, {"NCCL_IB_HCA", "mlx5_0,mlx5_1"}};
  Plan p = MustResolve("infiniband", env, testing::IbNode());
  const PlanEntry* dbg = p.Find("NCCL_DEBUG");
  CHECK(dbg->value == "INFO");
  CHECK(dbg->source == Source::kUser);
  CHECK(dbg->recipe_value == "WARN");
  CHECK_THAT(dbg->reason, Catch::Contains("would set WARN"));
  CHECK(p.Find("NCCL_IB_HCA")->value == "mlx5_0,mlx5_1");
  CHECK(ApplyPlan(p, env).at("NCCL_IB_HCA") == "mlx5_0,mlx5_1");
}

TEST_CASE("a user value under the old name blocks the new one") {
  Environment env{{"TORCH_NCCL_TRACE_BUFFER_SIZE", "500"}};
  Plan p = MustResolve("default", env, testing::IbNode());
  CHECK(p.Find("TORCH_FR_BUFFER_SIZE") == nullptr);
  CHECK(p.Find("TORCH_NCCL_TRACE_BUFFER_SIZE")->value == "500");
}

TEST_CASE("other NCCL variables the user set are listed as user entries") {
  Environment env{{"NCCL_P2P_DISABLE", "1"}, {"PATH", "/bin"}};
  Plan p = MustResolve("default", env, testing::IbNode());
  CHECK(p.Find("NCCL_P2P_DISABLE")->source == Source::kUser);
  CHECK(p.Find("PATH") == nullptr);
}

TEST_CASE("conflicts: a user NCCL_IB_HCA naming a down port and a prefix that selects more") {
  Environment env{{"NCCL_IB_HCA", "mlx5_3,mlx5_1"}};
  Plan p = MustResolve("infiniband", env, testing::IbNode());
  REQUIRE(p.conflicts.size() >= 2);
  bool down = false, prefix = false;
  for (const auto& c : p.conflicts) {
    if (c.message.find("mlx5_3") != std::string::npos &&
        c.message.find("not ACTIVE") != std::string::npos) {
      down = true;
    }
    if (c.message.find("prefix match") != std::string::npos &&
        c.message.find("mlx5_10") != std::string::npos) {
      prefix = c.warning_only;
    }
  }
  CHECK(down);
  CHECK(prefix);
}

TEST_CASE("conflicts: NCCL_IB_DISABLE=1 with active IB ports") {
  auto c = nccl::FactConflicts({{"NCCL_IB_DISABLE", "1"}}, testing::IbNode());
  REQUIRE(c.size() == 1);
  CHECK_THAT(c[0].message, Catch::Contains("sockets"));
  CHECK(nccl::FactConflicts({{"NCCL_IB_DISABLE", "1"}}, testing::SocketNode()).empty());
}

TEST_CASE("conflicts: NCCL_IB_HCA naming a device the node lacks, or selecting nothing active") {
  auto c = nccl::FactConflicts({{"NCCL_IB_HCA", "=mlx5_42"}}, testing::IbNode());
  REQUIRE(c.size() == 1);
  CHECK_THAT(c[0].message, Catch::Contains("does not have"));
  CHECK_THAT(c[0].fix, Catch::Contains("NCCL_IB_HCA='=mlx5_0:1,"));
  auto none = nccl::FactConflicts({{"NCCL_IB_HCA", "^mlx5_"}}, testing::IbNode());
  REQUIRE(none.size() == 1);
  CHECK_THAT(none[0].message, Catch::Contains("none of the ACTIVE ports"));
}

TEST_CASE("conflicts: NCCL_IB_GID_INDEX on a RoCE v1 or link-local entry names the right one") {
  auto v1 = nccl::FactConflicts({{"NCCL_IB_GID_INDEX", "2"}}, testing::RoceNode());
  REQUIRE(v1.size() == 2);  // one per RoCE port
  CHECK_THAT(v1[0].message, Catch::Contains("IB/RoCE v1"));
  CHECK_THAT(v1[0].fix, Catch::Contains("use index 3"));
  auto ll = nccl::FactConflicts({{"NCCL_IB_GID_INDEX", "1"}}, testing::RoceNode());
  REQUIRE_FALSE(ll.empty());
  CHECK_THAT(ll[0].message, Catch::Contains("link-local"));
  CHECK(nccl::FactConflicts({{"NCCL_IB_GID_INDEX", "3"}}, testing::RoceNode()).empty());
  // Container table starting at 4: index 3 is empty there.
  auto shifted = nccl::FactConflicts({{"NCCL_IB_GID_INDEX", "3"}}, testing::RoceNode(4));
  REQUIRE_FALSE(shifted.empty());
  CHECK_THAT(shifted[0].fix, Catch::Contains("use index 7"));
}

TEST_CASE("conflicts: NCCL_SOCKET_IFNAME matching no interface") {
  auto c = nccl::FactConflicts({{"NCCL_SOCKET_IFNAME", "=ib0"}}, testing::SocketNode());
  REQUIRE(c.size() == 1);
  CHECK_THAT(c[0].message, Catch::Contains("matches no interface"));
  CHECK(nccl::FactConflicts({{"NCCL_SOCKET_IFNAME", "eth"}}, testing::SocketNode()).empty());
}

TEST_CASE("conflicts: the NCCL_SOCKET_IFNAME fix never suggests loopback") {
  // lo comes first in the facts, as in /sys/class/net; NCCL between nodes cannot use it, and
  // net.ifname fails it, so the fix names the interface the plan would pin (not lo or veth*).
  auto c = nccl::FactConflicts({{"NCCL_SOCKET_IFNAME", "=ib0"}}, testing::SocketNode());
  REQUIRE(c.size() == 1);
  CHECK_THAT(c[0].fix, Catch::Contains("NCCL_SOCKET_IFNAME='=eth0'"));
  CHECK_THAT(c[0].fix, !Catch::Contains("'=lo'"));
}

TEST_CASE("GID index: not set for NCCL >= 2.21, set for older NCCL, container offset honoured") {
  Plan modern = MustResolve("roce", {}, testing::RoceNode());
  CHECK(modern.Find("NCCL_IB_GID_INDEX") == nullptr);
  CHECK(HasNote(modern, "NCCL_IB_GID_INDEX"));
  Versions old = Modern();
  old.nccl = Version{2, 18, 5};
  Plan p = MustResolve("roce", {}, testing::RoceNode(), old);
  REQUIRE(p.Find("NCCL_IB_GID_INDEX") != nullptr);
  CHECK(p.Find("NCCL_IB_GID_INDEX")->value == "3");
  CHECK_THAT(p.Find("NCCL_IB_GID_INDEX")->reason, Catch::Contains("< 2.21"));
  Plan c = MustResolve("roce", {}, testing::RoceNode(4), old);
  CHECK(c.Find("NCCL_IB_GID_INDEX")->value == "7");
}

TEST_CASE("GID index: ports that disagree cannot share one value") {
  NodeFacts f = testing::RoceNode();
  f.ib_ports[1] = testing::RocePort("mlx5_1", 4);
  Versions old = Modern();
  old.nccl = Version{2, 18, 5};
  Plan p = MustResolve("roce", {}, f, old);
  CHECK(p.Find("NCCL_IB_GID_INDEX") == nullptr);
  CHECK(HasNote(p, "NCCL_IB_GID_INDEX"));
}

TEST_CASE("RAS address is job-unique in Slurm and skipped for NCCL without RAS") {
  Environment a{{"SLURM_JOB_ID", "1001"}, {"SLURM_STEP_ID", "0"}};
  Environment b{{"SLURM_JOB_ID", "1002"}, {"SLURM_STEP_ID", "0"}};
  Plan pa = MustResolve("default", a, testing::SocketNode());
  Plan pb = MustResolve("default", b, testing::SocketNode());
  REQUIRE(pa.Find("NCCL_RAS_ADDR") != nullptr);
  CHECK(pa.Find("NCCL_RAS_ADDR")->value == "127.0.0.1:" + std::to_string(RasPortFor(a)));
  CHECK(pa.Find("NCCL_RAS_ADDR")->value != pb.Find("NCCL_RAS_ADDR")->value);
  CHECK(RasPortFor(a) >= 28028);
  CHECK(RasPortFor(a) < 29028);
  CHECK(MustResolve("default", {}, testing::SocketNode()).Find("NCCL_RAS_ADDR") == nullptr);
  Versions old = Modern();
  old.nccl = Version{2, 21, 5};
  Plan po = MustResolve("default", a, testing::SocketNode(), old);
  CHECK(po.Find("NCCL_RAS_ADDR") == nullptr);
  CHECK(HasNote(po, "NCCL_RAS_ADDR"));
}

TEST_CASE("bootstrap interface: IPoIB first, never lo/docker/veth") {
  CHECK(MustResolve("default", {}, testing::IbNode()).Find("NCCL_SOCKET_IFNAME")->value == "=ib0");
  CHECK(MustResolve("default", {}, testing::SocketNode()).Find("NCCL_SOCKET_IFNAME")->value ==
        "=eth0");
  NodeFacts bare;
  Plan p = MustResolve("default", {}, bare);
  CHECK(p.Find("NCCL_SOCKET_IFNAME") == nullptr);
  CHECK(HasNote(p, "NCCL_SOCKET_IFNAME"));
}

TEST_CASE("a node without active ports gets no NCCL_IB_HCA, with the reason") {
  NodeFacts f = testing::IbNode();
  for (auto& port : f.ib_ports) port.state = "DOWN";
  Plan p = MustResolve("infiniband", {}, f);
  CHECK(p.Find("NCCL_IB_HCA") == nullptr);
  CHECK(HasNote(p, "NCCL_IB_HCA"));
}

TEST_CASE("a required computed value the node lacks is an error naming the recipe line") {
  auto r = ParseRecipe("[env]\nNCCL_IB_HCA = { compute = \"ib_hca\", required = true }\n",
                       "mine.toml", nullptr);
  REQUIRE(r.ok());
  auto p = Resolve(*r, {}, testing::SocketNode(), Modern(), "/r");
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().where == "mine.toml:2");
  CHECK_THAT(p.error().message, Catch::Contains("no RDMA port"));
}

TEST_CASE("{run_dir} without a run directory is an error") {
  auto r = LoadRecipe("default");
  REQUIRE(r.ok());
  auto p = Resolve(*r, {}, testing::IbNode(), Modern(), "");
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(p.error().fix, Catch::Contains("--run-dir"));
}

TEST_CASE("shell output single-quotes hostile values") {
  Plan p;
  p.recipe = "x";
  p.entries.push_back({.name = "NCCL_DEBUG_FILE",
                       .value = "a'b $(touch /tmp/pwn) `id`\nnext",
                       .source = Source::kUser,
                       .origin = "environment"});
  p.entries.push_back(
      {.name = "NCCL_BAD;NAME", .value = "v", .source = Source::kUser, .origin = "environment"});
  p.conflicts.push_back({"NCCL_X", "v\nexport EVIL=1", "bad\nexport EVIL=2", "fix", false});
  std::string sh = PlanToShell(p);
  CHECK_THAT(sh,
             Catch::Contains("export NCCL_DEBUG_FILE='a'\\''b $(touch /tmp/pwn) `id`\nnext'\n"));
  CHECK_THAT(sh, !Catch::Contains("export NCCL_BAD;NAME"));
  CHECK_THAT(sh, !Catch::Contains("\nexport EVIL"));
}

TEST_CASE("JSON plan carries sources, versions, thresholds and waivers") {
  Environment env{{"NCCL_DEBUG", "INFO"}};
  Plan p = MustResolve("roce", env, testing::RoceNode());
  auto j = PlanToJson(p);
  CHECK(j["recipe"] == "roce");
  CHECK(j["versions"]["nccl"] == "2.28.9");
  CHECK(j["thresholds"]["min_roce_mtu"] == 9000);
  bool saw_user = false;
  for (const auto& e : j["entries"]) {
    if (e["name"] == "NCCL_DEBUG") {
      saw_user = e["source"] == "user" && e["recipe_value"] == "WARN";
    }
  }
  CHECK(saw_user);
  CHECK(j["notes"].size() >= 1);
}

TEST_CASE("explain text lists each entry with source, origin and reason") {
  Plan p = MustResolve("infiniband", {{"NCCL_IB_DISABLE", "1"}}, testing::IbNode());
  std::string t = PlanToText(p);
  CHECK_THAT(t, Catch::Contains("NCCL_IB_HCA"));
  CHECK_THAT(t, Catch::Contains("computed  recipes/infiniband.toml:"));
  CHECK_THAT(t, Catch::Contains("    why       "));
  CHECK_THAT(t, Catch::Contains("FAIL NCCL_IB_DISABLE=1"));
}

TEST_CASE("a recipe without Flight Recorder settings still gets what the hang capture needs") {
  // A site recipe that sets only NCCL_DEBUG: the plan adds the heartbeat and Flight Recorder
  // variables itself (origin "safe-launch (hang capture)") and keeps a user's own pipe path.
  auto r = ParseRecipe("[env]\nNCCL_DEBUG = \"WARN\"\n", "/site/mine.toml",
                       [](std::string_view) -> Result<Recipe> { return MakeError("no parent"); });
  REQUIRE(r.ok());
  Environment env{{"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/mine/pipe_"}};
  auto p = Resolve(*r, env, testing::IbNode(), Modern(), "/runs/job1/gpu01");
  REQUIRE(p.ok());
  const PlanEntry* hb = p->Find("SAFE_LAUNCH_HEARTBEAT");
  REQUIRE(hb != nullptr);
  CHECK(hb->value == "/runs/job1/gpu01/heartbeat");
  CHECK(hb->origin == "safe-launch (hang capture)");
  REQUIRE(p->Find("TORCH_FR_DUMP_TEMP_FILE") != nullptr);
  CHECK(p->Find("TORCH_FR_DUMP_TEMP_FILE")->value == "/runs/job1/gpu01/fr_rank_");
  REQUIRE(p->Find("TORCH_FR_BUFFER_SIZE") != nullptr);
  CHECK(p->Find("TORCH_NCCL_DUMP_ON_TIMEOUT")->value == "1");
  const PlanEntry* pipe = p->Find("TORCH_NCCL_DEBUG_INFO_PIPE_FILE");
  REQUIRE(pipe != nullptr);
  CHECK(pipe->value == "/mine/pipe_");
  CHECK(pipe->source == Source::kUser);
  // Applied, the job environment has every one of them: nothing is added behind the plan's back.
  Environment job = ApplyPlan(*p, env);
  CHECK(job.at("SAFE_LAUNCH_HEARTBEAT") == "/runs/job1/gpu01/heartbeat");
}

TEST_CASE("the default recipe's Flight Recorder paths are the ones the hang capture uses") {
  Plan p = MustResolve("default", {}, testing::IbNode());
  CHECK(p.Find("TORCH_FR_DUMP_TEMP_FILE")->origin != "safe-launch (hang capture)");
  CHECK(p.Find("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")->value == "/runs/job1/gpu01/frpipe_");
  REQUIRE(p.Find("SAFE_LAUNCH_HEARTBEAT") != nullptr);
  // torch < 2.9 reads the old names: the capture rows follow NameFor like recipe rows.
  Versions old = Modern();
  old.torch = Version{2, 4, 0};
  Plan q = MustResolve("default", {}, testing::IbNode(), old);
  CHECK(q.Find("TORCH_NCCL_TRACE_BUFFER_SIZE") != nullptr);
  CHECK(q.Find("TORCH_FR_BUFFER_SIZE") == nullptr);
}

TEST_CASE("an NCCL configuration file value is kept, not exported, and judged for conflicts") {
  nccl::ConfFiles conf;
  conf.values.push_back({"NCCL_IB_HCA", "=mlx5_42", "/etc/nccl.conf:2"});
  auto r = LoadRecipe("infiniband");
  REQUIRE(r.ok());
  auto p = Resolve(*r, {}, testing::IbNode(), Modern(), "/runs/job1/gpu01", conf);
  REQUIRE(p.ok());
  const PlanEntry* hca = p->Find("NCCL_IB_HCA");
  REQUIRE(hca != nullptr);
  CHECK(hca->source == Source::kConfFile);
  CHECK(hca->origin == "/etc/nccl.conf:2");
  CHECK_FALSE(hca->recipe_value.empty());
  Environment job = ApplyPlan(*p, {});
  CHECK(job.count("NCCL_IB_HCA") == 0);
  CHECK_THAT(PlanToShell(*p), !Catch::Contains("export NCCL_IB_HCA="));
  // The admin's value names a port this node lacks: NCCL will use it, so it is a conflict.
  bool conflict = false;
  for (const auto& c : p->conflicts) conflict |= c.name == "NCCL_IB_HCA";
  CHECK(conflict);
  // The user's environment overrides the file (as in NCCL), and the plan says so.
  auto q = Resolve(*r, {{"NCCL_IB_HCA", "=mlx5_0"}}, testing::IbNode(), Modern(), "/r", conf);
  REQUIRE(q.ok());
  CHECK(q->Find("NCCL_IB_HCA")->source == Source::kUser);
  CHECK_THAT(q->Find("NCCL_IB_HCA")->reason, Catch::Contains("overrides /etc/nccl.conf:2"));
}

TEST_CASE("Python stacks put safe-launch's sitecustomize first and keep the job's PYTHONPATH") {
  Plan p =
      MustResolve("default", {{"PYTHONPATH", "/home/alice/lib:/opt/site"}}, testing::SocketNode());
  AddPythonStacks(&p, {{"PYTHONPATH", "/home/alice/lib:/opt/site"}},
                  {"/usr/share/safe-launch/python", "/runs/job1/gpu01/pystacks", 41});
  const PlanEntry* pp = p.Find("PYTHONPATH");
  REQUIRE(pp != nullptr);
  CHECK(pp->value == "/usr/share/safe-launch/python:/home/alice/lib:/opt/site");
  CHECK(pp->origin == "safe-launch (hang capture)");
  CHECK(p.Find("SAFE_LAUNCH_PYSTACKS_DIR")->value == "/runs/job1/gpu01/pystacks");
  CHECK(p.Find("SAFE_LAUNCH_PYSTACKS_SIGNAL")->value == "41");
  auto env = ApplyPlan(p, {{"PYTHONPATH", "/home/alice/lib:/opt/site"}});
  CHECK(env["PYTHONPATH"] == "/usr/share/safe-launch/python:/home/alice/lib:/opt/site");
  Plan q = MustResolve("default", {}, testing::SocketNode());
  AddPythonStacks(&q, {}, {"/p/share/safe-launch/python", "/r/pystacks", 41});
  CHECK(q.Find("PYTHONPATH")->value == "/p/share/safe-launch/python");
}
