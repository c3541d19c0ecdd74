#include "recipes/recipe.h"

#include <catch2/catch.hpp>
#include <map>

#include "tests/unit/common/test_facts.h"

using namespace sl;
using namespace sl::recipes;

namespace {

Result<Recipe> Parse(std::string_view text, std::map<std::string, std::string> others = {}) {
  ParentLoader loader = [&others](std::string_view name) -> Result<Recipe> {
    auto it = others.find(std::string(name));
    if (it == others.end()) return MakeError("no recipe named '" + std::string(name) + "'");
    return ParseRecipe(it->second, name, nullptr);
  };
  return ParseRecipe(text, "test.toml", loader);
}

}  // namespace

TEST_CASE("every shipped recipe loads") {
  auto names = BuiltinRecipeNames();
  for (const char* want : {"default", "infiniband", "roce", "socket-only"}) {
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  for (const auto& n : names) {
    auto r = LoadRecipe(n);
    INFO(n << ": " << (r.ok() ? "" : r.error().Describe()));
    REQUIRE(r.ok());
    CHECK(r->name == n);
  }
}

TEST_CASE("a recipe that extends another inherits its env and overrides by name") {
  auto r = LoadRecipe("roce");
  REQUIRE(r.ok());
  CHECK(r->chain == std::vector<std::string>{"roce", "default"});
  bool has_debug = false, has_gid = false;
  for (const auto& e : r->env) {
    if (e.name == "NCCL_DEBUG") {
      has_debug = true;
      CHECK_THAT(e.origin, Catch::StartsWith("recipes/default.toml:"));
    }
    if (e.name == "NCCL_IB_GID_INDEX") {
      has_gid = true;
      CHECK(e.compute == "roce_gid_index");
    }
  }
  CHECK(has_debug);
  CHECK(has_gid);
  CHECK(r->thresholds.min_roce_mtu == 9000);
}

TEST_CASE("env entries record file and line") {
  auto r = Parse("description = \"x\"\n\n[env]\nNCCL_DEBUG = \"INFO\"\nNCCL_IB_TIMEOUT = 22\n");
  REQUIRE(r.ok());
  REQUIRE(r->env.size() == 2);
  CHECK(r->env[0].origin == "test.toml:4");
  CHECK(r->env[1].literal == "22");
  CHECK(r->env[1].origin == "test.toml:5");
}

TEST_CASE("malformed TOML reports file, line and column") {
  auto r = Parse("[env]\nNCCL_DEBUG = \"WARN\"\nNCCL_IB_TIMEOUT = = 3\n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().where, Catch::StartsWith("test.toml:3:"));
  CHECK_THAT(r.error().message, Catch::Contains("malformed TOML"));
}

TEST_CASE("an unknown top-level key suggests the right one") {
  auto r = Parse("[threshold]\nmin_shm = 1\n");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where == "test.toml:1");
  CHECK_THAT(r.error().fix, Catch::Contains("did you mean 'thresholds'"));
}

TEST_CASE("an unknown NCCL variable in [env] suggests the registered name") {
  auto r = Parse("[env]\nNCCL_IB_HAC = \"mlx5_0\"\n");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where == "test.toml:2");
  CHECK_THAT(r.error().message, Catch::Contains("NCCL_IB_HAC"));
  CHECK_THAT(r.error().fix, Catch::Contains("NCCL_IB_HCA"));
}

TEST_CASE("variables outside NCCL/torch namespaces are allowed unvalidated") {
  auto r = Parse("[env]\nCUDA_DEVICE_MAX_CONNECTIONS = 1\n");
  REQUIRE(r.ok());
  CHECK(r->env[0].literal == "1");
}

TEST_CASE("a value outside the registry range names the variable and the range") {
  auto r = Parse("[env]\nNCCL_IB_TIMEOUT = 99\n");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where == "test.toml:2");
  CHECK_THAT(r.error().message, Catch::Contains("NCCL_IB_TIMEOUT"));
  CHECK_THAT(r.error().message, Catch::Contains("1..31"));
}

TEST_CASE("old variable names in a recipe are refused with the new name") {
  auto r = Parse("[env]\nTORCH_NCCL_TRACE_BUFFER_SIZE = 2000\n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().fix, Catch::Contains("TORCH_FR_BUFFER_SIZE"));
}

TEST_CASE("an unknown compute name suggests the valid ones") {
  auto r = Parse("[env]\nNCCL_IB_HCA = { compute = \"ib_hcas\" }\n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().fix, Catch::Contains("ib_hca"));
  auto r2 = Parse("[env]\nNCCL_IB_HCA = { compute = \"ib_hca\", requird = true }\n");
  REQUIRE_FALSE(r2.ok());
  CHECK_THAT(r2.error().fix, Catch::Contains("required"));
}

TEST_CASE("thresholds map onto sl::Thresholds with sizes and units") {
  auto r = Parse(
      "[thresholds]\nmin_shm = \"8 GiB\"\nexpected_mtu = 4096\nmin_rate_gbps = 200\n"
      "min_memlock = \"unlimited\"\nmin_nofile = 1048576\n");
  REQUIRE(r.ok());
  CHECK(r->thresholds.min_shm == 8ull << 30);
  CHECK(r->thresholds.expected_mtu == 4096);
  CHECK(r->thresholds.min_rate_gbps == 200);
  CHECK(r->thresholds.min_memlock == 0);
  CHECK(r->thresholds.min_nofile == 1048576);
  CHECK(r->thresholds_set.size() == 5);
}

TEST_CASE("bandwidth thresholds: fractions in 0..1 and a judged size") {
  auto r = Parse(
      "[thresholds]\nmin_busbw_fraction = 0.8\nmax_busbw_drop = 0.05\n"
      "busbw_judge_bytes = \"256 MiB\"\n");
  REQUIRE(r.ok());
  CHECK(r->thresholds.min_busbw_fraction == 0.8);
  CHECK(r->thresholds.max_busbw_drop == 0.05);
  CHECK(r->thresholds.busbw_judge_bytes == 256ull << 20);
  CHECK(Parse("[thresholds]\nmin_busbw_fraction = 1\n").ok());  // an integer is a number too
  auto bad = Parse("[thresholds]\nmin_busbw_fraction = 1.5\n");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("fraction in 0..1"));
  CHECK_FALSE(Parse("[thresholds]\nmax_busbw_drop = nan\n").ok());
}

TEST_CASE("bad thresholds name the key and range") {
  auto r = Parse("[thresholds]\nmin_shmem = 1\n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().fix, Catch::Contains("min_shm"));
  auto r2 = Parse("[thresholds]\nexpected_mtu = 100000\n");
  REQUIRE_FALSE(r2.ok());
  CHECK_THAT(r2.error().message, Catch::Contains("256..65536"));
  auto r3 = Parse("[thresholds]\nmin_shm = \"8 parsecs\"\n");
  REQUIRE_FALSE(r3.ok());
  CHECK_THAT(r3.error().message, Catch::Contains("unit"));
}

TEST_CASE("waive lists are unioned along extends and validated as ids") {
  auto r =
      Parse("extends = \"base\"\nwaive = [\"pci.acs\"]\n", {{"base", "waive = [\"gpu.gdr\"]\n"}});
  REQUIRE(r.ok());
  CHECK(r->waive == std::vector<std::string>{"gpu.gdr", "pci.acs"});
  auto bad = Parse("waive = [\"PCI ACS\"]\n");
  REQUIRE_FALSE(bad.ok());
}

TEST_CASE("extends of a missing recipe is an error naming it") {
  auto r = Parse("extends = \"nope\"\n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("nope"));
  auto named = LoadRecipe("infiniband2");
  REQUIRE_FALSE(named.ok());
  CHECK_THAT(named.error().fix, Catch::Contains("infiniband"));
}

TEST_CASE("a recipe file that extends itself is a cycle, not a crash") {
  char tmpl[] = "/tmp/sl-recipe-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string path = std::string(tmpl) + "/loop.toml";
  FILE* f = fopen(path.c_str(), "w");
  std::fprintf(f, "extends = \"%s\"\n", path.c_str());
  fclose(f);
  auto r = LoadRecipe(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("cycle"));
  std::remove(path.c_str());
  rmdir(tmpl);
}

TEST_CASE("the recipe is chosen from the node's link layer") {
  std::string why;
  auto ib = ChooseRecipe(testing::IbNode(), {}, &why);
  REQUIRE(ib.ok());
  CHECK(ib->name == "infiniband");
  CHECK_THAT(why, Catch::Contains("InfiniBand"));
  CHECK(ChooseRecipe(testing::RoceNode(), {}, &why)->name == "roce");
  CHECK(ChooseRecipe(testing::SocketNode(), {}, &why)->name == "socket-only");
}

TEST_CASE("[match] on GPU model and device prefix") {
  Match m;
  m.gpu_model = {"H200"};
  NodeFacts f = testing::IbNode();
  CHECK_FALSE(MatchesFacts(m, f));
  GpuInfo g;
  g.model = "NVIDIA H200";
  f.gpus.push_back(g);
  CHECK(MatchesFacts(m, f));
  Match d;
  d.device = {"bnxt_re"};
  CHECK_FALSE(MatchesFacts(d, f));
  d.device = {"mlx5_"};
  CHECK(MatchesFacts(d, f));
}

TEST_CASE("garbage and truncated recipes give errors, never crashes") {
  // Every prefix of every shipped recipe, plus byte soup: each must parse or fail cleanly.
  std::vector<std::string> inputs;
  for (const auto& n : BuiltinRecipeNames()) {
    const std::string& text = *BuiltinRecipeText(n);
    for (std::size_t i = 0; i < text.size(); i += 7) inputs.push_back(text.substr(0, i));
  }
  std::uint32_t x = 12345;
  // The alphabet's size, not a hand count: indexing past it was UB (found by scripts/sanitize.sh).
  constexpr std::string_view kAlphabet = "[]{}=\"'#\n.,abcNCCL_0123456789 \\";
  for (int k = 0; k < 200; ++k) {
    std::string soup;
    for (int i = 0; i < 64; ++i) {
      x = x * 1103515245u + 12345u;
      soup += kAlphabet[(x >> 16) % kAlphabet.size()];
    }
    inputs.push_back(soup);
  }
  inputs.push_back(std::string("[env]\nNCCL_DEBUG = \"\0WARN\"\n", 25));
  inputs.push_back("[env]\nNCCL_IB_HCA = { compute = 5 }\n");
  inputs.push_back("[env]\nNCCL_DEBUG = [1, 2]\n");
  inputs.push_back("match = 3\nenv = \"x\"\nthresholds = []\n");
  std::size_t ok = 0;
  for (const auto& in : inputs) {
    auto r = ParseRecipe(in, "fuzz.toml", nullptr);
    if (r.ok()) {
      ++ok;
    } else {
      CHECK_THAT(r.error().where, Catch::StartsWith("fuzz.toml"));
    }
  }
  CHECK(ok < inputs.size());
}

TEST_CASE("no recipe is chosen from a fabric that could not be read") {
  // A file where /sys/class/infiniband should be: "no RDMA device" is not known, so neither
  // socket-only (NCCL_IB_DISABLE=1) nor any other recipe is picked; the error names the path and
  // the flag that decides instead.
  MemFileReader fs;
  fs.AddFile("/sys/class/infiniband", "");
  NodeFacts facts = GatherNodeFacts(fs);
  std::string why;
  auto r = ChooseRecipe(facts, {}, &why);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().where == "/sys/class/infiniband");
  CHECK_THAT(r.error().message, Catch::Contains("could not be read"));
  CHECK_THAT(r.error().fix, Catch::Contains("--recipe NAME"));
  CHECK_THAT(r.error().fix, Catch::Contains("socket-only"));

  // A port whose link layer is unreadable: InfiniBand or RoCE is not known either.
  MemFileReader port;
  port.AddFile("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  port.AddDir("/sys/class/infiniband/mlx5_0/ports/1/link_layer");
  REQUIRE_FALSE(ChooseRecipe(GatherNodeFacts(port), {}, &why).ok());
}

TEST_CASE("a recipe's [slurm] table sets the remediation defaults and rejects bad values") {
  auto r = Parse("[slurm]\non_node_fault = \"requeue\"\nfault_threshold = 0.9\nmax_requeues = 1\n");
  REQUIRE(r.ok());
  CHECK(r->slurm.on_node_fault == "requeue");
  CHECK(r->slurm.origin == "test.toml:2");
  CHECK(*r->slurm.fault_threshold == Approx(0.9));
  CHECK(*r->slurm.max_requeues == 1);
  CHECK(!Parse("[slurm]\non_node_fault = \"reboot\"\n").ok());
  CHECK(!Parse("[slurm]\nfault_threshold = 1.5\n").ok());
  auto typo = Parse("[slurm]\nmax_requeue = 1\n");
  REQUIRE(!typo.ok());
  CHECK(typo.error().fix.find("max_requeues") != std::string::npos);
}
