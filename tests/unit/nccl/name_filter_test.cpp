#include "nccl/name_filter.h"

#include <catch2/catch.hpp>

TEST_CASE("NCCL_IB_HCA prefix entries select every matching device") {
  auto f = sl::nccl::ParseIbHca("mlx5");
  REQUIRE(f.ok());
  CHECK(sl::nccl::FilterSelectsIbPort(*f, "mlx5_0", 1));
  CHECK(sl::nccl::FilterSelectsIbPort(*f, "mlx5_10", 1));
  CHECK_FALSE(sl::nccl::FilterSelectsIbPort(*f, "bnxt_re0", 1));
}

TEST_CASE("NCCL_IB_HCA exact entries with ports select only that port") {
  auto f = sl::nccl::ParseIbHca("=mlx5_1:1,mlx5_2");
  REQUIRE(f.ok());
  CHECK(f->exact);
  CHECK(sl::nccl::FilterSelectsIbPort(*f, "mlx5_1", 1));
  CHECK_FALSE(sl::nccl::FilterSelectsIbPort(*f, "mlx5_1", 2));
  CHECK_FALSE(sl::nccl::FilterSelectsIbPort(*f, "mlx5_10", 1));
  CHECK(sl::nccl::FilterSelectsIbPort(*f, "mlx5_2", 2));
  CHECK(sl::nccl::FormatFilter(*f) == "=mlx5_1:1,mlx5_2");
}

TEST_CASE("NCCL_IB_HCA exclusion inverts the match") {
  auto f = sl::nccl::ParseIbHca("^=mlx5_3");
  REQUIRE(f.ok());
  CHECK(f->exclude);
  CHECK_FALSE(sl::nccl::FilterSelectsIbPort(*f, "mlx5_3", 1));
  CHECK(sl::nccl::FilterSelectsIbPort(*f, "mlx5_30", 1));
}

TEST_CASE("malformed NCCL_IB_HCA values are errors naming the variable") {
  for (const char* bad : {"", "^", "mlx5_0:x", "mlx5_0,,mlx5_1", ":1", "mlx5_0:0"}) {
    auto f = sl::nccl::ParseIbHca(bad);
    INFO(bad);
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().where.find("NCCL_IB_HCA") == 0);
  }
}

TEST_CASE("NCCL_SOCKET_IFNAME excludes docker and lo by prefix") {
  auto f = sl::nccl::ParseSocketIfname("^docker,lo");
  REQUIRE(f.ok());
  CHECK_FALSE(sl::nccl::FilterSelectsIfname(*f, "docker0"));
  CHECK_FALSE(sl::nccl::FilterSelectsIfname(*f, "lo"));
  CHECK(sl::nccl::FilterSelectsIfname(*f, "ens3np0"));
  CHECK_FALSE(sl::nccl::ParseSocketIfname("eth0:1").ok());
}
