#include "common/finding.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

TEST_CASE("worst outcome ranks fail above error above warn and ignores waived") {
  std::vector<sl::Finding> fs(3);
  fs[0].outcome = sl::Outcome::kPass;
  fs[1].outcome = sl::Outcome::kWarn;
  fs[2].outcome = sl::Outcome::kFail;
  CHECK(sl::Worst(fs) == sl::Outcome::kFail);
  fs[2].waived = true;
  CHECK(sl::Worst(fs) == sl::Outcome::kWarn);
  fs[0].outcome = sl::Outcome::kError;
  CHECK(sl::Worst(fs) == sl::Outcome::kError);
}

TEST_CASE("a finding round-trips through JSON with its evidence") {
  sl::Finding f;
  f.check_id = "ib.port.state";
  f.entity = "mlx5_0:1";
  f.outcome = sl::Outcome::kFail;
  f.message = "port is DOWN";
  f.next_step = "check the cable";
  f.With("/sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN");
  nlohmann::json j = f;
  CHECK(j["outcome"] == "fail");
  auto back = j.get<sl::Finding>();
  CHECK(back.entity == "mlx5_0:1");
  CHECK(back.outcome == sl::Outcome::kFail);
  REQUIRE(back.evidence.size() == 1);
  CHECK(back.evidence[0].value == "1: DOWN");
}
