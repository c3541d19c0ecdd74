// The four ib.* checks: a pass and a fail (or warn) for each, on fixture trees and literal trees.
#include <catch2/catch.hpp>
#include <memory>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "preflight/check.h"

using namespace sl;
using namespace sl::preflight;

namespace {

// The checks under test, reached through the registry as the runner reaches them.
const CheckFn CheckIbGid = FindCheck("ib.gid")->run;
const CheckFn CheckIbMtu = FindCheck("ib.mtu")->run;
const CheckFn CheckIbPortErrors = FindCheck("ib.port.errors")->run;
const CheckFn CheckIbPortState = FindCheck("ib.port.state")->run;

struct Node {
  std::shared_ptr<FileReader> fs;
  Environment env;
  Thresholds th;
  bool verbose = false;
  NodeFacts facts;

  std::vector<Finding> Run(CheckFn fn) {
    facts = GatherNodeFacts(*fs);
    return RunOnFacts(fn);
  }
  // For facts the fixture cannot express (verbs' active MTU on a live node).
  std::vector<Finding> RunOnFacts(CheckFn fn) {
    CheckContext ctx{facts, env, th, verbose};
    return fn(ctx);
  }
};

Node Fixture(const std::string& name) {
  Node n;
  n.fs = std::make_shared<RootedFileReader>(std::string(SL_FIXTURES_DIR) + "/" + name);
  return n;
}

const Finding* For(const std::vector<Finding>& fs, const std::string& entity) {
  for (const auto& f : fs) {
    if (f.entity == entity) return &f;
  }
  return nullptr;
}

int Count(const std::vector<Finding>& fs, Outcome o) {
  int n = 0;
  for (const auto& f : fs) n += f.outcome == o;
  return n;
}

bool HasEvidence(const Finding& f, const std::string& source, const std::string& value) {
  for (const auto& e : f.evidence) {
    if (e.source == source && e.value == value) return true;
  }
  return false;
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A one-port RoCE device in memory: GID rows (index, gid, type, ndev) and the netdev MTU.
void AddRocePort(MemFileReader& fs, const std::string& dev, const std::string& ifname, int mtu,
                 const std::vector<std::tuple<int, std::string, std::string>>& rows,
                 int table_len = 8) {
  const std::string p = "/sys/class/infiniband/" + dev + "/ports/1";
  fs.AddFile(p + "/state", "4: ACTIVE\n")
      .AddFile(p + "/phys_state", "5: LinkUp\n")
      .AddFile(p + "/rate", "200 Gb/sec (4X HDR)\n")
      .AddFile(p + "/link_layer", "Ethernet\n");
  for (int i = 0; i < table_len; ++i) {
    fs.AddFile(p + "/gids/" + std::to_string(i), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  }
  for (const auto& [i, gid, type] : rows) {
    fs.AddFile(p + "/gids/" + std::to_string(i), gid + "\n")
        .AddFile(p + "/gid_attrs/types/" + std::to_string(i), type + "\n")
        .AddFile(p + "/gid_attrs/ndevs/" + std::to_string(i), ifname + "\n");
  }
  fs.AddFile("/sys/class/net/" + ifname + "/mtu", std::to_string(mtu) + "\n");
}

}  // namespace

// ---- ib.port.state -----------------------------------------------------------------------

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
  auto mem = std::make_shared<MemFileReader>();
  for (int i = 0; i < 2; ++i) {
    const std::string p = "/sys/class/infiniband/mlx5_" + std::to_string(i) + "/ports/1";
    mem->AddFile(p + "/state", "4: ACTIVE\n")
        .AddFile(p + "/phys_state", "5: LinkUp\n")
        .AddFile(p + "/rate", i == 0 ? "400 Gb/sec (4X NDR)\n" : "200 Gb/sec (2X NDR)\n")
        .AddFile(p + "/link_layer", "InfiniBand\n");
  }
  Node n;
  n.fs = mem;
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
  const std::string root = std::string(SL_FIXTURES_DIR) + "/ib-broken";
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

// ---- ib.port.errors -----------------------------------------------------------------------

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
  auto mem = std::make_shared<MemFileReader>();
  AddRocePort(*mem, "mlx5_0", "ens3np0", 9000,
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
    mem->AddFile(hw + name, value + "\n");
  }
  Node n;
  n.fs = mem;
  auto fs = n.Run(CheckIbPortErrors);
  const Finding* f = For(fs, "mlx5_0:1");
  REQUIRE(f);
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
  auto fs = n.Run(CheckIbPortErrors);
  const Finding* f = For(fs, "mlx5_3:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kError);
  CHECK(Contains(f->message, std::string(SL_FIXTURES_DIR) +
                                 "/ib-broken/sys/class/infiniband/mlx5_3/ports/1/counters/"
                                 "symbol_error"));
  CHECK(Contains(f->message, "N/A"));
}

// ---- ib.mtu -------------------------------------------------------------------------------

TEST_CASE("ib.mtu passes RoCE ports on jumbo netdevs") {
  Node n = Fixture("roce-jumbo");
  auto fs = n.Run(CheckIbMtu);
  REQUIRE(fs.size() == 2);
  CHECK(Count(fs, Outcome::kPass) == 2);
  const Finding* f = For(fs, "mlx5_0:1");
  CHECK(HasEvidence(*f, "/sys/class/net/ens3np0/mtu", "9000"));
  CHECK(Contains(f->message, "4096"));
}

TEST_CASE("ib.mtu warns about RoCE on MTU 1500 with the ip link fix") {
  Node n = Fixture("roce-mtu1500");
  auto fs = n.Run(CheckIbMtu);
  const Finding* f = For(fs, "mlx5_0:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kWarn);
  CHECK(Contains(f->message, "1024"));
  CHECK(Contains(f->next_step, "ip link set ens3np0 mtu 9000"));
  CHECK(Contains(f->next_step, "switch"));
  CHECK(For(fs, "node") == nullptr);  // both ports agree
}

TEST_CASE("ib.mtu honours thresholds.expected_mtu") {
  Node n = Fixture("roce-mtu1500");
  n.th.expected_mtu = 1500;
  CHECK(Count(n.Run(CheckIbMtu), Outcome::kPass) == 2);
  Node j = Fixture("roce-jumbo");
  j.th.expected_mtu = 1500;
  CHECK(Count(j.Run(CheckIbMtu), Outcome::kFail) == 2);
}

TEST_CASE("ib.mtu fails when ports NCCL uses disagree") {
  auto mem = std::make_shared<MemFileReader>();
  AddRocePort(*mem, "mlx5_0", "ens3np0", 9000,
              {{3, "0000:0000:0000:0000:0000:ffff:0b00:0048", "RoCE v2"}});
  AddRocePort(*mem, "mlx5_1", "ens2np0", 1500,
              {{3, "0000:0000:0000:0000:0000:ffff:0b00:0049", "RoCE v2"}});
  Node n;
  n.fs = mem;
  auto fs = n.Run(CheckIbMtu);
  const Finding* node = For(fs, "node");
  REQUIRE(node);
  CHECK(node->outcome == Outcome::kFail);
  CHECK(Contains(node->message, "mlx5_0:1 4096"));
  CHECK(Contains(node->message, "mlx5_1:1 1024"));
  SECTION("unless the odd port is excluded") {
    n.env["NCCL_IB_HCA"] = "=mlx5_0";
    CHECK(For(n.Run(CheckIbMtu), "node") == nullptr);
  }
}

TEST_CASE("ib.mtu never guesses the InfiniBand active MTU") {
  Node n = Fixture("ib-healthy");
  auto fs = n.Run(CheckIbMtu);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].outcome == Outcome::kSkip);
  CHECK(fs[0].entity == "node");
  CHECK(Contains(fs[0].message, "not checkable for mlx5_0:1, mlx5_1:1"));
  CHECK(Contains(fs[0].message, "mlx5_7:1"));
}

TEST_CASE("ib.mtu judges the InfiniBand active MTU when verbs reported it") {
  Node n = Fixture("ib-healthy");
  n.facts = GatherNodeFacts(*n.fs);
  for (auto& p : n.facts.ib_ports) p.active_mtu = 4096;
  n.facts.ib_ports[2].active_mtu = 2048;
  auto fs = n.RunOnFacts(CheckIbMtu);
  CHECK(For(fs, "mlx5_0:1")->outcome == Outcome::kPass);
  const Finding* low = For(fs, "mlx5_2:1");
  CHECK(low->outcome == Outcome::kWarn);
  CHECK(Contains(low->next_step, "partitions.conf"));
  REQUIRE(For(fs, "node"));
  CHECK(For(fs, "node")->outcome == Outcome::kFail);
}

TEST_CASE("ib.mtu: an unreadable netdev MTU is an error") {
  auto mem = std::make_shared<MemFileReader>();
  AddRocePort(*mem, "mlx5_0", "ens3np0", 9000,
              {{3, "0000:0000:0000:0000:0000:ffff:0b00:0048", "RoCE v2"}});
  mem->AddFile("/sys/class/net/ens3np0/mtu", "\x01\x02");
  Node n;
  n.fs = mem;
  auto fs = n.Run(CheckIbMtu);
  CHECK(For(fs, "mlx5_0:1")->outcome == Outcome::kError);
  CHECK(Contains(For(fs, "mlx5_0:1")->message, "/sys/class/net/ens3np0/mtu"));
}

// ---- ib.gid -------------------------------------------------------------------------------

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
  auto fs = n.Run(CheckIbGid);
  const Finding* f = For(fs, "mlx5_0:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kFail);
  CHECK(Contains(f->message, "link-local"));
  CHECK(Contains(f->next_step, "NCCL_IB_GID_INDEX=3"));
  CHECK(Contains(f->next_step, "unset NCCL_IB_GID_INDEX"));
  CHECK(HasEvidence(*f, "NCCL_IB_GID_INDEX", "1"));
}

TEST_CASE("ib.gid fails NCCL_IB_GID_INDEX naming a RoCE v1 entry") {
  Node n = Fixture("roce-jumbo");
  n.env["NCCL_IB_GID_INDEX"] = "2";
  auto all = n.Run(CheckIbGid);
  auto f = For(all, "mlx5_0:1");
  REQUIRE(f);
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
  auto all = n.Run(CheckIbGid);
  auto f = For(all, "mlx5_0:1");
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kFail);
  CHECK(Contains(f->message, "empty"));
  CHECK(Contains(f->next_step, "NCCL_IB_GID_INDEX=7"));
}

TEST_CASE("ib.gid fails when no usable RoCE v2 GID exists") {
  auto mem = std::make_shared<MemFileReader>();
  AddRocePort(*mem, "mlx5_0", "ens3np0", 9000,
              {{0, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "IB/RoCE v1"},
               {1, "fe80:0000:0000:0000:a288:c2ff:fe5b:03ec", "RoCE v2"}});
  Node n;
  n.fs = mem;
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
  auto all = n.Run(CheckIbGid);
  auto f = For(all, "mlx5_0:1");
  REQUIRE(f);
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
  auto all = n.Run(CheckIbGid);
  auto f = For(all, "mlx5_4:1");
  REQUIRE(f);
  REQUIRE(f);
  CHECK(f->outcome == Outcome::kError);
  CHECK(Contains(f->message, "/ib-broken/sys/class/infiniband/mlx5_4/ports/1/gids/3"));
}

// ---- all ----------------------------------------------------------------------------------

TEST_CASE("every ib check labels its findings with its registry id on every fixture") {
  const std::vector<std::pair<CheckFn, std::string>> checks = {
      {CheckIbPortState, "ib.port.state"},
      {CheckIbPortErrors, "ib.port.errors"},
      {CheckIbMtu, "ib.mtu"},
      {CheckIbGid, "ib.gid"}};
  for (const char* fixture : {"ib-healthy", "ib-port-down", "roce-jumbo", "roce-mtu1500",
                              "roce-container-gid4", "socket-only", "ib-broken"}) {
    Node n = Fixture(fixture);
    for (const auto& [fn, id] : checks) {
      auto fs = n.Run(fn);
      CHECK_FALSE(fs.empty());
      for (const auto& f : fs) {
        INFO(fixture << " " << id << " " << f.entity << ": " << f.message);
        CHECK(f.check_id == id);
        CHECK_FALSE(f.entity.empty());
        CHECK_FALSE(f.message.empty());
        if (f.outcome == Outcome::kFail || f.outcome == Outcome::kWarn) {
          CHECK_FALSE(f.next_step.empty());
          CHECK_FALSE(f.evidence.empty());
        }
      }
    }
  }
}
