#include <catch2/catch.hpp>

#include "common/file_reader.h"
#include "preflight/check.h"
#include "tests/unit/common/test_facts.h"

using namespace sl;

namespace {

// The checks under test, reached through the registry as the runner reaches them.
const preflight::CheckFn CheckEnvNccl = preflight::FindCheck("env.nccl")->run;

std::vector<Finding> Lint(const Environment& env, const NodeFacts& facts) {
  MemFileReader fs;
  Thresholds th;
  preflight::CheckContext ctx{facts, env, th};
  return CheckEnvNccl(ctx);
}

const Finding* For(const std::vector<Finding>& fs, std::string_view entity) {
  for (const auto& f : fs) {
    if (f.entity == entity) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("env.nccl passes when no NCCL variable is set") {
  auto f = Lint({{"PATH", "/bin"}}, testing::IbNode());
  REQUIRE(f.size() == 1);
  CHECK(f[0].check_id == "env.nccl");
  CHECK(f[0].outcome == Outcome::kPass);
}

TEST_CASE("env.nccl passes valid variables") {
  auto f = Lint({{"NCCL_DEBUG", "WARN"}, {"NCCL_IB_HCA", "=mlx5_0:1"}}, testing::IbNode());
  CHECK(Worst(f) == Outcome::kPass);
}

TEST_CASE("env.nccl warns on an unknown name with did you mean") {
  auto f = Lint({{"NCCL_IB_HAC", "mlx5_0"}}, testing::IbNode());
  const Finding* x = For(f, "NCCL_IB_HAC");
  REQUIRE(x != nullptr);
  CHECK(x->outcome == Outcome::kWarn);
  CHECK_THAT(x->message, Catch::Contains("did you mean NCCL_IB_HCA"));
}

TEST_CASE("env.nccl fails an invalid value NCCL would silently ignore") {
  auto f = Lint({{"NCCL_IB_TIMEOUT", "50"}, {"NCCL_DEBUG", "verbose"}}, testing::IbNode());
  REQUIRE(For(f, "NCCL_IB_TIMEOUT") != nullptr);
  CHECK(For(f, "NCCL_IB_TIMEOUT")->outcome == Outcome::kFail);
  CHECK_THAT(For(f, "NCCL_IB_TIMEOUT")->message, Catch::Contains("1..31"));
  CHECK(For(f, "NCCL_DEBUG")->outcome == Outcome::kFail);
  auto g = Lint({{"NCCL_IB_HCA", "mlx5_0:one"}}, testing::IbNode());
  CHECK(For(g, "NCCL_IB_HCA")->outcome == Outcome::kFail);
}

TEST_CASE("env.nccl warns on deprecated names and names the new one") {
  auto f = Lint({{"TORCH_NCCL_TRACE_BUFFER_SIZE", "2000"}}, testing::IbNode());
  const Finding* x = For(f, "TORCH_NCCL_TRACE_BUFFER_SIZE");
  REQUIRE(x != nullptr);
  CHECK(x->outcome == Outcome::kWarn);
  CHECK_THAT(x->next_step, Catch::Contains("TORCH_FR_BUFFER_SIZE"));
}

TEST_CASE("env.nccl fails NCCL_IB_DISABLE=1 while IB ports are active") {
  auto f = Lint({{"NCCL_IB_DISABLE", "1"}}, testing::IbNode());
  const Finding* x = For(f, "NCCL_IB_DISABLE");
  REQUIRE(x != nullptr);
  CHECK(x->outcome == Outcome::kFail);
  CHECK_THAT(x->message, Catch::Contains("sockets"));
  CHECK(Worst(Lint({{"NCCL_IB_DISABLE", "1"}}, testing::SocketNode())) == Outcome::kPass);
}

TEST_CASE("env.nccl fails NCCL_IB_HCA naming a down port") {
  auto f = Lint({{"NCCL_IB_HCA", "=mlx5_3:1"}}, testing::IbNode());
  CHECK(Worst(f) == Outcome::kFail);
  bool down = false;
  for (const auto& x : f) down = down || x.message.find("not ACTIVE") != std::string::npos;
  CHECK(down);
}

TEST_CASE("env.nccl fails a GID index on a RoCE v1 entry") {
  auto f = Lint({{"NCCL_IB_GID_INDEX", "2"}}, testing::RoceNode());
  CHECK(Worst(f) == Outcome::kFail);
  CHECK_THAT(For(f, "NCCL_IB_GID_INDEX")->next_step, Catch::Contains("3"));
}

TEST_CASE("env.nccl accepts NCCL_VERSION as set by NGC container images") {
  auto f = Lint({{"NCCL_VERSION", "2.21.5"}, {"NCCL_HOME", "/opt/nccl"}}, testing::IbNode());
  CHECK(Worst(f) == Outcome::kPass);
}

TEST_CASE("env.nccl warns on an NCCL debug file in a system path or a shared directory") {
  for (const char* path : {"/etc/shadow", "/usr/lib/x.%h.log", "/dev/sda"}) {
    auto f = Lint({{"NCCL_DEBUG_FILE", path}}, testing::IbNode());
    const Finding* d = For(f, "NCCL_DEBUG_FILE");
    REQUIRE(d != nullptr);
    CHECK(d->outcome == Outcome::kWarn);
    CHECK(d->message.find("system path") != std::string::npos);
  }
  auto f = Lint({{"NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p.log"}}, testing::IbNode());
  REQUIRE(For(f, "NCCL_DEBUG_FILE") != nullptr);
  CHECK(For(f, "NCCL_DEBUG_FILE")->message.find("share") != std::string::npos);
  // With the plan applied the run directory is known: outside it warns, inside it passes.
  f = Lint({{"NCCL_DEBUG_FILE", "/home/u/logs/nccl.%h.%p.log"},
            {"SAFE_LAUNCH_HEARTBEAT", "/home/u/safe-launch-runs/1/gpu01/heartbeat"}},
           testing::IbNode());
  REQUIRE(For(f, "NCCL_DEBUG_FILE") != nullptr);
  CHECK(For(f, "NCCL_DEBUG_FILE")->message.find("outside the run directory") != std::string::npos);
  f = Lint({{"NCCL_DEBUG_FILE", "/home/u/safe-launch-runs/1/gpu01/nccl.%h.%p.log"},
            {"SAFE_LAUNCH_HEARTBEAT", "/home/u/safe-launch-runs/1/gpu01/heartbeat"}},
           testing::IbNode());
  CHECK(Worst(f) == Outcome::kPass);
}
