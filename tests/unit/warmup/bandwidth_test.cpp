// Expected bus bandwidth from the facts and the sweep's measured/expected (warmup/bandwidth.h).
#include "warmup/bandwidth.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/unit/common/test_facts.h"

using namespace sl;
using namespace sl::warmup;

namespace {

IbPort Port(const std::string& dev, double rate, const std::string& text,
            const std::string& layer = "InfiniBand") {
  IbPort p;
  p.device = dev;
  p.port = 1;
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  p.rate_gbps = rate;
  p.rate_text = text;
  p.link_layer = layer;
  p.active_mtu = 4096;
  return p;
}

// Two GPUs, two 200 Gb/s HDR ports, nvidia_peermem loaded.
NodeReport Node(int rank) {
  NodeReport r;
  r.node_rank = rank;
  r.node_name = "gpu0" + std::to_string(rank + 1);
  r.facts.hostname = r.node_name;
  r.facts.ib_ports = {Port("mlx5_0", 200, "200 Gb/sec (4X HDR)"),
                      Port("mlx5_1", 200, "200 Gb/sec (4X HDR)")};
  r.facts.gpus = {{"0000:18:00.0", "0x2335", "NVIDIA H200"},
                  {"0000:2a:00.0", "0x2335", "NVIDIA H200"}};
  r.facts.host.peermem = sl::testing::Peermem("nvidia_peermem");
  return r;
}

std::vector<SweepPoint> Sweep(double busbw_at_large) {
  return {{8u << 20, 0.001, 0, busbw_at_large * 0.5}, {256u << 20, 0.01, 0, busbw_at_large}};
}

const Finding* Job(const BandwidthAssessment& a) {
  for (const auto& f : a.findings)
    if (f.entity == "job") return &f;
  return nullptr;
}

}  // namespace

TEST_CASE("a node's expected busbw is rings x data rate x header efficiency") {
  NodeExpectation e = ExpectNode(Node(0), 2, "nccl");
  CHECK(e.transport == "InfiniBand");
  CHECK(e.ports == 2);
  CHECK(e.rings == 2);
  // 2 x 200 Gb/s / 8 x 4096 / (4096 + 26) = 49.68 GB/s
  CHECK(e.busbw_gbps == Approx(2 * 25.0 * 4096 / 4122));
  CHECK(e.model.find("2 x 200 Gb/s InfiniBand") != std::string::npos);
  // One rank on the node: one ring, one NIC's worth.
  CHECK(ExpectNode(Node(0), 1, "nccl").busbw_gbps == Approx(25.0 * 4096 / 4122));
}

TEST_CASE("line encoding: QDR carries 8b/10b, FDR 64b/66b, RoCE's Ethernet rate is data") {
  NodeReport qdr = Node(0);
  qdr.facts.ib_ports = {Port("mlx4_0", 40, "40 Gb/sec (4X QDR)")};
  CHECK(ExpectNode(qdr, 1, "nccl").data_gbps == Approx(32));
  NodeReport fdr = Node(0);
  fdr.facts.ib_ports = {Port("mlx5_0", 56, "56 Gb/sec (4X FDR)")};
  CHECK(ExpectNode(fdr, 1, "nccl").data_gbps == Approx(56 * 64.0 / 66));
  NodeReport roce = Node(0);
  roce.facts.ib_ports = {Port("mlx5_0", 100, "100 Gb/sec (4X EDR)", "Ethernet")};
  roce.facts.ib_ports[0].active_mtu = 0;
  roce.facts.ib_ports[0].netdev_mtu = 1500;  // RoCE MTU 1024 behind a 1500-byte netdev
  NodeExpectation e = ExpectNode(roce, 1, "nccl");
  CHECK(e.transport == "RoCE");
  CHECK(e.mtu == 1024);
  CHECK(e.busbw_gbps == Approx(12.5 * 1024 / (1024 + 82)));
}

TEST_CASE("no model for gloo, and no RDMA port NCCL will use means socket fallback") {
  CHECK(ExpectNode(Node(0), 2, "gloo").busbw_gbps == 0);
  NodeReport off = Node(0);
  off.env = {{"NCCL_IB_DISABLE", "1"}};
  NodeExpectation e = ExpectNode(off, 2, "nccl");
  CHECK(e.transport == "socket");
  CHECK(e.busbw_gbps == 0);
  auto a = AssessBandwidth({Node(0)}, 2, "gloo", Sweep(1), {});
  REQUIRE(Job(a) != nullptr);
  CHECK(Job(a)->outcome == Outcome::kSkip);
}

TEST_CASE("a healthy sweep passes with its ratio, small sizes are reported, not judged") {
  auto a = AssessBandwidth({Node(0), Node(1)}, 2, "nccl", Sweep(44), {});
  REQUIRE(a.sizes.size() == 2);
  CHECK_FALSE(a.sizes[0].judged);
  CHECK(a.sizes[1].judged);
  CHECK(a.sizes[1].ratio == Approx(44 / a.expected_gbps));
  CHECK_FALSE(a.below);
  REQUIRE(Job(a) != nullptr);
  CHECK(Job(a)->outcome == Outcome::kPass);
  CHECK(Job(a)->message.find("of the expected 49.7 GB/s") != std::string::npos);
  // Only the 8 MiB size: nothing judged.
  auto small = AssessBandwidth({Node(0), Node(1)}, 2, "nccl", {{8u << 20, 0.001, 0, 5}}, {});
  CHECK(Job(small)->outcome == Outcome::kSkip);
}

TEST_CASE("below min_busbw_fraction warns, below half of it fails") {
  auto warn = AssessBandwidth({Node(0), Node(1)}, 2, "nccl", Sweep(30), {});
  CHECK(warn.below);
  CHECK(Job(warn)->outcome == Outcome::kWarn);
  auto fail = AssessBandwidth({Node(0), Node(1)}, 2, "nccl", Sweep(15), {});
  CHECK(Job(fail)->outcome == Outcome::kFail);
  // No node's facts explain it: the pair rounds are named as the next step.
  CHECK(Job(fail)->message.find("no node's facts explain it") != std::string::npos);
  BandwidthLimits strict;
  strict.min_fraction = 0.95;
  CHECK(AssessBandwidth({Node(0), Node(1)}, 2, "nccl", Sweep(44), strict).below);
}

TEST_CASE("the slow ring is blamed on the node whose facts explain it") {
  NodeReport slow_port = Node(2);
  slow_port.facts.ib_ports[1].rate_gbps = 100;
  slow_port.facts.ib_ports[1].rate_text = "100 Gb/sec (4X EDR)";
  NodeReport rail_down = Node(3);
  rail_down.facts.ib_ports[1].state = "DOWN";
  NodeReport no_gdr = Node(4);
  no_gdr.facts.host.peermem = sl::testing::Peermem("");
  NodeReport socket = Node(5);
  socket.env = {{"NCCL_IB_DISABLE", "1"}};
  auto a = AssessBandwidth({Node(0), Node(1), slow_port, rail_down, no_gdr, socket}, 2, "nccl",
                           Sweep(20), {});
  CHECK(a.expected_gbps == Approx(2 * 25.0 * 4096 / 4122));  // the typical node, not the worst
  REQUIRE(a.below);
  std::map<std::string, std::string> blamed;
  for (const auto& f : a.findings)
    if (f.entity != "job") blamed[f.entity] = f.message;
  REQUIRE(blamed.size() == 4);
  CHECK(blamed["node 2 (gpu03)"].find("runs at 100 Gb/s where the others run 200 Gb/s") !=
        std::string::npos);
  CHECK(blamed["node 3 (gpu04)"].find("a rail is down") != std::string::npos);
  CHECK(blamed["node 4 (gpu05)"].find("no GPUDirect RDMA") != std::string::npos);
  CHECK(blamed["node 5 (gpu06)"].find("falls back to sockets") != std::string::npos);
  CHECK(Job(a)->message.find("likely cause: node 2 (gpu03)") != std::string::npos);
  auto j = AssessmentJson(a);
  CHECK(j["nodes"].size() == 6);
  CHECK(j["sizes"][1]["judged"] == true);
}
