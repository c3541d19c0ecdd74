// NCCL's own RoCE GID choice (ncclIbGetGidIndex in NCCL >= 2.21), on tables from real show_gids
// and ibv_devinfo outputs posted in public threads (tests/fixtures/system, SOURCES.tsv).
#include "nccl/gid.h"

#include <catch2/catch.hpp>

#include "common/node_facts.h"

using namespace sl;

namespace {

GidEntry G(int index, std::string gid, std::string type, std::string ndev = "ens3np0") {
  GidEntry e;
  e.index = index;
  e.gid = std::move(gid);
  e.type = std::move(type);
  e.ndev = std::move(ndev);
  return e;
}

IbPort Roce(std::vector<GidEntry> gids, int table_len = 16) {
  IbPort p;
  p.device = "mlx5_0";
  p.link_layer = "Ethernet";
  p.gid_table_len = table_len;
  p.gids = std::move(gids);
  return p;
}

// show_gids_roce_v1v2_gid0-3_nccl-tests-192.txt, mlx5_0.
IbPort Table192() {
  return Roce({G(0, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "IB/RoCE v1"),
               G(1, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "RoCE v2"),
               G(2, "0000:0000:0000:0000:0000:ffff:0b00:0048", "IB/RoCE v1"),
               G(3, "0000:0000:0000:0000:0000:ffff:0b00:0048", "RoCE v2")});
}

// show_gids_macvlan_v1v2_nccl-1538.txt, mlx5_0: a pod whose entries start at index 4.
IbPort Table1538() {
  return Roce({G(4, "fe80:0000:0000:0000:c025:a1ff:fe31:2e81", "IB/RoCE v1", "net1"),
               G(5, "fe80:0000:0000:0000:c025:a1ff:fe31:2e81", "RoCE v2", "net1"),
               G(6, "0000:0000:0000:0000:0000:ffff:0a9c:8184", "IB/RoCE v1", "net1"),
               G(7, "0000:0000:0000:0000:0000:ffff:0a9c:8184", "RoCE v2", "net1")});
}

}  // namespace

TEST_CASE("NCCL picks the IPv4 RoCE v2 entry of a bare-metal table (index 3)") {
  CHECK(nccl::SelectGidIndex(Table192(), {}) == 3);
}

TEST_CASE("NCCL picks index 3 on the ibv_devinfo table where GID 3 worked and GID 1 did not") {
  // ibv_devinfo_v_gid_table_roce_v1v2_nccl-769.txt
  IbPort p = Roce({G(0, "fe80:0000:0000:0000:0ac0:ebff:feda:1cfb", "RoCE v1"),
                   G(1, "fe80:0000:0000:0000:0ac0:ebff:feda:1cfb", "RoCE v2"),
                   G(2, "0000:0000:0000:0000:0000:ffff:c800:d106", "RoCE v1"),
                   G(3, "0000:0000:0000:0000:0000:ffff:c800:d106", "RoCE v2")});
  CHECK(nccl::SelectGidIndex(p, {}) == 3);
}

TEST_CASE("container tables starting at index 4 or 6 work") {
  CHECK(nccl::SelectGidIndex(Table1538(), {}) == 7);
  // show_gids_pod_a_idx4-5 / pod_b_idx6-7 (multus-cni-1100): same NIC, different pods.
  IbPort a = Roce({G(4, "0000:0000:0000:0000:0000:ffff:ac14:0101", "IB/RoCE v1", "net1"),
                   G(5, "0000:0000:0000:0000:0000:ffff:ac14:0101", "RoCE v2", "net1")});
  IbPort b = Roce({G(6, "0000:0000:0000:0000:0000:ffff:ac14:0102", "IB/RoCE v1", "net1"),
                   G(7, "0000:0000:0000:0000:0000:ffff:ac14:0102", "RoCE v2", "net1")});
  CHECK(nccl::SelectGidIndex(a, {}) == 5);
  CHECK(nccl::SelectGidIndex(b, {}) == 7);
}

TEST_CASE("a table of link-local entries only has no usable GID") {
  IbPort p = Roce({G(0, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "IB/RoCE v1"),
                   G(1, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "RoCE v2")});
  CHECK_FALSE(nccl::SelectGidIndex(p, {}).has_value());
  auto c = nccl::SimulateGidIndex(p, {});
  CHECK(c.index == 0);
  CHECK_FALSE(c.usable);
  CHECK(c.usable_indices.empty());
}

TEST_CASE("an IPv4 entry of RoCE v1 only is what NCCL lands on, and it is not usable") {
  // NCCL switches to the first entry of the wanted family without comparing versions.
  IbPort p = Roce({G(0, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "IB/RoCE v1"),
                   G(1, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "RoCE v2"),
                   G(2, "0000:0000:0000:0000:0000:ffff:0b00:0048", "IB/RoCE v1")});
  auto c = nccl::SimulateGidIndex(p, {});
  CHECK(c.index == 2);
  CHECK_FALSE(c.usable);
  CHECK_FALSE(nccl::SelectGidIndex(p, {}).has_value());
}

TEST_CASE("NCCL_IB_ROCE_VERSION_NUM=1 selects the RoCE v1 IPv4 entry") {
  Environment env{{"NCCL_IB_ROCE_VERSION_NUM", "1"}};
  CHECK(nccl::SelectGidIndex(Table192(), env) == 2);
}

TEST_CASE("NCCL_IB_ADDR_RANGE keeps or drops entries by prefix") {
  CHECK(nccl::SelectGidIndex(Table192(), {{"NCCL_IB_ADDR_RANGE", "11.0.0.0/24"}}) == 3);
  CHECK_FALSE(nccl::SelectGidIndex(Table192(), {{"NCCL_IB_ADDR_RANGE", "11.0.0.73/32"}}));
  // Malformed ranges are ignored by NCCL (no '/', bad address, mask > 32).
  CHECK(nccl::SelectGidIndex(Table192(), {{"NCCL_IB_ADDR_RANGE", "11.0.0.73"}}) == 3);
  CHECK(nccl::SelectGidIndex(Table192(), {{"NCCL_IB_ADDR_RANGE", "nonsense/8"}}) == 3);
  CHECK(nccl::SelectGidIndex(Table192(), {{"NCCL_IB_ADDR_RANGE", "10.0.0.0/33"}}) == 3);
}

TEST_CASE("NCCL_IB_ADDR_FAMILY=AF_INET6 selects a global IPv6 RoCE v2 entry") {
  IbPort p = Table192();
  p.gids.push_back(G(4, "fd00:0000:0000:0001:a288:c2ff:fe5b:03ec", "IB/RoCE v1"));
  p.gids.push_back(G(5, "fd00:0000:0000:0001:a288:c2ff:fe5b:03ec", "RoCE v2"));
  p.gid_table_len = 6;
  Environment env{{"NCCL_IB_ADDR_FAMILY", "AF_INET6"}};
  CHECK(nccl::SelectGidIndex(p, env) == 5);
  CHECK(nccl::SelectGidIndex(p, {}) == 3);
}

TEST_CASE("NCCL_IB_GID_INDEX is used as is, and judged") {
  auto c = nccl::SimulateGidIndex(Table192(), {{"NCCL_IB_GID_INDEX", "1"}});
  CHECK(c.from_env);
  CHECK(c.index == 1);
  CHECK_FALSE(c.usable);
  CHECK(c.usable_indices == std::vector<int>{3});
  // nccl::SelectGidIndex is NCCL's own choice: it ignores the variable.
  CHECK(nccl::SelectGidIndex(Table192(), {{"NCCL_IB_GID_INDEX", "1"}}) == 3);
  // NCCL reads it with strtoll(s, NULL, 0): "-1" means automatic, "3" is 3.
  CHECK_FALSE(nccl::SimulateGidIndex(Table192(), {{"NCCL_IB_GID_INDEX", "-1"}}).from_env);
  CHECK(nccl::SimulateGidIndex(Table192(), {{"NCCL_IB_GID_INDEX", "3"}}).usable);
}

TEST_CASE("an entry whose type cannot be read is not taken for RoCE v2") {
  IbPort p = Table192();
  p.gids[3].type = "";  // gid_attrs/types/3 returned EINVAL
  auto c = nccl::SimulateGidIndex(p, {});
  CHECK(c.index == 2);
  CHECK_FALSE(c.usable);
}

TEST_CASE("RoCE path MTU follows the kernel's iboe_get_mtu") {
  CHECK(nccl::RoceIbMtuForNetdevMtu(9000) == 4096);
  CHECK(nccl::RoceIbMtuForNetdevMtu(4192) == 4096);
  CHECK(nccl::RoceIbMtuForNetdevMtu(4191) == 2048);
  CHECK(nccl::RoceIbMtuForNetdevMtu(1500) == 1024);
  CHECK(nccl::RoceIbMtuForNetdevMtu(1120) == 1024);
  CHECK(nccl::RoceIbMtuForNetdevMtu(1119) == 512);
  CHECK(nccl::RoceIbMtuForNetdevMtu(300) == 0);
}
