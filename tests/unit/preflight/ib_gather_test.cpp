// GatherNodeFacts' IB/RoCE part on the fixture trees and on literal in-memory trees.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "tests/unit/preflight/ib_sysroot.h"
#include "tests/unit/test_paths.h"

using namespace sl;
using sl::test::IbSysroot;

namespace {

std::optional<IbProblem> FindProblem(const NodeFacts& f, const std::string& dev,
                                     const std::string& attr) {
  for (const auto& p : IbProblems(f)) {
    if (p.device == dev && p.attribute == attr) return p;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("the healthy IB fixture gathers 8 ACTIVE NDR InfiniBand ports") {
  RootedFileReader fs(SL_FIXTURES_DIR + "/ib-healthy");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 8);
  CHECK(IbProblems(f).empty());
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
  CHECK(IbProblems(f).empty());
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
  CHECK(IbProblems(f).empty());
}

TEST_CASE("the broken IB tree yields problems naming host paths, never a crash") {
  RootedFileReader fs(SL_FIXTURES_DIR + "/ib-broken");
  NodeFacts f = GatherNodeFacts(fs);
  REQUIRE(f.ib_ports.size() == 5);
  const std::optional<IbProblem> state = FindProblem(f, "mlx5_0", "state");
  REQUIRE(state);
  CHECK(state->path == "/sys/class/infiniband/mlx5_0/ports/1/state");
  CHECK(state->message.find(SL_FIXTURES_DIR +
                            "/ib-broken/sys/class/infiniband/mlx5_0/ports/1/state") !=
        std::string::npos);
  CHECK(f.ib_ports[0].state.empty());
  const std::optional<IbProblem> rate = FindProblem(f, "mlx5_1", "rate");
  REQUIRE(rate);
  CHECK(rate->message.find("No such file") != std::string::npos);
  const std::optional<IbProblem> ll = FindProblem(f, "mlx5_2", "link_layer");
  REQUIRE(ll);
  CHECK(ll->message.find("directory") != std::string::npos);
  const std::optional<IbProblem> gid = FindProblem(f, "mlx5_4", "gids/3");
  REQUIRE(gid);
  CHECK(gid->message.find("0000:0000:0000:0000:0000:ffff:0b0") != std::string::npos);
  // The node-wide list carries the same files.
  CHECK(f.problems.size() >= IbProblems(f).size());
}

TEST_CASE("an unreadable GID type (EINVAL on a real kernel) leaves the type empty") {
  const std::string p = IbSysroot::PortDir("mlx5_0");
  IbSysroot tree;
  tree.Port("mlx5_0", "100 Gb/sec (4X EDR)", "Ethernet")
      .File(p + "/gids/0", "0000:0000:0000:0000:0000:ffff:0a00:0001\n")
      .File(p + "/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n")
      .File("/sys/class/net/eth2/mtu", "9000\n")
      .fs()
      .AddLink("/sys/class/infiniband/mlx5_0/device/net/eth2", "../../../eth2");
  NodeFacts f = GatherNodeFacts(tree.fs());
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
  CHECK(IbProblems(f).empty());
}

TEST_CASE("a garbage netdev MTU is a problem of the port") {
  IbSysroot tree;
  tree.RocePort("mlx5_0", "eth2", 0, {{0, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2"}}, 1)
      .File("/sys/class/net/eth2/mtu", "jumbo\n");
  NodeFacts f = GatherNodeFacts(tree.fs());
  REQUIRE(f.ib_ports.size() == 1);
  CHECK(f.ib_ports[0].netdev_mtu == 0);
  const std::optional<IbProblem> mtu = FindProblem(f, "mlx5_0", "netdev_mtu");
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
  const std::optional<IbProblem> ports = FindProblem(f, "mlx5_9", "ports");
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
  // The peer's rows are put back on its facts: the same rows come out, and the read errors
  // are on the facts the checks read.
  const std::vector<IbProblem> rows = IbProblems(f), back_rows = IbProblems(back);
  REQUIRE(!rows.empty());
  REQUIRE(back_rows.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(back_rows[i].device == rows[i].device);
    CHECK(back_rows[i].port == rows[i].port);
    CHECK(back_rows[i].attribute == rows[i].attribute);
    CHECK(back_rows[i].path == rows[i].path);
    CHECK(back_rows[i].message == rows[i].message);
  }
  CHECK(nlohmann::json(back).dump() == j.dump());
  const IbPort& unread = back.ib_ports[0];
  REQUIRE_FALSE(unread.sysfs.state.ok());
  CHECK(unread.sysfs.state.path == "/sys/class/infiniband/mlx5_0/ports/1/state");
}

TEST_CASE("a peer's device-level rows come back as the device's facts, in their order") {
  nlohmann::json j = NodeFacts{};
  j["ib_problems"] = nlohmann::json::array({{{"device", "mlx5_3"},
                                             {"port", 0},
                                             {"attribute", "ports"},
                                             {"path", "/sys/class/infiniband/mlx5_3/ports"},
                                             {"message", "/r/x: cannot list"}},
                                            {{"device", "mlx5_1"},
                                             {"port", 0},
                                             {"attribute", "ports"},
                                             {"path", "/sys/class/infiniband/mlx5_1/ports"},
                                             {"message", "/r/y: cannot list"}}});
  NodeFacts back = j.get<NodeFacts>();
  REQUIRE(back.ib_devices.size() == 2);
  CHECK(back.ib_devices[0].name == "mlx5_3");
  CHECK_FALSE(back.ib_devices[0].ports.ok());
  CHECK(back.ib_devices[0].ports.error.message == "/r/x: cannot list");
  const auto rows = IbProblems(back);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].device == "mlx5_3");
  CHECK(rows[1].message == "/r/y: cannot list");
  CHECK(nlohmann::json(back)["ib_problems"] == j["ib_problems"]);
}

TEST_CASE("fw_ver, hca_type and board_id are facts of the device, unread they are no problem") {
  const std::string dev = "/sys/class/infiniband/rxe0";
  IbSysroot tree;
  tree.Port("rxe0", "10 Gb/sec (1X QDR)")
      .File(dev + "/ports/1/gids/0", "fe80:0000:0000:0000:0000:0000:0000:0001\n")
      .File(dev + "/fw_ver", " 1.0.0 \n")
      .File(dev + "/hca_type", "rxe\n")
      .fs()
      .AddDir(dev + "/board_id");  // a directory where the file should be: unreadable
  NodeFacts f = GatherNodeFacts(tree.fs());
  REQUIRE(f.ib_devices.size() == 1);
  const IbDeviceFacts& d = f.ib_devices[0];
  REQUIRE(d.fw_ver.ok());
  CHECK(*d.fw_ver == "1.0.0");
  CHECK(d.fw_ver.path == dev + "/fw_ver");
  CHECK(d.fw_ver.raw == "1.0.0");
  REQUIRE(d.hca_type.ok());
  CHECK(*d.hca_type == "rxe");
  CHECK_FALSE(d.board_id.ok());
  CHECK_FALSE(d.board_id.absent);
  CHECK(d.board_id.path == dev + "/board_id");
  REQUIRE(d.ports.ok());
  CHECK(*d.ports == std::vector<int>{1});
  REQUIRE(f.ib_ports.size() == 1);
  CHECK(f.ib_ports[0].fw_ver == "1.0.0");
  CHECK(f.ib_ports[0].board_id.empty());
  CHECK(IbProblems(f).empty());
}
