// The rules, one behaviour each, on lines in the formats NCCL and PyTorch print (format strings
// read in their sources; the release ranges are in the catalog rows' provenance).
#include "diagnose/engine.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "diagnose/ingest.h"
#include "diagnose/report.h"
#include "diagnose/verdict.h"

using namespace sl::diagnose;

namespace {

Diagnosis Run(std::string_view text, std::span<const CauseClaim> claims = {}) {
  static const LineMatcher matcher;
  Evidence ev;
  LogIngest ingest(matcher, &ev);
  ingest.AddText("job.log", text);
  return Diagnose(ev, claims);
}

bool Fired(const Diagnosis& d, std::string_view rule) {
  for (const Firing& f : d.fired) {
    if (f.rule == rule) return true;
  }
  return false;
}

bool HasFeature(const Diagnosis& d, std::string_view id) {
  for (const Feature& f : d.features) {
    if (f.id == id) return true;
  }
  return false;
}

// net_ib.cc (2.12-2.28): WARN "NET/IB : Got completion from peer %s with status=%d opcode=%d
// len=%d vendor err %d (%s)" and INFO "NET/IB: Dev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX)".
constexpr std::string_view kRetry12 =
    "n1:11:12 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.2<5> with status=12 opcode=1 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 "
    "remoteGid ::ffff:10.0.0.2 hca mlx5_0\n";
constexpr std::string_view kQpLinkLocal =
    "n1:11:12 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 4242 mtu 5 GID 0 (80FE/5A1B2CFFFE3D4E5F)\n";

bool Names(const Diagnosis& d, std::string_view category, std::size_t within = 1) {
  for (std::size_t i = 0; i < d.causes.size() && i < within; ++i) {
    if (d.causes[i].category == category) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("retry exceeded with a link-local GID in use is gid_index, not the fabric") {
  Diagnosis d = Run(std::string(kQpLinkLocal) + std::string(kRetry12));
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "gid_index");
  CHECK(d.causes[0].probability > 2 * d.causes[1].probability);
  CHECK(d.causes[0].entity.node == "n1");
  CHECK(Names(d, "retry_exceeded_network", 3));
  bool cites_gid = false;
  for (const auto& e : d.causes[0].evidence) cites_gid = cites_gid || e.line == 1;
  CHECK(cites_gid);
}

TEST_CASE("retry exceeded with a routable GID stays retry_exceeded_network") {
  Diagnosis d = Run(std::string("n1:11:12 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 4242 mtu 5 GID 3 "
                                "(0/100000AFFFF0000)\n") +
                    std::string(kRetry12));
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "retry_exceeded_network");
}

TEST_CASE("QPs set up with different MTUs plus retry exceeded is mtu_mismatch") {
  Diagnosis d =
      Run("n1:1:1 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 1 mtu 5 GID 3 (0/1)\n"
          "n2:1:1 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 2 mtu 3 GID 3 (0/2)\n" +
          std::string(kRetry12));
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "mtu_mismatch");
}

// bootstrap.cc 2.10-2.26 "Bootstrap : Using%s", 2.27 "Bootstrap: Using%s"; line = "
// ifname:addr<port>".
TEST_CASE("bootstrap over a docker bridge is socket_ifname_wrong, a routable interface is not") {
  Diagnosis bad = Run("n1:1:1 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.2<0>\n");
  REQUIRE(bad.named());
  CHECK(bad.causes[0].category == "socket_ifname_wrong");
  Diagnosis lo = Run("n1:1:1 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>\n");
  CHECK(lo.causes[0].category == "socket_ifname_wrong");
  Diagnosis good = Run("n1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>\n");
  CHECK_FALSE(good.named());
}

// shm.h 2.10-2.18: WARN "Call to posix_fallocate failed : %s"; a bridge in the Using line is a
// fact beside it, not what failed.
TEST_CASE("a full /dev/shm beside an unroutable socket interface is shm_too_small") {
  const std::string docker = "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.2<0>\n";
  const std::string full =
      "n1:1:1 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on "
      "device\n";
  auto engine = [](const Diagnosis& d, std::string_view id) {
    for (const Feature& f : d.features) {
      if (f.id == id) return f.value;
    }
    return 0.0;
  };
  Diagnosis alone = Run(docker);
  Diagnosis both = Run(docker + full);
  REQUIRE(both.named());
  CHECK(both.causes[0].category == "shm_too_small");
  // The interface's confidence is weakened, not removed: it stays in the differential.
  const double a = engine(alone, "engine:socket_ifname_wrong");
  const double b = engine(both, "engine:socket_ifname_wrong");
  CHECK(a > 0.5);
  CHECK(b == Approx(a * 0.5).epsilon(0.05));
  bool listed = false;
  for (const Cause& c : both.causes) listed = listed || c.category == "socket_ifname_wrong";
  CHECK(listed);
}

// socket.cc 2.18-2.21: WARN "socketStartConnect: Connect to %s failed : %s" (strerror).
TEST_CASE("connection refused between nodes on a routable interface is firewall_or_port") {
  const std::string refused =
      "n1:1:1 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.2.4<43211> "
      "failed : Connection refused\n";
  Diagnosis d = Run("n1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0>\n" + refused);
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "firewall_or_port");
  // The same refusal with NCCL on the docker bridge is the interface, not the firewall.
  Diagnosis b = Run("n1:1:1 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.2<0>\n" + refused);
  CHECK(b.causes[0].category == "socket_ifname_wrong");
}

// c10d TCPStore (torch 2.x): "The client socket has failed to connect to [host]:29500 (errno:
// 113 - No route to host)".
TEST_CASE("no route to host from the c10d store with a routable bootstrap is firewall_or_port") {
  Diagnosis d =
      Run("n1:1:1 [0] NCCL INFO Bootstrap : Using ib0:192.168.1.5<0>\n"
          "[W socket.cpp:601] [c10d] The client socket has failed to connect to [n2]:29500 (errno: "
          "113 - No route to host).\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "firewall_or_port");
}

// init.cc VERSION_STRING "NCCL version 2.18.3+cuda12.1" per rank.
TEST_CASE("two NCCL versions in one job is version_mismatch") {
  Diagnosis d =
      Run("n1:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n"
          "n2:7:7 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "version_mismatch");
  Diagnosis same =
      Run("n1:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n"
          "n2:7:7 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n");
  CHECK_FALSE(same.named());
}

TEST_CASE("a watchdog timeout wrapped over two or three lines is still read whole") {
  auto timeout_seq = [](std::string_view text) {
    Diagnosis d = Run(text);
    for (const Feature& f : d.features) {
      if (f.id == "row:torch.watchdog_timeout") return f.lines.empty() ? -1 : 1;
    }
    return 0;
  };
  // Cut inside a word (a terminal's wrap) and after the colon and a comma (a pasted log).
  CHECK(timeout_seq("[rank6]:[E207 01:29:36.730311765 ProcessGroupNCCL.cpp:616] [Rank 6] "
                    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
                    "OpType=ALLREDUCE, NumelIn=1, Nume\nlOut=1, Timeout(ms)=600000) ran for "
                    "600050 milliseconds before timing out.\n") == 1);
  CHECK(
      timeout_seq("[Rank 1] Watchdog caught collective operation timeout:\nWorkNCCL(SeqNum=12590, "
                  "OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856,\n         "
                  "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n") == 1);
  // Cut before the row's own words ("operation timeout"): the line holds no other anchor, and
  // the scan still hands it over for the join.
  CHECK(timeout_seq(
            "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective "
            "ope\nration timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=5000) ran for 5050 milliseconds before timing out.\n") == 1);
  // Wrapped over three lines and without "ran for ..." (as sglang prints it): two ranks at one
  // SeqNum with different sizes are a desync.
  Diagnosis d =
      Run("[rank6] Watchdog caught collective operation timeout:\nWorkNCCL(SeqNum=1320347, "
          "OpType=ALLREDUCE,\nNumelIn=4501504, NumelOut=4501504, Timeout(ms)=600000)\n\n"
          "[rank5] Watchdog caught collective operation timeout:\nWorkNCCL(SeqNum=1320347, "
          "OpType=ALLREDUCE,\nNumelIn=8171520, NumelOut=8171520, Timeout(ms)=600000)\n");
  CHECK(HasFeature(d, "cond:timeouts_differ_at_seq"));
  // The first line alone is not a whole message.
  CHECK(timeout_seq("[Rank 1] Watchdog caught collective operation timeout:\nsomething else\n") ==
        0);
}

TEST_CASE("the watchdog line with its fields elided is kept as such when nothing completes it") {
  auto elided_lines = [](std::string_view text) {
    Diagnosis d = Run(text);
    for (const Feature& f : d.features) {
      if (f.id == "row:torch.watchdog_timeout") return -1;  // never the full row from this text
    }
    for (const Feature& f : d.features) {
      if (f.id == "row:torch.watchdog_timeout_text") return static_cast<int>(f.lines.size());
    }
    return 0;
  };
  const std::string elided =
      "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(... OpType=BROADCAST ...)\n";
  CHECK(elided_lines(elided) == 1);
  CHECK(elided_lines(elided + "ran for 3600001 ms before timing out  ->  Signal 6 (SIGABRT)\n") ==
        1);
  // Twice: both kept, as every collective_timeout line is (Evidence::CountRepeat), not joined.
  CHECK(elided_lines(elided + elided) == 2);
}

TEST_CASE("two NCCL library files of different releases on one node is version_mismatch") {
  Diagnosis d =
      Run("lrwxrwxrwx 1 root root 17 Jul 17 19:02 /opt/nccl/build/lib/libnccl.so.2 -> "
          "libnccl.so.2.27.0\n"
          "lrwxrwxrwx 1 root root 17 Sep 10  2024 /usr/lib/x86_64-linux-gnu/libnccl.so.2 -> "
          "libnccl.so.2.23.4\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "version_mismatch");
  Diagnosis one =
      Run("lrwxrwxrwx 1 root root 17 Sep 10  2024 /usr/lib/x86_64-linux-gnu/libnccl.so.2 -> "
          "libnccl.so.2.23.4\n");
  CHECK_FALSE(one.named());
}

// socket.cc 2.18-2.28: "ncclSocketInit: connecting to address %s with family %d is neither
// AF_INET(%d) nor AF_INET6(%d)".
TEST_CASE("a peer address of family 0 is version_mismatch") {
  Diagnosis d =
      Run("n1:1:1 [0] misc/socket.cc:716 NCCL WARN ncclSocketInit: connecting to address  with "
          "family 0 is neither AF_INET(2) nor AF_INET6(10)\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "version_mismatch");
}

// net.cc 2.12-2.28 "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s" (/GDRDMA when
// used); net_ib.cc "NET/IB : Using%s %s; OOB %s:%s".
TEST_CASE("IB in use with no GDRDMA on any transport line is gdr_peermem") {
  const std::string ib =
      "n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n";
  Diagnosis d = Run(ib +
                    "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
                    "n1:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "gdr_peermem");
  Diagnosis gdr =
      Run(ib + "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n");
  CHECK_FALSE(gdr.named());
}

// ProcessGroupNCCL.cpp 2.3-2.11: "Received a dump signal due to a collective timeout from rank %d
// and we will try our best to dump the debug info. Last enqueued NCCL work: %ld, last completed
// NCCL work: %ld."
TEST_CASE("one rank behind the others' enqueued op count is straggler_or_slow_rank") {
  std::string text;
  for (int r = 0; r < 4; ++r) {
    text += "[rank" + std::to_string(r) +
            "]:[E1201 10:00:00.000000 1 ProcessGroupNCCL.cpp:1600] [PG ID 0 PG GUID 0(default_pg) "
            "Rank " +
            std::to_string(r) +
            "] Received a dump signal due to a collective timeout from  rank 1 and we will try our "
            "best to dump the debug info. Last enqueued NCCL work: " +
            (r == 2 ? "7" : "8") + ", last completed NCCL work: 7.\n";
  }
  Diagnosis d = Run(text);
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "straggler_or_slow_rank");
  CHECK(d.causes[0].entity.rank == "2");
}

// ras/client_support.cc 2.24-2.28: the bulk "%d ranks have launched up to operation %ld", the
// outlier "Rank %d has launched up to operation %ld -- GPU %s managed by process %d on node %s".
TEST_CASE(
    "a RAS report with one rank behind the bulk's operation count is straggler_or_slow_rank") {
  Diagnosis d =
      Run("  Communicator ranks have different AllReduce operation counts\n"
          "  7 ranks have launched up to operation 42\n"
          "  Rank 5 has launched up to operation 41 -- GPU 5 managed by process 4242 on node n2\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "straggler_or_slow_rank");
  CHECK(d.causes[0].entity.rank == "5");
  CHECK(d.causes[0].entity.node == "n2");
}

// net_ib.cc 2.10-2.18: "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)".
TEST_CASE("GPU Direct RDMA disabled for want of the peer-memory module is gdr_peermem") {
  Diagnosis d = Run(
      "n1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "gdr_peermem");
}

TEST_CASE("watchdog timeouts on every rank but one point at that rank as the straggler") {
  std::string text = "[rank0]:n1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n";
  for (int r = 1; r < 4; ++r) {
    text += "[rank" + std::to_string(r) + "]:[E1201 10:00:00.0 1 ProcessGroupNCCL.cpp:632] [Rank " +
            std::to_string(r) +
            "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
            "OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800083 "
            "milliseconds before timing out.\n";
  }
  Diagnosis d = Run(text);
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "straggler_or_slow_rank");
  CHECK(d.causes[0].entity.rank == "0");
}

TEST_CASE("a rank that ran out of memory before the others failed is oom_or_crash_other_rank") {
  Diagnosis d = Run(
      "[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has "
      "a total capacity of 79.11 GiB\n"
      "n1:1:1 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.4<5> "
      "with status=5 opcode=1 len=0 vendor err 249\n"
      "[rank0]:n1:1:1 [0] NCCL WARN Net : Connection closed by remote peer; remote process exited "
      "or there was a network error\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "oom_or_crash_other_rank");
  CHECK(d.causes[0].entity.rank == "3");
}

TEST_CASE("an entity joins only the fields of its own rank's lines, never another rank's node") {
  // rank 3's OOM names no node; the NCCL lines after it are rank 0's on n1, GPU 0.
  Diagnosis d = Run(
      "[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
      "[rank0]:n1:1:1 [0] NCCL WARN Net : Connection closed by remote peer; remote process exited "
      "or there was a network error\n");
  REQUIRE(d.named());
  REQUIRE(d.causes[0].category == "oom_or_crash_other_rank");
  CHECK(d.causes[0].entity.rank == "3");
  CHECK(d.causes[0].entity.node.empty());
  CHECK(d.causes[0].entity.gpu.empty());
}

TEST_CASE("a later line of the same rank lends its node and GPU to the entity") {
  Diagnosis d = Run(
      "[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
      "[rank0]:n1:1:1 [0] NCCL WARN Net : Connection closed by remote peer; remote process exited "
      "or there was a network error\n"
      "[rank3]:n4:7:7 [3] NCCL WARN Net : Connection closed by remote peer; remote process exited "
      "or there was a network error\n");
  REQUIRE(d.named());
  REQUIRE(d.causes[0].category == "oom_or_crash_other_rank");
  CHECK(d.causes[0].entity.rank == "3");
  CHECK(d.causes[0].entity.node == "n4");
  CHECK(d.causes[0].entity.gpu == "3");
}

// enqueue/init "Cuda failure '%s'" (NCCL WARN, 2.10-2.18 wording) with cudaGetErrorString's text.
TEST_CASE("a CUDA allocation failure inside NCCL on one rank is oom_or_crash_other_rank") {
  Diagnosis d =
      Run("[rank2]:n3:9:9 [2] NCCL WARN Cuda failure 'out of memory'\n"
          "[rank0]:n1:1:1 [0] NCCL WARN Net : Connection closed by remote peer n3<51234>\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "oom_or_crash_other_rank");
  CHECK(d.causes[0].entity.rank == "2");
}

TEST_CASE("ibv_reg_mr failing with ENOMEM is memlock") {
  Diagnosis d =
      Run("n1:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
          "allocate memory\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "memlock");
}

TEST_CASE("symptoms alone confirm no cause but rank the likeliest, with what would separate them") {
  Diagnosis d = Run(
      "[rank1]:[E1201 10:00:00.0 1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
      "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
      "Timeout(ms)=600000) ran for 600083 milliseconds before timing out.\n"
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n");
  CHECK_FALSE(d.named());
  CHECK_FALSE(d.decided);
  REQUIRE(d.causes.size() >= 3);
  CHECK(d.causes[0].category != "unknown");
  for (std::size_t i = 1; i < d.causes.size(); ++i) {
    CHECK(d.causes[i - 1].probability >= d.causes[i].probability);
  }
  CHECK(!d.separate.empty());
  REQUIRE(!d.symptoms.empty());
  CHECK(d.symptoms[0].category == "collective_timeout");
}

TEST_CASE("unknown leads only when there is no failure evidence at all") {
  Diagnosis healthy = Run("n1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>\n");
  REQUIRE(!healthy.causes.empty());
  CHECK(healthy.causes[0].category == "unknown");
  CHECK(healthy.causes[0].decide.find("NCCL_DEBUG=INFO") != std::string::npos);
  CHECK(!healthy.named());
  CHECK(healthy.separate.empty());
  // The base rates follow unknown; unknown itself claims no probability.
  CHECK(healthy.causes[0].probability == 0);
  for (std::size_t i = 1; i < healthy.causes.size(); ++i) {
    CHECK(healthy.causes[i].category != "unknown");
  }
  Diagnosis nothing = Run("");
  REQUIRE(!nothing.causes.empty());
  CHECK(nothing.causes[0].category == "unknown");
  // Any failure line and unknown no longer leads.
  Diagnosis failed = Run("n1:1:1 [0] init.cc:1 NCCL WARN something the catalog does not know\n");
  CHECK(failed.causes[0].category != "unknown");
}

TEST_CASE("another source's claim joins the ranking with its evidence") {
  CauseClaim c;
  c.source = "flight_recorder";
  c.rule = "one_rank_behind";
  c.category = "straggler_or_slow_rank";
  c.confidence = 0.8;
  c.entity.rank = "5";
  c.evidence.push_back({"fr/rank5.pkl", 0, "rank 5 last entered SeqNum 41, others 42", ""});
  Diagnosis d = Run("", std::span<const CauseClaim>(&c, 1));
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "straggler_or_slow_rank");
  CHECK(d.causes[0].entity.rank == "5");
  CHECK(d.causes[0].rules[0] == "flight_recorder:one_rank_behind");
}

TEST_CASE("the JSON has the issue's schema, causes best first with file:line evidence") {
  Diagnosis d = Run(std::string(kQpLinkLocal) + std::string(kRetry12));
  nlohmann::json j = DiagnosisJson(d, {}, /*explain=*/true);
  CHECK(j["schema"] == "safe-launch.diagnosis/1");
  REQUIRE(j["causes"].size() >= 2);
  CHECK(j["causes"][0]["category"] == "gid_index");
  CHECK(j["causes"][0]["probability"].get<double>() >= j["causes"][1]["probability"].get<double>());
  CHECK(j["causes"][0]["evidence"][0]["file"] == "job.log");
  CHECK(j["causes"][0]["evidence"][0]["line"].is_number());
  CHECK(j["causes"][0].contains("fix"));
  CHECK(j["causes"][0].contains("entity"));
  bool fired = false;
  for (const auto& f : j["rules_fired"])
    fired = fired || f["rule"] == "gid_index.retry_with_link_local_gid";
  CHECK(fired);
}

TEST_CASE("every rule names a cause category and only known conditions") {
  for (const Rule& r : Rules()) {
    INFO(r.id);
    CHECK(FindCategory(r.category) != nullptr);
    for (std::string_view w : r.when) {
      if (w.empty()) continue;
      bool known = false;
      for (const auto& c : Conditions()) known = known || c.name == w;
      CHECK(known);
    }
  }
}

TEST_CASE("the bundle summary carries the engine's ranked causes") {
  LineMatcher m;
  Evidence ev;
  ev.AddText(m, std::string(kQpLinkLocal) + std::string(kRetry12), "stderr");
  Verdict v = Decide(ev, Trigger::kJobFailed, {});
  CHECK(v.category == "gid_index");
  auto j = SummaryJson(v, {});
  REQUIRE(j["causes"].size() >= 1);
  CHECK(j["causes"][0]["category"] == "gid_index");
  CHECK(SummaryMarkdown(v, {}).find("## Causes, best first") != std::string::npos);
}

namespace {

// ProcessGroupNCCL.cpp (2.0-2.3 wording, torch >= 2.4 adds the "[rankN]:" prefix): the
// watchdog's timeout line of rank `r`.
std::string WatchdogTimeout(int r, int seq = 9) {
  return "[rank" + std::to_string(r) + "]:[E1201 10:00:00.0 1 ProcessGroupNCCL.cpp:632] [Rank " +
         std::to_string(r) +
         "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
         ", OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600083 "
         "milliseconds before timing out.\n";
}

// Megatron training_log: ' iteration {:8d}/{:8d} |' + ' consumed samples: {:12d} |' + '
// elapsed time per iteration (ms): {:.1f} |'.
std::string MegatronIteration(int r, int it) {
  return "[rank" + std::to_string(r) + "]: iteration " + std::to_string(it) +
         "/  500000 | consumed samples:       " + std::to_string(it * 1024) +
         " | elapsed time per iteration (ms): 4401.2 |\n";
}

}  // namespace

TEST_CASE("a rank that keeps printing iterations after the others timed out is the straggler") {
  std::string text = MegatronIteration(0, 100);
  for (int r = 1; r < 4; ++r) text += WatchdogTimeout(r);
  text += MegatronIteration(0, 101);
  Diagnosis d = Run(text);
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "straggler_or_slow_rank");
  CHECK(d.causes[0].entity.rank == "0");
  CHECK(Fired(d, "straggler_or_slow_rank.progress_after_timeout"));
}

// transformers Trainer._save: f"Saving model checkpoint to {output_dir}" on the main process
// only, so the line has no rank; ranks 1..3 time out in the next collective.
TEST_CASE("a checkpoint save as the last line of the rank that did not time out is the straggler") {
  std::string text =
      "[INFO|trainer.py:2889] 2024-05-01 10:00:00,000 >> Saving model checkpoint to "
      "out/checkpoint-500\n";
  for (int r = 1; r < 4; ++r) text += WatchdogTimeout(r);
  Diagnosis d = Run(text);
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "straggler_or_slow_rank");
  CHECK(Fired(d, "straggler_or_slow_rank.saving_while_others_time_out"));
}

TEST_CASE("one rank's iteration counter behind the others while all time out is the straggler") {
  std::string text;
  for (int r = 0; r < 4; ++r) text += MegatronIteration(r, r == 3 ? 150 : 200);
  for (int r = 0; r < 4; ++r) text += WatchdogTimeout(r);
  Diagnosis d = Run(text);
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "straggler_or_slow_rank");
  CHECK(d.causes[0].entity.rank == "3");
  CHECK(Fired(d, "straggler_or_slow_rank.last_progress_differs"));
  CHECK(!Fired(d, "straggler_or_slow_rank.all_but_one_time_out"));
}

TEST_CASE("progress before a rank's own timeout, or rank 0's rank-less saves, name no straggler") {
  // The rank that printed progress is the one that timed out: the job simply hung there.
  // (A timeout alone keeps the straggler in the differential: no rule confirms it.)
  auto no_straggler_rule = [](const Diagnosis& d) {
    for (const Firing& f : d.fired) {
      if (f.category == "straggler_or_slow_rank") return false;
    }
    return !d.named() || d.causes[0].category != "straggler_or_slow_rank";
  };
  Diagnosis own = Run(MegatronIteration(0, 100) + WatchdogTimeout(0) + WatchdogTimeout(1));
  CHECK(no_straggler_rule(own));
  // A rank-less save (rank 0's) while rank 0 itself timed out says nothing about who is late.
  Diagnosis saved = Run("Saving model checkpoint to out/checkpoint-500\n" + WatchdogTimeout(0));
  CHECK(no_straggler_rule(saved));
  // The save of a rank that is not late (no timeouts at all) is not evidence either.
  Diagnosis quiet = Run("Saving model checkpoint to out/checkpoint-500\n");
  CHECK(!quiet.named());
}

TEST_CASE("progress records stay bounded however many ranks and lines a log has") {
  static const LineMatcher matcher;
  Evidence ev;
  LogIngest ingest(matcher, &ev);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += MegatronIteration(i % 400, i / 400);
  ingest.AddText("job.log", text);
  REQUIRE(ev.progress().size() == Evidence::kKeepProgress);
  const Progress& p = ev.progress().front();
  CHECK(p.who == "0");
  CHECK(p.lines == 50);
  CHECK(p.max_step == 49);
  CHECK(p.last.line_number == 19601);
}

// help-orterun.txt [orterun:proc-aborted-strsignal] (4.1): mpirun names the first rank that
// died and its signal; the survivors' NCCL errors follow from it.
TEST_CASE("mpirun's signal 9 banner with the survivors' errors is oom_or_crash_other_rank") {
  Diagnosis d = Run(
      "[rank0]:n1:1:1 [0] NCCL WARN Net : Connection closed by remote peer; remote process exited "
      "or there was a network error\n"
      "mpirun noticed that process rank 3 with PID 48223 on node gpu07 exited on signal 9 "
      "(Killed).\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "oom_or_crash_other_rank");
  CHECK(d.causes[0].entity.rank == "3");
  CHECK(d.causes[0].entity.node == "gpu07");
}

// PRRTE 3.0 (Open MPI 5) wraps the banner: the signal is on the next line.
TEST_CASE("prterun's wrapped banner with signal 9 on the next line is a rank killed") {
  Diagnosis d =
      Run("prterun noticed that process rank 2 with PID 1201 on node gpu01 exited on\n"
          "signal 9 (Killed).\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "oom_or_crash_other_rank");
}

// task_cgroup_memory.c and srun's SIG_OOM line.
TEST_CASE("Slurm's cgroup OOM kill of a task is oom_or_crash_other_rank on that node") {
  Diagnosis d = Run(
      "slurmstepd: error: Detected 1 oom_kill event in StepId=1054.0. Some of the step tasks have "
      "been OOM Killed.\n"
      "srun: error: gpu03: task 5: Out Of Memory\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "oom_or_crash_other_rank");
  CHECK(d.causes[0].entity.node == "gpu03");
}

TEST_CASE("srun killing the other tasks after the first one aborted is not a death of its own") {
  std::string text;
  for (int r = 1; r < 4; ++r) text += WatchdogTimeout(r);
  text +=
      "srun: error: gpu01: task 1: Aborted (core dumped)\n"
      "srun: error: gpu01: tasks 0,2-3: Killed\n";
  Diagnosis d = Run(text);
  CHECK(!Names(d, "oom_or_crash_other_rank", 1));
  // The same kill as srun's first line is one.
  Diagnosis first = Run("srun: error: gpu01: task 1: Killed\n" + WatchdogTimeout(0));
  CHECK(Names(first, "oom_or_crash_other_rank", 1));
}

TEST_CASE("a Slurm time-limit cancellation alone is a symptom, not a cause") {
  Diagnosis d =
      Run("slurmstepd: error: *** JOB 524549 ON gpu01 CANCELLED AT 2024-10-09T23:01:02 DUE TO TIME "
          "LIMIT ***\n");
  CHECK(!d.named());
  REQUIRE(!d.symptoms.empty());
  CHECK(d.symptoms[0].category == "job_signalled");
}

// MPICH Hydra pmiserv_cb.c (3.3-4.3): the banner of a process that died by a signal, whose
// "EXIT CODE" is the raw wait status (9 = SIGKILL); an exit code 1 there would be 0x01 = SIGHUP.
TEST_CASE("Hydra's bad-termination banner with EXIT CODE 9 is a rank killed by SIGKILL") {
  Diagnosis d =
      Run("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
          "=   PID 48223 RUNNING AT gpu07\n"
          "=   EXIT CODE: 9\n"
          "=   CLEANING UP REMAINING PROCESSES\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "oom_or_crash_other_rank");
}

// cudaGetErrorString texts through torch's "CUDA error: %s" (CUDAException.cpp) and NCCL's
// "Cuda failure '%s'" (checks.h).
TEST_CASE("an uncorrectable ECC or NVLink CUDA error is gpu_xid_or_driver without a kernel log") {
  Diagnosis ecc = Run("RuntimeError: CUDA error: uncorrectable ECC error encountered\n");
  REQUIRE(ecc.named());
  CHECK(ecc.causes[0].category == "gpu_xid_or_driver");
  Diagnosis nvl = Run(
      "n1:1:1 [0] NCCL WARN Cuda failure 'an uncorrectable NVLink error was detected during the "
      "execution'\n");
  REQUIRE(nvl.named());
  CHECK(nvl.causes[0].category == "gpu_xid_or_driver");
  // cudaErrorSystemNotReady: the fabric manager is not running.
  Diagnosis fm = Run("RuntimeError: CUDA error: system not yet initialized\n");
  REQUIRE(fm.named());
  CHECK(fm.causes[0].category == "gpu_xid_or_driver");
}

// ProcessGroupNCCL.cpp (2.0-2.11): "[Rank %d] Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d) ran for %d milliseconds
// before timing out."
TEST_CASE("ranks timing out in one SeqNum with different sizes is a desync, one size is not") {
  auto timeout = [](int rank, const char* numel) {
    return fmt::format(
        "[rank{0}]:[E ProcessGroupNCCL.cpp:475] [Rank {0}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=13807, OpType=ALLREDUCE, NumelIn={1}, NumelOut={1}, "
        "Timeout(ms)=1800000) ran for 1800233 milliseconds before timing out.\n",
        rank, numel);
  };
  auto fired = [](const Diagnosis& d, std::string_view rule) {
    for (const auto& f : d.fired) {
      if (f.rule == rule) return true;
    }
    return false;
  };
  Diagnosis d = Run(timeout(5, "11274112") + timeout(6, "11274112") + timeout(7, "10942336"));
  CHECK(fired(d, "desync_collective_mismatch.timeouts_differ_at_seq"));
  Diagnosis same = Run(timeout(5, "11274112") + timeout(6, "11274112"));
  CHECK_FALSE(fired(same, "desync_collective_mismatch.timeouts_differ_at_seq"));
}

// The same format (torch 1.13-2.x) with the ranks at different SeqNums of one group, and in two
// groups ("[PG 1 Rank 0]"/"[PG 2 Rank 0]" prefixes give the `pg` field) whose counters are apart.
TEST_CASE("ranks of one group timing out at different SeqNums is a desync, other groups' are not") {
  auto timeout = [](int rank, int seq, const char* pg) {
    return fmt::format(
        "[rank{0}]:[E ProcessGroupNCCL.cpp:475] [PG {2} Rank {0}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum={1}, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
        "Timeout(ms)=1800000) ran for 1800233 milliseconds before timing out.\n",
        rank, seq, pg);
  };
  auto fired = [](const Diagnosis& d, std::string_view rule) {
    for (const auto& f : d.fired) {
      if (f.rule == rule) return true;
    }
    return false;
  };
  const char* rule = "desync_collective_mismatch.timeouts_at_different_seqs";
  Diagnosis d = Run(timeout(0, 96117, "0") + timeout(1, 96125, "0"));
  CHECK(fired(d, rule));
  CHECK(d.causes[0].category == "desync_collective_mismatch");
  CHECK_FALSE(fired(Run(timeout(0, 96117, "0") + timeout(1, 96117, "0")), rule));
  CHECK_FALSE(fired(Run(timeout(0, 500, "1") + timeout(1, 96125, "2")), rule));
}

TEST_CASE("a DMA-BUF registration failure is GPUDirect's, not a locked-memory limit") {
  auto fired = [](const Diagnosis& d, std::string_view rule) {
    for (const auto& f : d.fired) {
      if (f.rule == rule) return true;
    }
    return false;
  };
  // ibvwrap.cc 2.13+: "Call to ibv_reg_dmabuf_mr failed with error %s".
  Diagnosis dmabuf =
      Run("n1:1:2 [0] misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error "
          "Operation not supported\n");
  CHECK(fired(dmabuf, "gdr_peermem.dmabuf_reg_failed"));
  CHECK_FALSE(fired(dmabuf, "memlock.reg_mr_failed"));
  Diagnosis plain =
      Run("n1:1:2 [0] misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_mr failed with error "
          "Operation not permitted\n");
  CHECK(fired(plain, "memlock.reg_mr_failed"));
  CHECK_FALSE(fired(plain, "gdr_peermem.dmabuf_reg_failed"));
}

// c10/cuda/CUDACachingAllocator.cpp's OOM message lists "Process %d has %s memory in use."
TEST_CASE("a CUDA OOM on a GPU other processes hold memory on is a device-selection bug") {
  auto fired = [](const Diagnosis& d, std::string_view rule) {
    for (const auto& f : d.fired) {
      if (f.rule == rule) return true;
    }
    return false;
  };
  const std::string head =
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 52.00 MiB. GPU 0 has a total "
      "capacity of 31.74 GiB of which 39.62 MiB is free. ";
  Diagnosis many = Run(head +
                       "Process 101553 has 1.19 GiB memory in use. Process 101552 has 1.19 GiB "
                       "memory in use. Of the allocated memory 28.1 GiB is allocated by PyTorch\n");
  CHECK(fired(many, "duplicate_gpu.oom_other_processes_on_gpu"));
  Diagnosis own = Run(head + "Process 101553 has 31.6 GiB memory in use.\n");
  CHECK_FALSE(fired(own, "duplicate_gpu.oom_other_processes_on_gpu"));
}

TEST_CASE("NCCL failing to allocate GPU memory is a rank's death, like torch's CUDA OOM") {
  // alloc.h 2.14-2.30 "Failed to CUDA calloc async %ld bytes" on one rank, a peer's error after.
  Diagnosis d = Run(
      "n1:11:12 [0] NCCL WARN Failed to CUDA calloc async 1920 bytes\n"
      "n2:21:22 [1] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<5> with status=5 "
      "opcode=1 len=0 vendor err 249 (Recv)\n"
      "[rank1]:[E ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=9, OpType=ALLGATHER, NumelIn=4, NumelOut=8, Timeout(ms)=600000) "
      "ran for 600001 milliseconds before timing out.\n");
  CHECK(Fired(d, "oom_or_crash_other_rank.rank_died"));
  // The same text without the allocation failure names no death.
  Diagnosis none = Run("n1:11:12 [0] NCCL WARN Failed to CUDA malloc host 1920 bytes\n");
  CHECK(!Fired(none, "oom_or_crash_other_rank.rank_died"));
}

TEST_CASE("CUDA's invalid device ordinal is a device selection bug (duplicate_gpu)") {
  Diagnosis d = Run("[rank9]:RuntimeError: CUDA error: invalid device ordinal\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "duplicate_gpu");
  CHECK(d.causes[0].entity.rank == "9");
}

TEST_CASE("NCCL's CUDA peer-access refusal points at the PCIe topology (acs_iommu_p2p)") {
  Diagnosis d =
      Run("n1:1:1 [0] transport/p2p.cc:1 NCCL WARN Cuda failure 'peer access is not supported "
          "between these two devices'\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "acs_iommu_p2p");
}

TEST_CASE("Gloo on the loopback address with Gloo failing between ranks is socket_ifname_wrong") {
  const std::string loopback =
      "[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. "
      "Using the loopback address as fallback. Manually set the network interface to bind to "
      "with GLOO_SOCKET_IFNAME. (function operator())\n";
  Diagnosis d = Run(loopback +
                    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:144] Connect "
                    "timeout [127.0.1.1]:31337\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "socket_ifname_wrong");
  // The warning alone (one node, every rank on loopback) is harmless.
  CHECK(!Run(loopback).named());
}

// net_socket.cc 2.12-2.28 and bootstrap.cc 2.10-2.28.
TEST_CASE("NCCL's truncated messages: socket ones are a desync, bootstrap ones a version split") {
  Diagnosis sock = Run(
      "n1:1:1 [0] transport/net_socket.cc:486 NCCL WARN NET/Socket : peer 10.0.0.2<5677> message "
      "truncated : receiving 1048576 bytes instead of 65536. If you believe your socket network "
      "is in healthy state, there may be a mismatch in collective sizes or environment settings "
      "(e.g. NCCL_PROTO, NCCL_ALGO) between ranks\n");
  REQUIRE(sock.named());
  CHECK(sock.causes[0].category == "desync_collective_mismatch");
  Diagnosis boot =
      Run("n1:1:1 [0] bootstrap.cc:77 NCCL WARN Message truncated : received 4096 bytes instead "
          "of 256\n");
  REQUIRE(boot.named());
  // (The corpus also shows these truncations as NCCL defects: the version split is first or
  // second.)
  CHECK(Names(boot, "version_mismatch", 2));
}

TEST_CASE("a DataLoader worker's bus error is shm_too_small, ahead of the rank it took down") {
  Diagnosis d = Run(
      "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
      "shared memory (shm).\n"
      "RuntimeError: DataLoader worker (pid 2841) is killed by signal: Bus error.\n"
      "[rank0]:n1:1:1 [0] NCCL WARN Net : Connection closed by remote peer; remote process exited "
      "or there was a network error\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "shm_too_small");
}

// NCCLUtils getNcclErrorDetailStr / ncclGetErrorString(ncclRemoteError) as torch prints it.
TEST_CASE("torch's remote-process-exited NCCL error counts as a survivor's error of a death") {
  Diagnosis d = Run(
      "[rank2]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
      "[rank0]:torch.distributed.DistBackendError: NCCL error in: "
      "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, remote process exited or there "
      "was a network error, NCCL version 2.19.3\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "oom_or_crash_other_rank");
  CHECK(Fired(d, "oom_or_crash_other_rank.died_then_survivors_fail"));
}

// socket.cpp (2.x): "The client socket has timed out after %s while trying to connect to (%s,
// %d)."
TEST_CASE("a c10d store connect that times out is firewall_or_port, weakly") {
  Diagnosis d =
      Run("torch.distributed.DistNetworkError: The client socket has timed out after 1800s while "
          "trying to connect to (10.0.0.1, 29500).\n");
  REQUIRE(d.named());
  // A timeout without a refusal: the filter or the wrong address/interface, both in the first
  // two, neither at high probability.
  CHECK(Names(d, "firewall_or_port", 2));
  CHECK(d.causes[0].probability < 0.75);
}

TEST_CASE("libibverbs' RLIMIT_MEMLOCK warning with a failing IB transport is memlock") {
  const std::string warning = "libibverbs: Warning: RLIMIT_MEMLOCK is 32768 bytes.\n";
  // net_ib.cc's completion error (2.20 format) on the same job.
  Diagnosis d = Run(warning +
                    "n1:1:1 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer "
                    "10.0.0.2<5> with status=10 opcode=1 len=0 vendor err 136 (Send)\n");
  REQUIRE(d.named());
  CHECK(d.causes[0].category == "memlock");
  Diagnosis alone = Run(warning);
  REQUIRE(alone.named());
  CHECK(alone.causes[0].category == "memlock");
  // The warning alone is a standing condition; with the IB transport failing it is the cause.
  CHECK(alone.causes[0].probability < d.causes[0].probability);
}

TEST_CASE("NCCL's return trace alone is failure evidence with its result code and origin") {
  // checks.h "%s:%d -> %d": a system error (2) that started in misc/socket.cc, no WARN kept.
  Diagnosis d =
      Run("n1:11:12 [2] NCCL INFO misc/socket.cc:567 -> 2\n"
          "n1:11:12 [2] NCCL INFO misc/socket.cc:618 -> 2\n"
          "n1:11:12 [2] NCCL INFO bootstrap.cc:91 -> 2\n");
  REQUIRE(!d.causes.empty());
  CHECK(d.causes[0].category != "unknown");
  CHECK(HasFeature(d, "cond:nccl_result_system"));
  CHECK(!HasFeature(d, "cond:nccl_result_internal"));
  CHECK(HasFeature(d, "trace_origin:misc/socket.cc"));
  // Only where a chain starts: the later frames of the same process are no origin.
  CHECK(!HasFeature(d, "trace_origin:bootstrap.cc"));
  Diagnosis internal = Run("n1:11:12 [2] NCCL INFO include/net.h:22 -> 3\n");
  CHECK(HasFeature(internal, "cond:nccl_result_internal"));
  CHECK(!HasFeature(internal, "cond:nccl_result_system"));
}

TEST_CASE("an error line that ends in NCCL's version is read as the error, not the version fact") {
  Diagnosis d = Run(
      "torch.distributed.DistBackendError: NCCL error in: \n"
      "internal error - please report this issue to the NCCL developers, NCCL version 2.19.3\n");
  REQUIRE(!d.causes.empty());
  CHECK(d.causes[0].category != "unknown");
  CHECK(HasFeature(d, "cond:nccl_result_internal"));
  // The version is still seen: its series is a feature.
  CHECK(HasFeature(d, "struct:nccl_series:2.19"));
}

TEST_CASE("the function a torch C++ error was raised from is a feature") {
  Diagnosis d =
      Run("Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
          "ProcessGroupNCCL.cpp:565 (most recent call first):\n");
  CHECK(d.causes[0].category != "unknown");
  CHECK(HasFeature(d, "raised_from:checkTimeout"));
}

TEST_CASE("the locked-memory limit a log shows is a feature: a number or unlimited") {
  // bash's `ulimit -a` line and UCX's hint with the current limit.
  Diagnosis unlimited =
      Run("misc/ibvwrap.cc:280 NCCL WARN Call to ibv_create_qp failed\n"
          "max locked memory       (kbytes, -l) unlimited\n");
  CHECK(HasFeature(unlimited, "struct:memlock_unlimited"));
  CHECK(!HasFeature(unlimited, "struct:memlock_limited"));
  Diagnosis limited = Run(
      "[1668693503.473099] [ampere:1188443:0]          ib_log.c:246  UCX  ERROR mlx5_0: "
      "ibv_create_cq() failed: Cannot allocate memory. Please set max locked memory (ulimit -l) to "
      "'unlimited' (current: 64 kbytes)\n");
  CHECK(HasFeature(limited, "struct:memlock_limited"));
  CHECK(!HasFeature(limited, "struct:memlock_unlimited"));
}

TEST_CASE("an RDMA registration failing with ENOMEM outside NCCL meets the ENOMEM condition") {
  Diagnosis d = Run("fi_mr_reg failed, ret is:-12, Cannot allocate memory\n");
  CHECK(d.causes[0].category != "unknown");
  CHECK(HasFeature(d, "cond:verbs_enomem"));
}

// A failure in words no source row knows (a transfer engine of its own, an MPI library) is still
// failure evidence: the generic rows take the line, the vocabulary's terms in it become features,
// and the differential ranks causes instead of answering unknown.
TEST_CASE("a failure line no source row knows is failure evidence and carries its terms") {
  const Diagnosis d =
      Run("E0729 05:04:30.527725 14093 rdma_endpoint.cpp:70] Failed to set up the queue pair of "
          "mlx5_2 (RLIMIT_MEMLOCK is 65536 bytes)\n");
  REQUIRE(!d.causes.empty());
  CHECK(d.causes.front().category != "unknown");
  CHECK(HasFeature(d, "row:generic.failed_cap"));
  CHECK(HasFeature(d, "term:verbs_qp"));
  CHECK(HasFeature(d, "term:ib_device"));
  CHECK(HasFeature(d, "term:memlock"));
  // A line a source row took is read by that row, not again by its words.
  const Diagnosis known =
      Run("n1:1:2 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot "
          "allocate memory\n");
  CHECK(!HasFeature(known, "term:verbs_cq"));
  // Terms come from failure lines only: the same words in an INFO line are not evidence.
  const Diagnosis info =
      Run("n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
          "n1:1:1 [0] NCCL INFO ibv_create_qp ok, RLIMIT_MEMLOCK unlimited, /dev/shm 64 GiB\n");
  REQUIRE(!info.causes.empty());
  CHECK(info.causes.front().category == "unknown");
  CHECK(!HasFeature(info, "term:verbs_qp"));
  CHECK(!HasFeature(info, "term:memlock"));
}
