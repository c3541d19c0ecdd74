// ib.port.errors: its pass, warn, fail and error cases (preflight/checks/ib_port_errors.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/ib_check_fixture.h"
#include "tests/unit/test_paths.h"

TEST_CASE("ib.port.errors passes ports whose error counters are zero") {
  Node n = Fixture("ib-healthy");
  auto fs = n.Run(CheckIbPortErrors);
  REQUIRE(fs.size() == 8);
  CHECK(Count(fs, Outcome::kPass) == 8);  // lifespan=10 and traffic counters are not errors
}

TEST_CASE("ib.port.errors warns with the non-zero counters as evidence") {
  Node n = Fixture("ib-port-down");
  auto fs = n.Run(CheckIbPortErrors);
  const Finding* f = For(fs, "mlx5_3:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kWarn);
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_3/ports/1/counters/symbol_error", "1187"));
  CHECK(HasEvidence(*f, "/sys/class/infiniband/mlx5_3/ports/1/counters/link_downed", "14"));
  CHECK(Contains(f->message, "link_error_recovery=3"));
  CHECK(Contains(f->next_step, "mlxlink -d mlx5_3"));
  CHECK(Count(fs, Outcome::kWarn) == 1);
}

TEST_CASE("ib.port.errors reads RoCE hw_counters and ignores congestion counters") {
  // sysfs_hw_counters_grep_roce_nccl-394.txt
  IbSysroot tree;
  tree.RocePort("mlx5_0", "ens3np0", 9000,
                {{3, "0000:0000:0000:0000:0000:ffff:0b00:0048", "RoCE v2"}});
  const std::string hw = "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/";
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"duplicate_request", "0"},
                                                        {"implied_nak_seq_err", "0"},
                                                        {"lifespan", "10"},
                                                        {"local_ack_timeout_err", "91316"},
                                                        {"np_cnp_sent", "17269947"},
                                                        {"np_ecn_marked_roce_packets", "11293938"},
                                                        {"out_of_buffer", "0"},
                                                        {"out_of_sequence", "6140236"},
                                                        {"packet_seq_err", "929974"},
                                                        {"req_cqe_error", "2"},
                                                        {"req_cqe_flush_error", "0"},
                                                        {"resp_cqe_error", "20540"}}) {
    tree.File(hw + name, value + "\n");
  }
  Node n = OnTree(tree);
  const Finding* f = n.FindingFor(CheckIbPortErrors, "mlx5_0:1");
  CHECK(f->outcome == Outcome::kWarn);
  CHECK(HasEvidence(*f, hw + "local_ack_timeout_err", "91316"));
  CHECK(HasEvidence(*f, hw + "out_of_sequence", "6140236"));
  CHECK(Contains(f->message, "packet_seq_err=929974"));
  CHECK_FALSE(Contains(f->message, "np_cnp_sent"));
  CHECK_FALSE(Contains(f->message, "lifespan"));
  CHECK(Contains(f->next_step, "PFC/ECN"));
}

TEST_CASE("ib.port.errors: a non-numeric counter is an error naming the file") {
  Node n = Fixture("ib-broken");
  const Finding* f = n.FindingFor(CheckIbPortErrors, "mlx5_3:1");
  CHECK(f->outcome == Outcome::kError);
  CHECK(Contains(f->message, SL_FIXTURES_DIR +
                                 "/ib-broken/sys/class/infiniband/mlx5_3/ports/1/counters/"
                                 "symbol_error"));
  CHECK(Contains(f->message, "N/A"));
}
