#pragma once
// Hand-built node facts for pure resolution and lint tests.
#include <string>

#include "common/node_facts.h"

namespace sl::testing {

inline IbPort MakePort(std::string dev, int port, std::string link_layer, bool up = true) {
  IbPort p;
  p.device = std::move(dev);
  p.port = port;
  p.state = up ? "ACTIVE" : "DOWN";
  p.phys_state = up ? "LinkUp" : "Disabled";
  p.link_layer = std::move(link_layer);
  p.rate_text = "400 Gb/sec (4X NDR)";
  p.rate_gbps = 400;
  return p;
}

inline GidEntry Gid(int index, std::string gid, std::string type, std::string ipv4 = {}) {
  GidEntry g;
  g.index = index;
  g.gid = std::move(gid);
  g.type = std::move(type);
  g.ndev = "ens1np0";
  g.ipv4 = std::move(ipv4);
  return g;
}

/// A RoCE port whose table is: 0 link-local v1, 1 link-local v2, 2 IPv4 v1, 3 IPv4 v2
/// (what show_gids prints on a bare-metal ConnectX), or shifted by `base` (container tables).
inline IbPort RocePort(std::string dev, int base = 0, bool up = true) {
  IbPort p = MakePort(std::move(dev), 1, "Ethernet", up);
  p.netdev = "ens1np0";
  p.netdev_mtu = 9000;
  p.gids.push_back(Gid(base + 0, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "IB/RoCE v1"));
  p.gids.push_back(Gid(base + 1, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "RoCE v2"));
  p.gids.push_back(
      Gid(base + 2, "0000:0000:0000:0000:0000:ffff:0a00:0105", "IB/RoCE v1", "10.0.1.5"));
  p.gids.push_back(Gid(base + 3, "0000:0000:0000:0000:0000:ffff:0a00:0105", "RoCE v2", "10.0.1.5"));
  return p;
}

inline NetInterface Iface(std::string name, std::string addr, std::string state = "up") {
  NetInterface i;
  i.name = std::move(name);
  i.operstate = std::move(state);
  i.mtu = 1500;
  if (!addr.empty()) i.addresses.push_back(std::move(addr));
  return i;
}

inline NodeFacts IbNode() {
  NodeFacts f;
  f.hostname = "gpu01";
  for (int i = 0; i < 12; ++i) {
    // mlx5_0..mlx5_11: the prefix trap (mlx5_1 also matches mlx5_10, mlx5_11) is in the data.
    f.ib_ports.push_back(MakePort("mlx5_" + std::to_string(i), 1, "InfiniBand", i != 3));
  }
  f.interfaces = {Iface("lo", "127.0.0.1"), Iface("docker0", "172.17.0.1"),
                  Iface("eno1", "192.168.1.10"), Iface("ib0", "10.10.0.10")};
  return f;
}

inline NodeFacts RoceNode(int base = 0) {
  NodeFacts f;
  f.hostname = "gpu02";
  f.ib_ports = {RocePort("mlx5_0", base), RocePort("mlx5_1", base)};
  f.interfaces = {Iface("lo", "127.0.0.1"), Iface("ens1np0", "10.0.1.5")};
  return f;
}

inline NodeFacts SocketNode() {
  NodeFacts f;
  f.hostname = "cpu01";
  f.interfaces = {Iface("lo", "127.0.0.1"), Iface("veth12ab", "169.254.1.1"),
                  Iface("eth0", "192.0.2.2")};
  return f;
}

/// A limits row as GatherNodeFacts holds it (host.memlock / host.nofile), values only.
inline Fact<ProcLimit> Limit(std::uint64_t soft, std::uint64_t hard = kUnlimited) {
  ProcLimit row;
  row.soft = soft;
  row.hard = hard;
  return Fact<ProcLimit>::Of(row, "/proc/self/limits", "");
}

/// host.peermem: `module` ("nvidia_peermem") loaded, "" for none.
inline Fact<std::string> Peermem(std::string module) {
  return Fact<std::string>::Of(std::move(module), "/proc/modules", "");
}

}  // namespace sl::testing
