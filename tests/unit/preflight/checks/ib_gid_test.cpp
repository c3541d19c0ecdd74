// ib.gid: its pass, warn, fail and error cases (preflight/checks/ib_gid.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/ib_check_fixture.h"

TEST_CASE("ib.gid passes the index NCCL picks on a real show_gids table") {
  Node n = Fixture("roce-jumbo");
  auto fs = n.Run(CheckIbGid);
  REQUIRE(fs.size() == 2);
  const Finding* f = For(fs, "mlx5_0:1");
  CHECK(f->outcome == Outcome::kPass);
  CHECK(Contains(f->message, "GID 3"));
  CHECK(Contains(f->message, "11.0.0.72"));
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3", "RoCE v2"));
  CHECK(For(fs, "mlx5_1:1")->outcome == Outcome::kPass);
}

TEST_CASE("ib.gid works for container tables starting at index 4") {
  Node n = Fixture("roce-container-gid4");
  auto fs = n.Run(CheckIbGid);
  REQUIRE(fs.size() == 4);
  CHECK(Count(fs, Outcome::kPass) == 4);
  CHECK(Contains(For(fs, "mlx5_3:1")->message, "GID 7"));
}

TEST_CASE("ib.gid fails NCCL_IB_GID_INDEX naming a link-local entry and names the right one") {
  Node n = Fixture("roce-jumbo");
  n.env["NCCL_IB_GID_INDEX"] = "1";
  const Finding* f = n.FindingFor(CheckIbGid, "mlx5_0:1");
  CHECK(f->outcome == Outcome::kFail);
  CHECK(Contains(f->message, "link-local"));
  CHECK(Contains(f->next_step, "NCCL_IB_GID_INDEX=3"));
  CHECK(Contains(f->next_step, "unset NCCL_IB_GID_INDEX"));
  CHECK(HasEvidence(*f, "NCCL_IB_GID_INDEX", "1"));
}

TEST_CASE("ib.gid fails NCCL_IB_GID_INDEX naming a RoCE v1 entry") {
  Node n = Fixture("roce-jumbo");
  n.env["NCCL_IB_GID_INDEX"] = "2";
  const Finding* f = n.FindingFor(CheckIbGid, "mlx5_0:1");
  CHECK(f->outcome == Outcome::kFail);
  CHECK(Contains(f->message, "not RoCE v2"));
}

TEST_CASE("ib.gid passes NCCL_IB_GID_INDEX naming the RoCE v2 entry") {
  Node n = Fixture("roce-jumbo");
  n.env["NCCL_IB_GID_INDEX"] = "3";
  CHECK(Count(n.Run(CheckIbGid), Outcome::kPass) == 2);
}

TEST_CASE("ib.gid: a bare-metal GID index is an empty slot inside a pod") {
  Node n = Fixture("roce-container-gid4");
  n.env["NCCL_IB_GID_INDEX"] = "3";
  const Finding* f = n.FindingFor(CheckIbGid, "mlx5_0:1");
  CHECK(f->outcome == Outcome::kFail);
  CHECK(Contains(f->message, "empty"));
  CHECK(Contains(f->next_step, "NCCL_IB_GID_INDEX=7"));
}

TEST_CASE("ib.gid fails when no usable RoCE v2 GID exists") {
  Node n =
      OnTree(IbSysroot().RocePort("mlx5_0", "ens3np0", 9000,
                                  {{0, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "IB/RoCE v1"},
                                   {1, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "RoCE v2"}}));
  auto fs = n.Run(CheckIbGid);
  const Finding* f = For(fs, "mlx5_0:1");
  CHECK(f->outcome == Outcome::kFail);
  CHECK(Contains(f->message, "no usable RoCE v2 GID"));
  CHECK(Contains(f->next_step, "ip addr add"));
  CHECK(Contains(f->next_step, "ens3np0"));
}

TEST_CASE("ib.gid -v adds a show_gids-style table") {
  Node n = Fixture("roce-jumbo");
  n.verbose = true;
  const Finding* f = n.FindingFor(CheckIbGid, "mlx5_0:1");
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_0/ports/1/gids/2",
                    "0000:0000:0000:0000:0000:ffff:0b00:0048  11.0.0.72  v1  ens3np0"));
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_0/ports/1/gids/0",
                    "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec  -  v1  ens3np0"));
}

TEST_CASE("ib.gid skips InfiniBand-only and socket-only nodes") {
  Node ib = Fixture("ib-healthy");
  auto a = ib.Run(CheckIbGid);
  REQUIRE(a.size() == 1);
  CHECK(a[0].outcome == Outcome::kSkip);
  Node sock = Fixture("socket-only");
  auto b = sock.Run(CheckIbGid);
  REQUIRE(b.size() == 1);
  CHECK(b[0].outcome == Outcome::kSkip);
}

TEST_CASE("ib.gid: a truncated GID is an error naming the file") {
  Node n = Fixture("ib-broken");
  const Finding* f = n.FindingFor(CheckIbGid, "mlx5_4:1");
  CHECK(f->outcome == Outcome::kError);
  CHECK(Contains(f->message, "/ib-broken/sys/class/infiniband/mlx5_4/ports/1/gids/3"));
}
