// GatherNodeFacts' IB/RoCE part on the fixture trees and on literal in-memory trees.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "tests/unit/test_paths.h"

using namespace sl;

namespace {

const IbProblem* FindProblem(const NodeFacts& f, const std::string& dev, const std::string& attr) {
  for (const auto& p : f.ib_problems) {
    if (p.device == dev && p.attribute == attr) return &p;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("the healthy IB fixture gathers 8 ACTIVE NDR InfiniBand ports") {
  RootedFileReader fs(SL_FIXTURES_DIR + "/ib-healthy");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 8);
  CHECK(f.ib_problems.empty());
  for (int i = 0; i < 8; ++i) {
    const IbPort& p = f.ib_ports[static_cast<std::size_t>(i)];
    CHECK(p.Name() == "mlx5_" + std::to_string(i) + ":1");
    CHECK(p.state == "ACTIVE");
    CHECK(p.state_code == 4);
    CHECK(p.phys_state == "LinkUp");
    CHECK(p.rate_gbps == 400);
    CHECK(p.rate_text == "400 Gb/sec (4X NDR)");
    CHECK(p.link_layer == "InfiniBand");
    CHECK(p.IsUp());
    CHECK_FALSE(p.IsRoce());
    CHECK(p.hca_type == "MT4129");
    CHECK(p.fw_ver == "28.39.1002");
    REQUIRE(p.gids.size() == 1);  // InfiniBand: the port GID only
    CHECK(p.gids[0].IsLinkLocal());
    CHECK(p.active_mtu == 0);  // never from verbs under a sysroot
  }
}

TEST_CASE("the RoCE fixture gathers GID tables, netdevs and their MTUs") {
  RootedFileReader fs(SL_FIXTURES_DIR + "/roce-jumbo");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 2);
  CHECK(f.ib_problems.empty());
  const IbPort& p = f.ib_ports[0];
  CHECK(p.IsRoce());
  CHECK(p.netdev == "ens3np0");
  CHECK(p.netdev_mtu == 9000);
  CHECK(p.gid_table_len == 16);
  REQUIRE(p.gids.size() == 4);  // empty entries are not kept
  CHECK(p.gids[3].index == 3);
  CHECK(p.gids[3].type == "RoCE v2");
  CHECK(p.gids[3].ipv4 == "11.0.0.72");
  CHECK(p.gids[3].ndev == "ens3np0");
  CHECK(p.gids[0].type == "IB/RoCE v1");
  CHECK(f.ib_ports[1].netdev == "ens2np0");
}

TEST_CASE("a socket-only node has no IB ports and no problems") {
  RootedFileReader fs(SL_FIXTURES_DIR + "/socket-only");
  NodeFacts f = GatherNodeFacts(fs);
  CHECK(f.ib_ports.empty());
  CHECK(f.ib_problems.empty());
}

TEST_CASE("the broken IB tree yields problems naming host paths, never a crash") {
  RootedFileReader fs(SL_FIXTURES_DIR + "/ib-broken");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 5);
  const IbProblem* state = FindProblem(f, "mlx5_0", "state");
  REQUIRE(state);
  CHECK(state->path == "/sys/class/infiniband/mlx5_0/ports/1/state");
  CHECK(state->message.find(SL_FIXTURES_DIR +
                            "/ib-broken/sys/class/infiniband/mlx5_0/ports/1/state") !=
        std::string::npos);
  CHECK(f.ib_ports[0].state.empty());
  const IbProblem* rate = FindProblem(f, "mlx5_1", "rate");
  REQUIRE(rate);
  CHECK(rate->message.find("No such file") != std::string::npos);
  const IbProblem* ll = FindProblem(f, "mlx5_2", "link_layer");
  REQUIRE(ll);
  CHECK(ll->message.find("directory") != std::string::npos);
  const IbProblem* gid = FindProblem(f, "mlx5_4", "gids/3");
  REQUIRE(gid);
  CHECK(gid->message.find("0000:0000:0000:0000:0000:ffff:0b0") != std::string::npos);
  // The node-wide list carries the same files.
  CHECK(f.problems.size() >= f.ib_problems.size());
}

TEST_CASE("an unreadable GID type (EINVAL on a real kernel) leaves the type empty") {
  MemFileReader fs;
  const std::string p = "/sys/class/infiniband/mlx5_0/ports/1";
  fs.AddFile(p + "/state", "4: ACTIVE\n")
      .AddFile(p + "/phys_state", "5: LinkUp\n")
      .AddFile(p + "/rate", "100 Gb/sec (4X EDR)\n")
      .AddFile(p + "/link_layer", "Ethernet\n")
      .AddFile(p + "/gids/0", "0000:0000:0000:0000:0000:ffff:0a00:0001\n")
      .AddFile(p + "/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n")
      .AddFile("/sys/class/net/eth2/mtu", "9000\n")
      .AddLink("/sys/class/infiniband/mlx5_0/device/net/eth2", "../../../eth2");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 1);
  const IbPort& port = f.ib_ports[0];
  CHECK(port.gid_table_len == 2);
  REQUIRE(port.gids.size() == 1);
  CHECK(port.gids[0].type.empty());
  // The failed read is on the type's fact, with its path; the all-zero slot 1 has none.
  REQUIRE(port.sysfs.gid_types.count(0) == 1);
  CHECK_FALSE(port.sysfs.gid_types.at(0).ok());
  CHECK(port.sysfs.gid_types.at(0).path == p + "/gid_attrs/types/0");
  CHECK(port.sysfs.gid_types.at(0).unreadable);
  CHECK(port.sysfs.gid_types.count(1) == 0);
  // No GID names a netdev: the PCI function's own netdev is used, as ibdev2netdev does.
  CHECK(port.netdev == "eth2");
  CHECK(port.netdev_mtu == 9000);
  CHECK(f.ib_problems.empty());
}

TEST_CASE("a garbage netdev MTU is a problem of the port") {
  MemFileReader fs;
  const std::string p = "/sys/class/infiniband/mlx5_0/ports/1";
  fs.AddFile(p + "/state", "4: ACTIVE\n")
      .AddFile(p + "/phys_state", "5: LinkUp\n")
      .AddFile(p + "/rate", "100 Gb/sec (4X EDR)\n")
      .AddFile(p + "/link_layer", "Ethernet\n")
      .AddFile(p + "/gids/0", "0000:0000:0000:0000:0000:ffff:0a00:0001\n")
      .AddFile(p + "/gid_attrs/types/0", "RoCE v2\n")
      .AddFile(p + "/gid_attrs/ndevs/0", "eth2\n")
      .AddFile("/sys/class/net/eth2/mtu", "jumbo\n");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 1);
  CHECK(f.ib_ports[0].netdev_mtu == 0);
  const IbProblem* mtu = FindProblem(f, "mlx5_0", "netdev_mtu");
  REQUIRE(mtu);
  CHECK(mtu->path == "/sys/class/net/eth2/mtu");
}

TEST_CASE("each IB port file is a fact with its path, raw text and error") {
  MemFileReader fs;
  const std::string p = "/sys/class/infiniband/mlx5_0/ports/1";
  fs.AddFile(p + "/state", "garbage\n")
      .AddFile(p + "/phys_state", "5: LinkUp\n")
      .AddFile(p + "/link_layer", "InfiniBand\n")
      .AddFile(p + "/gids/0", "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d\n");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 1);
  const IbPortFacts& s = f.ib_ports[0].sysfs;
  // A garbage state: the text is evidence, the parse error names the file; no value.
  CHECK_FALSE(s.state.ok());
  CHECK(s.state.path == p + "/state");
  CHECK(s.state.raw == "garbage");
  CHECK_FALSE(s.state.unreadable);
  CHECK(s.state.error.where == fs.HostPath(p + "/state"));
  CHECK(f.ib_ports[0].state.empty());
  // A missing rate: a failed read, no raw text.
  CHECK_FALSE(s.rate.ok());
  CHECK(s.rate.path == p + "/rate");
  CHECK(s.rate.unreadable);
  CHECK(s.rate.raw.empty());
  // Files that parse carry their value, path and raw text.
  REQUIRE(s.phys_state.ok());
  CHECK(s.phys_state->code == 5);
  CHECK(s.phys_state.raw == "5: LinkUp");
  CHECK(s.link_layer.path == p + "/link_layer");
  REQUIRE(s.gids.count(0) == 1);
  CHECK(s.gids.at(0).path == p + "/gids/0");
  CHECK(*s.gids.at(0) == "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d");
  CHECK(s.gid_indices.path == p + "/gids");
  CHECK_FALSE(s.netdev_mtu.ok());  // InfiniBand: no netdev, not gathered
  CHECK(s.netdev_mtu.path.empty());
}

TEST_CASE("a device without a ports directory is a device-level problem") {
  MemFileReader fs;
  fs.AddFile("/sys/class/infiniband/mlx5_9/fw_ver", "28.39.1002\n");
  NodeFacts f = GatherNodeFacts(fs);
  CHECK(f.ib_ports.empty());
  const IbProblem* ports = FindProblem(f, "mlx5_9", "ports");
  REQUIRE(ports);
  CHECK(ports->port == 0);
}

TEST_CASE("IB facts survive the JSON round trip the warm-up store uses") {
  RootedFileReader fs(SL_FIXTURES_DIR + "/ib-broken");
  NodeFacts f = GatherNodeFacts(fs);
  nlohmann::json j = f;
  NodeFacts back = j.get<NodeFacts>();
  REQUIRE(back.ib_ports.size() == f.ib_ports.size());
  const IbPort& roce = back.ib_ports[4];
  CHECK(roce.IsRoce());
  CHECK(roce.gid_table_len == 8);
  CHECK(roce.state_code == 4);
  CHECK(roce.hca_type == "MT4129");
  CHECK(roce.gids.size() == f.ib_ports[4].gids.size());
  REQUIRE(back.ib_problems.size() == f.ib_problems.size());
  CHECK(back.ib_problems[0].path == f.ib_problems[0].path);
  CHECK(back.ib_problems[0].message == f.ib_problems[0].message);
}
