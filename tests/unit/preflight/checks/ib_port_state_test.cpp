// ib.port.state: its pass, warn, fail and error cases (preflight/checks/ib_port_state.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/ib_check_fixture.h"
#include "tests/unit/test_paths.h"

TEST_CASE("ib.port.state passes 8 ACTIVE/LinkUp NDR ports") {
  Node n = Fixture("ib-healthy");
  auto fs = n.Run(CheckIbPortState);
  REQUIRE(fs.size() == 8);
  CHECK(Count(fs, Outcome::kPass) == 8);
  const Finding* f = For(fs, "mlx5_0:1");
  REQUIRE(f);
  CHECK(f->check_id == "ib.port.state");
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE"));
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)"));
}

TEST_CASE("ib.port.state fails a down port NCCL would use, with the fix") {
  Node n = Fixture("ib-port-down");
  auto fs = n.Run(CheckIbPortState);
  const Finding* f = For(fs, "mlx5_3:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kFail);
  CHECK(Contains(f->message, "DOWN/Polling"));
  CHECK(Contains(f->next_step, "ibstat mlx5_3"));
  CHECK(Contains(f->next_step, "cable"));
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_3/ports/1/state", "1: DOWN"));
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_3/ports/1/phys_state", "2: Polling"));
  CHECK(Count(fs, Outcome::kPass) == 7);  // the down port's 10 Gb/s does not make others "fast"
}

TEST_CASE("ib.port.state only notes a down port that NCCL_IB_HCA excludes") {
  Node n = Fixture("ib-port-down");
  n.env["NCCL_IB_HCA"] = "^=mlx5_3";
  auto fs = n.Run(CheckIbPortState);
  const Finding* f = For(fs, "mlx5_3:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kSkip);
  CHECK(Contains(f->message, "NCCL_IB_HCA=^=mlx5_3"));
  CHECK(Count(fs, Outcome::kFail) == 0);
}

TEST_CASE("ib.port.state: a list in NCCL_IB_HCA makes unlisted down ports informational") {
  Node n = Fixture("ib-port-down");
  n.env["NCCL_IB_HCA"] = "=mlx5_0,mlx5_1";
  auto fs = n.Run(CheckIbPortState);
  CHECK(For(fs, "mlx5_3:1")->outcome == Outcome::kSkip);
  CHECK(For(fs, "mlx5_0:1")->outcome == Outcome::kPass);
  CHECK(For(fs, "mlx5_5:1")->outcome == Outcome::kSkip);
}

TEST_CASE("ib.port.state warns about a port slower than its siblings") {
  Node n = OnTree(
      IbSysroot().Port("mlx5_0", "400 Gb/sec (4X NDR)").Port("mlx5_1", "200 Gb/sec (2X NDR)"));
  auto fs = n.Run(CheckIbPortState);
  CHECK(For(fs, "mlx5_0:1")->outcome == Outcome::kPass);
  const Finding* slow = For(fs, "mlx5_1:1");
  CHECK(slow->outcome == Outcome::kWarn);
  CHECK(Contains(slow->message, "400 Gb/sec"));
  CHECK(Contains(slow->next_step, "mlxlink -d mlx5_1"));
  SECTION("and fails it below thresholds.min_rate_gbps") {
    n.th.min_rate_gbps = 400;
    auto fs2 = n.Run(CheckIbPortState);
    CHECK(For(fs2, "mlx5_1:1")->outcome == Outcome::kFail);
  }
}

TEST_CASE("ib.port.state skips a node without IB devices") {
  Node n = Fixture("socket-only");
  auto fs = n.Run(CheckIbPortState);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kSkip);
  CHECK(Contains(fs[0].message, "NET/Socket"));
}

TEST_CASE("ib.port.state reports unreadable files as errors naming the host path") {
  Node n = Fixture("ib-broken");
  auto fs = n.Run(CheckIbPortState);
  const std::string root = SL_FIXTURES_DIR + "/ib-broken";
  const Finding* garbage = For(fs, "mlx5_0:1");
  REQUIRE(garbage);
  CHECK(garbage->outcome == Outcome::kError);
  CHECK(Contains(garbage->message, root + "/sys/class/infiniband/mlx5_0/ports/1/state"));
  const Finding* no_rate = For(fs, "mlx5_1:1");
  CHECK(no_rate->outcome == Outcome::kError);
  CHECK(Contains(no_rate->message, "/mlx5_1/ports/1/rate"));
  const Finding* dir = For(fs, "mlx5_2:1");
  CHECK(dir->outcome == Outcome::kError);
  CHECK(Contains(dir->message, "link_layer"));
  CHECK(For(fs, "mlx5_3:1")->outcome == Outcome::kPass);  // its trouble is a counter
}

TEST_CASE("ib.port.state names the port fact whose file is garbage") {
  const std::string p = IbSysroot::PortDir("mlx5_0");
  Node n =
      OnTree(IbSysroot().Port("mlx5_0", "400 Gb/sec (4X NDR)").File(p + "/state", "garbage\n"));
  const Finding* f = n.FindingFor(CheckIbPortState, "mlx5_0:1");
  CHECK(f->outcome == Outcome::kError);
  CHECK(f->code == "ib.port.state/port_unreadable");
  const Fact<SysfsCodeName>& state = n.facts.ib_ports[0].sysfs.state;
  CHECK(state.path == p + "/state");
  const std::string why = state.error.where + ": " + state.error.message;
  CHECK(HasEvidence(*f, state.path, "unreadable: " + why));
  CHECK(Contains(f->message, why));
}
