// The fitted table's reader and scoring, and the differential the engine builds from it (with a
// small table of the test's own, so the behaviours do not hang on what a refit learns).
#include "diagnose/model.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "diagnose/engine.h"
#include "diagnose/ingest.h"
#include "diagnose/job_report.h"
#include "diagnose/report.h"

using namespace sl::diagnose;

namespace {

constexpr std::string_view kTable =
    "# a test table\n"
    "meta\tfingerprint\tabc\n"
    "meta\ttemperature\t2\n"
    "class\tgid_index\t0\n"
    "class\tretry_exceeded_network\t1\n"
    "class\tmtu_mismatch\t-1\n"
    "weight\trow:nccl.ib_status_retry_exceeded\tretry_exceeded_network\t2\n"
    "weight\tcond:link_local_gid\tgid_index\t6\n"
    "weight\tcond:link_local_gid\tretry_exceeded_network\t-1\n";

Model TestModel() {
  auto m = ParseModel(kTable);
  REQUIRE(m.ok());
  return *m;
}

Diagnosis Run(std::string_view text, const Model& model) {
  static const LineMatcher matcher;
  Evidence ev;
  LogIngest ingest(matcher, &ev);
  ingest.AddText("job.log", text);
  return Diagnose(ev, {}, &model);
}

// net_ib.cc (2.12-2.28) completion WARN and QP INFO line, as in engine_test.cpp.
constexpr std::string_view kModelRetry12 =
    "n1:11:12 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.2<5> with status=12 opcode=1 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 "
    "remoteGid ::ffff:10.0.0.2 hca mlx5_0\n";
constexpr std::string_view kModelQpLinkLocal =
    "n1:11:12 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 4242 mtu 5 GID 0 (80FE/5A1B2CFFFE3D4E5F)\n";

}  // namespace

TEST_CASE("the table's classes, weights, temperature and meta are read") {
  Model m = TestModel();
  REQUIRE(m.categories.size() == 3);
  CHECK(m.categories[1] == "retry_exceeded_network");
  CHECK(m.intercepts[1] == 1);
  CHECK(m.temperature == 2);
  CHECK(m.meta.at("fingerprint") == "abc");
  REQUIRE(m.Weights("cond:link_local_gid") != nullptr);
  CHECK((*m.Weights("cond:link_local_gid"))[0] == 6);
  CHECK((*m.Weights("cond:link_local_gid"))[2] == 0);
  CHECK(m.Weights("row:never.seen") == nullptr);
}

TEST_CASE("probabilities are the softmax of the scores over the temperature") {
  Model m = TestModel();
  auto p = m.Probabilities({{"row:nccl.ib_status_retry_exceeded", 1}, {"row:unknown.feature", 1}});
  REQUIRE(p.size() == 3);
  // scores 0, 3, -1 over T=2.
  const double z = std::exp(0.0) + std::exp(1.5) + std::exp(-0.5);
  CHECK(p[0] == Approx(1 / z));
  CHECK(p[1] == Approx(std::exp(1.5) / z));
  CHECK(p[0] + p[1] + p[2] == Approx(1));
  // A value scales its weights.
  auto half = m.Probabilities({{"row:nccl.ib_status_retry_exceeded", 0.5}});
  CHECK(half[1] < p[1]);
}

TEST_CASE("a table that does not parse names its line") {
  auto bad = ParseModel("class\ta\t0\nweight\tf\tb\t1\n");
  REQUIRE(!bad.ok());
  CHECK(bad.error().where == "weights.tsv:2");
  CHECK(!ParseModel("meta\tx\ty\n").ok());  // no class
  CHECK(!ParseModel("class\ta\tnot-a-number\n").ok());
}

// Numbers are read without a copy where they are plain; anything else is ParseDouble's, as
// before (blanks around, a sign, CRLF lines).
TEST_CASE("the table's numbers read as ParseDouble reads them, plain or not") {
  auto m =
      ParseModel("class\ta\t 1.5 \r\nclass\tb\t-0.25\r\nweight\tf\ta\t+2\nweight\tf\tb\t1e-3\n");
  REQUIRE(m.ok());
  CHECK(m->intercepts == std::vector<double>{1.5, -0.25});
  REQUIRE(m->Weights("f") != nullptr);
  CHECK(*m->Weights("f") == std::vector<double>{2, 0.001});
  auto bad = ParseModel("class\ta\t1\nweight\tf\ta\t2x\n");
  REQUIRE(!bad.ok());
  CHECK(bad.error().where == "weights.tsv:2");
}

TEST_CASE("the embedded table parses, names only causes and carries its fingerprint") {
  auto m = ParseModel(FittedModelText());
  REQUIRE(m.ok());
  CHECK(!m->meta["fingerprint"].empty());
  CHECK(m->temperature > 0);
  for (const std::string& c : m->categories) {
    INFO(c);
    CHECK(FindCategory(c) != nullptr);
  }
  for (const auto& [feature, w] : m->weights) CHECK(w.size() == m->categories.size());
}

TEST_CASE("the differential ranks by the model, and a feature's lines back the cause it pushes") {
  Model m = TestModel();
  Diagnosis d = Run(std::string(kModelQpLinkLocal) + std::string(kModelRetry12), m);
  REQUIRE(d.named());
  REQUIRE(d.causes.size() == 3);
  CHECK(d.causes[0].category == "gid_index");
  CHECK(d.causes[1].category == "retry_exceeded_network");
  double sum = 0;
  for (const Cause& c : d.causes) sum += c.probability;
  CHECK(sum == Approx(1));
  REQUIRE(!d.causes[0].pushed.empty());
  CHECK(d.causes[0].pushed[0].feature == "cond:link_local_gid");
  bool cites_qp = false;
  for (const auto& e : d.causes[0].evidence) cites_qp = cites_qp || e.line == 1;
  CHECK(cites_qp);
  // Without the link-local GID the fabric leads.
  Diagnosis fabric = Run(kModelRetry12, m);
  CHECK(fabric.causes[0].category == "retry_exceeded_network");
}

// show_gids' DEV column names an RDMA device: the cause is on that port, not on a "GPU mlx5_0".
TEST_CASE("an RDMA device in a tool's table is the entity's port, a CUDA index its GPU") {
  static const LineMatcher matcher;
  Evidence ev;
  LogIngest ingest(matcher, &ev);
  ingest.AddText("job.log",
                 "mlx5_0  1       1       fe80:0000:0000:0000:a288:c2ff:fe5b:03ec"
                 "                 v2      ens3np0\n"
                 "mlx5_0  1       3       0000:0000:0000:0000:0000:ffff:0b00:0048 11.0.0.72"
                 "       v2      ens3np0\n");
  Diagnosis d = Diagnose(ev, {}, nullptr);
  REQUIRE_FALSE(d.causes.empty());
  CHECK(d.causes[0].category == "gid_index");
  CHECK(d.causes[0].entity.gpu.empty());
  CHECK(d.causes[0].entity.port.starts_with("mlx5_0"));
  CHECK(EntityText(d.causes[0].entity).find("GPU") == std::string::npos);
}

TEST_CASE("the answer names what separates the first two causes") {
  Model m = TestModel();
  Diagnosis d = Run(std::string(kModelQpLinkLocal) + std::string(kModelRetry12), m);
  CHECK(d.separate == Separator("gid_index", "retry_exceeded_network"));
  CHECK(d.separate.find("show_gids") != std::string::npos);
  // A pair without a row of its own: both categories' decide text.
  const std::string both = Separator("shm_too_small", "duplicate_gpu");
  CHECK(both.find(FindCategory("shm_too_small")->decide) != std::string::npos);
  CHECK(both.find(FindCategory("duplicate_gpu")->decide) != std::string::npos);
  CHECK(Separator("gid_index", "retry_exceeded_network") ==
        Separator("retry_exceeded_network", "gid_index"));
}

TEST_CASE("the features name rows, conditions, rules, claims and the evidence's shape") {
  static const LineMatcher matcher;
  Evidence ev;
  LogIngest ingest(matcher, &ev);
  ingest.AddText("job.log", std::string(kModelQpLinkLocal) + std::string(kModelRetry12));
  CauseClaim claim;
  claim.source = "preflight";
  claim.rule = "ib.mtu/ib_mtu_mismatch";
  claim.category = "mtu_mismatch";
  claim.confidence = 0.65;
  auto f = ExtractFeatures(ev, std::span<const CauseClaim>(&claim, 1));
  auto value = [&f](std::string_view id) {
    for (const Feature& x : f) {
      if (x.id == id) return x.value;
    }
    return -1.0;
  };
  CHECK(value("row:nccl.ib_status_retry_exceeded") == 1);
  CHECK(value("row:nccl.ib_qp_info") == 1);
  CHECK(value("cond:link_local_gid") == 1);
  CHECK(value("rule:gid_index.retry_with_link_local_gid") == 1);
  CHECK(value("preflight:ib.mtu/ib_mtu_mismatch") == Approx(0.65));
  CHECK(value("claim:mtu_mismatch") == Approx(0.65));
  CHECK(value("engine:gid_index") > 0.8);
  CHECK(value("struct:symptoms_only") == -1);  // a rule names a cause
  // A timeout alone: symptoms only, and no error line.
  Evidence t;
  LogIngest ti(matcher, &t);
  ti.AddText("job.log",
             "[rank1]:[E1201 10:00:00.0 1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
             "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, "
             "NumelOut=1, Timeout(ms)=600000) ran for 600083 milliseconds before timing out.\n");
  auto tf = ExtractFeatures(t);
  bool only = false, no_error = false;
  for (const Feature& x : tf) {
    only = only || x.id == "struct:symptoms_only";
    no_error = no_error || x.id == "struct:timeout_without_error";
  }
  CHECK(only);
  CHECK(no_error);
}

namespace {

bool HasFeature(std::string_view text, std::string_view id) {
  static const LineMatcher matcher;
  Evidence ev;
  LogIngest ingest(matcher, &ev);
  ingest.AddText("job.log", text);
  for (const Feature& x : ExtractFeatures(ev)) {
    if (x.id == id) return true;
  }
  return false;
}

// torch's "NCCL error in: %s:%d, %s, NCCL version %d.%d.%d" (ProcessGroupNCCL.cpp, NCCLUtils.cpp,
// 1.10-2.11); before 1.10 it printed NCCL's code 21104 as "21.1.4".
constexpr std::string_view kTorchNcclError =
    "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version "
    "2.26.2\n";

}  // namespace

TEST_CASE("the NCCL release series of the job is a feature, in both of torch's spellings") {
  CHECK(HasFeature(kTorchNcclError, "struct:nccl_series:2.26"));
  CHECK(
      HasFeature("RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/"
                 "ProcessGroupNCCL.cpp:975, internal error, NCCL version 21.1.4\n",
                 "struct:nccl_series:2.11"));
  CHECK_FALSE(HasFeature(kTorchNcclError, "struct:nccl_series:2.2"));
}

TEST_CASE("the first error's category and whether one rank or several err are features") {
  CHECK(HasFeature(kTorchNcclError, "first:nccl_error"));
  CHECK(HasFeature(kTorchNcclError, "struct:errors_one_rank"));
  CHECK_FALSE(HasFeature(kTorchNcclError, "struct:errors_many_ranks"));
  std::string two(kTorchNcclError);
  two += std::string(kTorchNcclError).replace(0, 7, "[rank1]");
  CHECK(HasFeature(two, "struct:errors_many_ranks"));
  CHECK(HasFeature(two, "struct:same_error_everywhere"));
  CHECK_FALSE(HasFeature(two, "struct:errors_one_rank"));
}

// init.cc "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init
// COMPLETE" (2.17-2.28) before or after the first error; NCCL's "host:pid:tid" prefix names hosts.
TEST_CASE(
    "whether the first error follows NCCL's Init COMPLETE, and on how many hosts, are features") {
  const std::string init =
      "n1:11:12 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId "
      "0x7 - Init COMPLETE\n";
  const std::string error = "n2:21:22 [0] misc/socket.cc:1 NCCL WARN unknown to the catalog\n";
  CHECK(HasFeature(init + error, "struct:error_after_init"));
  CHECK_FALSE(HasFeature(init + error, "struct:error_before_init"));
  CHECK(HasFeature(error + init, "struct:error_before_init"));
  CHECK(HasFeature(init + error, "struct:hosts_many"));
  CHECK(HasFeature(error, "struct:hosts_one"));
  CHECK_FALSE(HasFeature(error, "struct:hosts_many"));
  CHECK_FALSE(HasFeature(init, "struct:error_before_init"));  // no error at all
}

// nccl-tests' device table (src/common.cu "#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s")
// names each rank's host: a benchmark on one node is told from one across nodes.
TEST_CASE("nccl-tests' device table names the hosts of a benchmark's failure") {
  const std::string failure = "node1: Test NCCL failure common.cu:777 'unhandled system error'\n";
  const std::string one =
      "#   Rank  0 Pid   1688 on    node1 device  0 [0x18] GeForce RTX 2080 Ti\n"
      "#   Rank  1 Pid   1688 on    node1 device  1 [0x3b] GeForce RTX 2080 Ti\n";
  const std::string two = one + "#   Rank  2 Pid   2211 on    node2 device  0 [0x18] Tesla V100\n";
  CHECK(HasFeature(one + failure, "struct:hosts_one"));
  CHECK(HasFeature(two + failure, "struct:hosts_many"));
  CHECK_FALSE(HasFeature(two + failure, "struct:hosts_one"));
}

// net_socket.cc 2.10-2.28 "NET/Socket : Using [0]%s:%s<0> [1]..." (NCCL_SOCKET_IFNAME unset:
// every interface it found); bootstrap.cc before 2.10 listed them the same way.
TEST_CASE("several interfaces in NCCL's socket list are a feature") {
  const std::string failure = "n1:21:22 [0] misc/socket.cc:1 NCCL WARN unknown to the catalog\n";
  const std::string many =
      "n1:21:21 [0] NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0> "
      "[1]ib0:10.0.0.1<0> [2]eth1:10.1.0.7<0>\n";
  const std::string plain = "n1:21:21 [0] NCCL INFO NET/Socket : Using [0]ens5:10.0.0.7<0>\n";
  const std::string boot =
      "n1:21:21 [0] NCCL INFO Bootstrap : Using [0]ens5:172.31.0.137<0> [1]ib0:10.0.0.1<0>\n";
  CHECK(HasFeature(many + failure, "struct:socket_ifs_several"));
  CHECK(HasFeature(boot + failure, "struct:socket_ifs_several"));
  CHECK_FALSE(HasFeature(plain + failure, "struct:socket_ifs_several"));
  CHECK_FALSE(HasFeature(many, "struct:socket_ifs_several"));  // no failure: no struct features
}

// net_ib.cc 2.18-2.19 "NET/IB : Got completion from peer %s with error %d, opcode %d, len %d,
// vendor err %d (%s) localGid %s remoteGids%s": the completion's own local GID.
TEST_CASE("an IB completion's own link-local GID is the GID's evidence, a routable one is not") {
  const std::string head =
      "n1:11:12 [0] transport/net_ib.cc:1012 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.2<53908> with error 12, opcode 0, len 0, vendor err 129 (Send) localGid ";
  const std::string link_local = head + "fe80::ba59:9f03:c0:12 remoteGidsfe80::ba59:9f03:c0:14\n";
  const std::string routable = head + "::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2\n";
  CHECK(HasFeature(link_local, "cond:link_local_gid"));
  CHECK(HasFeature(link_local, "rule:gid_index.retry_with_link_local_gid"));
  CHECK_FALSE(HasFeature(routable, "cond:link_local_gid"));
  CHECK_FALSE(HasFeature(routable, "rule:gid_index.retry_with_link_local_gid"));
}

// torch/csrc/distributed/c10d/socket.cpp (1.13-2.11) "The client socket has timed out after %s
// while trying to connect to (%s, %d)." and TCPStore.cpp (2.3-2.11) "TCP client failed to
// connect/validate to host %s:%d - retrying ...".
TEST_CASE("a c10d store at 0.0.0.0, loopback or the Docker bridge is the interface's doing") {
  const std::string bridge =
      "[E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to "
      "connect to (172.17.0.2, 29500).\n";
  const std::string cut =  // a log line cut after the host
      "[E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to "
      "connect to (172.17.0.2\n";
  const std::string any =
      "W715 09:24:02.297720466 TCPStore.cpp:330] [c10d] TCP client failed to connect/validate to "
      "host 0.0.0.0:51216 - retrying (try=0, timeout=300000ms, delay=59547ms): The client socket "
      "has timed out after 300000ms while trying to connect to (0.0.0.0, 51216).\n";
  const std::string routable =
      "[E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to "
      "connect to (10.0.1.75, 29500).\n";
  CHECK(HasFeature(bridge, "rule:socket_ifname_wrong.store_on_unroutable_address"));
  CHECK(HasFeature(cut, "cond:store_address_unroutable"));
  CHECK(HasFeature(any, "cond:store_address_unroutable"));
  CHECK_FALSE(HasFeature(routable, "cond:store_address_unroutable"));
  CHECK(HasFeature(routable, "row:c10d.store_connect_timeout"));
}

// UCX's debug.c: "Caught signal %d (%s)" and its backtrace frames " %2d 0x%016lx %s()  %s:%u".
TEST_CASE("NCCL's frames on a bus error without backing weigh less: the shm, not NCCL") {
  auto value = [](std::string_view text, std::string_view id) {
    static const LineMatcher matcher;
    Evidence ev;
    LogIngest ingest(matcher, &ev);
    ingest.AddText("job.log", text);
    for (const Feature& f : ExtractFeatures(ev)) {
      if (f.id == id) return f.value;
    }
    return 0.0;
  };
  const std::string frame =
      " 1 0x000000000004f03d ncclLaunchPrepare()  /dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/"
      "src/enqueue.cc:574\n";
  const std::string bus =
      "[qgpu813:1    :0:381] Caught signal 7 (Bus error: nonexistent physical "
      "address)\n";
  const std::string segv =
      "[qgpu813:1    :0:381] Caught signal 11 (Segmentation fault: address "
      "not mapped to object at address 0x10)\n";
  const double alone = value(segv + frame, "engine:nccl_bug");
  REQUIRE(alone > 0);
  CHECK(value(bus + frame, "engine:shm_too_small") > 0);
  CHECK(value(bus + frame, "engine:nccl_bug") < alone);
}

// net_socket.cc "NET/Socket : Using%s" with " [%d]%s:%s" per interface; socket.h 2.3 "NET :
// Using interface %s:%s".
TEST_CASE("one unreachable interface in NCCL's list, or on a 2.3 line, is a bad interface") {
  const std::string veth =
      "h:1:2 [0] NCCL INFO NET/Socket : Using [0]ens5:172.31.0.137<0> "
      "[1]veth75fa783:fe80::14ad:64ff:fe64:b31e%veth75fa783<0>\n";
  const std::string two_good =
      "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>\n";
  CHECK(HasFeature(veth, "cond:bad_interface"));
  CHECK_FALSE(HasFeature(veth, "cond:good_interface"));
  CHECK(HasFeature(two_good, "cond:good_interface"));
  CHECK_FALSE(HasFeature(two_good, "cond:bad_interface"));
  CHECK(
      HasFeature("h:1:2 [0] NCCL INFO NET : Using interface bond0:fe80::ec4:7aff:feb3:29d6%"
                 "bond0<0>\n",
                 "cond:bad_interface"));
  CHECK(HasFeature("h:1:2 [0] NCCL INFO NET : Using interface eno1:192.168.12.50<0>\n",
                   "cond:good_interface"));
}

// torch/csrc/DataLoader.cpp: "DataLoader worker (pid %d) is killed by signal: %s." and, for
// SIGBUS, the shared-memory hint after it (some releases print "Details are lost due to
// multiprocessing" instead): a worker's batches live in /dev/shm.
TEST_CASE(
    "a DataLoader worker killed by a bus error is a full /dev/shm, killed by SIGKILL a death") {
  const std::string bus =
      "RuntimeError: DataLoader worker (pid 20991) is killed by signal: Bus error. Details are "
      "lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.\n";
  CHECK(HasFeature(bus, "cond:sigbus_no_backing"));
  CHECK_FALSE(HasFeature(bus, "cond:rank_died"));
  const std::string killed =
      "RuntimeError: DataLoader worker (pid 37) is killed by signal: Killed.\n";
  CHECK(HasFeature(killed, "cond:rank_died"));
  CHECK_FALSE(HasFeature(killed, "cond:sigbus_no_backing"));
}

// tqdm ends a bar with "\r": in a pasted log the traceback that followed goes on the bar's line.
// Both pieces are recognised: the bar (datasets' map, short of 100 % after 30 minutes) and the
// traceback.
TEST_CASE("a progress bar the traceback went on is two lines, and a bar stuck at the timeout") {
  const std::string glued =
      "Running tokenizer on dataset: 47%|####    | 1695000/3634744 [30:09<33:25, 967.30 "
      "examples/s]Traceback (most recent call last):\n";
  CHECK(HasFeature(glued, "row:progress.datasets_map_bar"));
  CHECK(HasFeature(glued, "row:python.traceback"));
  CHECK(HasFeature(glued, "cond:preprocessing_at_timeout"));
  // An hour-long bar counts; a bar at 100 %, or one of five minutes, does not.
  CHECK(
      HasFeature("Map (num_proc=8):  9%|#  | 280000/2969526 [1:02:55<4:48:08, 155.2 "
                 "examples/s]\n",
                 "cond:preprocessing_at_timeout"));
  CHECK_FALSE(
      HasFeature("Map: 100%|##########| 3634744/3634744 [30:09<00:00, 967.30 "
                 "examples/s]\nTraceback (most recent call last):\n",
                 "cond:preprocessing_at_timeout"));
  CHECK_FALSE(HasFeature("Map: 47%|####  | 1695/3634 [05:09<03:25, 967.30 examples/s]\n",
                         "cond:preprocessing_at_timeout"));
  // Text in brackets that is not a bar's rate is not cut.
  CHECK_FALSE(HasFeature("loss 50%| of [x] Traceback (most recent call last):\n",
                         "row:progress.datasets_map_bar"));
}

// A crash inside libnccl (Abseil's faulting PC, a backtrace frame) is NCCL's defect, not a
// rank that died under its peers; glibc's heap-corruption abort among NCCL's lines likewise.
TEST_CASE("a segfault inside NCCL is crash_in_nccl, not rank_died, and heap corruption with NCCL") {
  // Abseil's handler, its faulting PC in `function`, then faulthandler's line.
  auto segv_in = [](std::string_view function) {
    return "*** SIGSEGV received at time=1742365186 on cpu 33 ***\n"
           "PC: @     0x7f32d184f03d  (unknown)  " +
           std::string(function) + "()\nFatal Python error: Segmentation fault\n";
  };
  const std::string segv = segv_in("ncclLaunchPrepare");
  CHECK(HasFeature(segv, "cond:crash_in_nccl"));
  CHECK_FALSE(HasFeature(segv, "cond:rank_died"));
  const std::string elsewhere = segv_in("at::native::add_kernel");
  CHECK_FALSE(HasFeature(elsewhere, "cond:crash_in_nccl"));
  CHECK(HasFeature(elsewhere, "cond:rank_died"));
  const std::string heap =
      "free(): corrupted unsorted chunks\n[h:186363] *** Process received signal ***\n"
      "NCCL version 2.21.5+cuda12.8\n";
  CHECK(HasFeature(heap, "row:glibc.corrupted_chunks"));
  CHECK(HasFeature(heap, "cond:heap_corruption_with_nccl"));
  CHECK_FALSE(HasFeature("free(): corrupted unsorted chunks\n", "cond:heap_corruption_with_nccl"));
}

// net_ib.cc's completion WARN: status 8/10 (access) is a registration problem; status 4 (local
// protection) is its own row's (ACS/IOMMU), 12 (retry exceeded) the fabric's.
TEST_CASE("an IB access error is ib_access_error, local protection and retry exceeded are not") {
  auto completion = [](int status) {
    return "n1:1:1 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer "
           "10.0.0.2<5> with status=" +
           std::to_string(status) + " opcode=1 len=0 vendor err 136 (Send)\n";
  };
  for (int status : {8, 10}) {
    CHECK(HasFeature(completion(status), "cond:ib_access_error"));
    CHECK(HasFeature(completion(status), "rule:gdr_peermem.ib_access_error"));
  }
  CHECK(HasFeature(completion(4), "row:nccl.ib_status_loc_prot"));
  for (int status : {4, 5, 12}) CHECK_FALSE(HasFeature(completion(status), "cond:ib_access_error"));
}

// Terms are read in symptom lines (NCCL's CUDA failure names the driver) but not in a timeout's
// line, whose words ("SeqNum", "Timeout") are about the wait.
TEST_CASE("terms come from a symptom line's words, not from a timeout's") {
  CHECK(
      HasFeature("h:1:2 [0] misc/cudawrap.cc:182 NCCL WARN Cuda failure 'CUDA driver version "
                 "is insufficient for CUDA runtime version'\n",
                 "term:cuda_driver"));
  const std::string watchdog =
      "[rank0]:[E ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=9, OpType=ALLGATHER, NumelIn=4, NumelOut=8, Timeout(ms)=600000) ran for "
      "600001 milliseconds before timing out.\n";
  CHECK(HasFeature(watchdog, "row:torch.watchdog_timeout"));
  CHECK_FALSE(HasFeature(watchdog, "term:collective_seq"));
  CHECK_FALSE(HasFeature(watchdog, "term:timed_out"));
}

TEST_CASE("a log without any failure line has struct:no_failure_evidence, a failing one not") {
  const std::string healthy =
      "h:1:2 [0] NCCL INFO comm 0x23ba7ea0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 47000 "
      "commId 0x47dc53f08cbcda96 - Init COMPLETE\n";
  CHECK(HasFeature(healthy, "struct:no_failure_evidence"));
  CHECK(HasFeature("", "struct:no_failure_evidence"));
  CHECK_FALSE(HasFeature(healthy + "h:1:2 [0] include/socket.h:382 NCCL WARN Connect to "
                                   "10.0.0.1<49273> failed : Connection refused\n",
                         "struct:no_failure_evidence"));
}

// socket.h 2.10-2.11 / socket.cc 2.12-2.28 "Connect to %s failed : %s", "Call to recv from %s
// failed : %s": a peer at a Docker network's gateway (172.17-31.0.1) advertised its bridge.
TEST_CASE("a socket peer at a Docker network's gateway is a bad interface, a routable one is not") {
  CHECK(
      HasFeature("id-d3:715:790 [1] include/socket.h:382 NCCL WARN Connect to "
                 "172.18.0.1<49273> failed : Connection refused\n",
                 "cond:bad_interface"));
  CHECK(
      HasFeature("h:1:2 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from "
                 "172.17.0.1<34483> failed : Broken pipe\n",
                 "cond:bad_interface"));
  CHECK_FALSE(
      HasFeature("h:1:2 [0] include/socket.h:382 NCCL WARN Connect to "
                 "172.31.12.104<49273> failed : Connection refused\n",
                 "cond:bad_interface"));
  CHECK_FALSE(
      HasFeature("h:1:2 [0] include/socket.h:382 NCCL WARN Connect to "
                 "10.0.0.1<49273> failed : Connection refused\n",
                 "cond:bad_interface"));
}

// ProcessGroupNCCL.cpp (2.1-2.11) "[%d] is setting up NCCL communicator and retrieving
// ncclUniqueId from [0] via c10d key-value store by key '%s', but store->get('%s') got error: %s";
// socket.cpp's "The client socket has timed out after %s while trying to connect to (%s, %d).".
TEST_CASE("a store read that timed out after a good connect is a late rank, a failed connect not") {
  const std::string wait =
      "RuntimeError: [6] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
      "c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n";
  const std::string connect =
      "[E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to "
      "connect to (10.0.1.75, 29500).\n";
  CHECK(HasFeature(wait, "rule:straggler_or_slow_rank.store_wait_timeout"));
  CHECK(HasFeature("RuntimeError: Socket Timeout\n", "cond:store_wait_timeout"));
  CHECK_FALSE(HasFeature(connect + wait, "cond:store_wait_timeout"));
}

TEST_CASE("a catalog row's pseudo-observation is the log of that line alone") {
  const PriorExample* ordinal = nullptr;
  const PriorExample* status12 = nullptr;
  auto priors = PriorExamples();
  for (const PriorExample& p : priors) {
    if (p.id == "row:cuda.invalid_device_ordinal") ordinal = &p;
    if (p.id == "row:nccl.ib_status_retry_exceeded") status12 = &p;
    CHECK(p.id != "row:nccl.init_complete");  // a fact names no cause
  }
  auto has = [](const PriorExample* p, std::string_view id) {
    return std::any_of(p->features.begin(), p->features.end(),
                       [&](const auto& f) { return f.first == id; });
  };
  REQUIRE(ordinal != nullptr);
  CHECK(ordinal->category == "duplicate_gpu");
  CHECK(has(ordinal, "cause:duplicate_gpu"));
  CHECK(has(ordinal, "first:duplicate_gpu"));          // the one line is the first error
  CHECK(has(ordinal, "cond:invalid_device_ordinal"));  // the conditions its text meets
  CHECK(has(ordinal, "rule:duplicate_gpu.invalid_device_ordinal"));
  CHECK_FALSE(has(ordinal, "cond:retry_exceeded"));
  REQUIRE(status12 != nullptr);
  CHECK(has(status12, "cond:retry_exceeded"));
  CHECK(has(status12, "first:retry_exceeded_network"));
  CHECK_FALSE(has(status12, "first:duplicate_gpu"));
}

TEST_CASE("every alternative of a differential becomes pseudo-observations of its evidence") {
  auto priors = PriorExamples();
  REQUIRE(!Alternatives().empty());
  for (const Alternative& a : Alternatives()) {
    INFO(a.of << " -> " << a.category);
    CHECK(FindCategory(a.category) != nullptr);
    CHECK(a.weight > 0);
    CHECK(a.weight < 1);
    // Labelled with the alternative's cause, weighed by the table, on the named evidence's
    // features: a rule's or row's own first, or a row of the symptom category.
    std::size_t made = 0;
    for (const PriorExample& p : priors) {
      if (p.category != a.category || p.weight < 0) continue;
      const bool named = p.id == a.of;
      const bool of_symptom = a.of.starts_with("symptom:") && p.id.starts_with("row:") &&
                              std::any_of(p.features.begin(), p.features.end(), [&](const auto& f) {
                                return f.first == "symptom:" + std::string(a.of.substr(8));
                              });
      if (named || of_symptom) ++made;
    }
    CHECK(made >= 1);
    // An alternative is another cause than the one its rule or row names.
    for (const PriorExample& p : priors) {
      if (p.id == a.of && p.weight < 0) CHECK(p.category != a.category);
    }
  }
  // A watchdog timeout alone leaves three causes open, a late, a dead and a desynchronised rank.
  std::set<std::string> open;
  for (const PriorExample& p : priors) {
    if (p.id == "row:torch.watchdog_timeout" && p.weight >= 0) open.insert(p.category);
  }
  CHECK(open == std::set<std::string>{"straggler_or_slow_rank", "oom_or_crash_other_rank",
                                      "desync_collective_mismatch"});
}

TEST_CASE("every pseudo-observation names a cause and features the extractor produces") {
  auto priors = PriorExamples();
  REQUIRE(!priors.empty());
  for (const PriorExample& p : priors) {
    INFO(p.id);
    CHECK(FindCategory(p.category) != nullptr);
    REQUIRE(!p.features.empty());
    CHECK(p.features.front().first == p.id);
  }
}

TEST_CASE("the explain JSON gives each feature its weight per cause shown and its source") {
  Model m = TestModel();
  Diagnosis d = Run(std::string(kModelQpLinkLocal) + std::string(kModelRetry12), m);
  nlohmann::json j = DiagnosisJson(d, {}, /*explain=*/true);
  REQUIRE(j["causes"].size() == 3);
  CHECK(j["causes"][0].contains("probability"));
  CHECK(j["separate"].get<std::string>() == d.separate);
  bool seen = false;
  for (const auto& f : j["features"]) {
    if (f["feature"] == "cond:link_local_gid") {
      seen = true;
      CHECK(f["weights"]["gid_index"].get<double>() == 6);
      CHECK(f["weights"]["retry_exceeded_network"].get<double>() == -1);
      CHECK(!f["source"].get<std::string>().empty());
    }
  }
  CHECK(seen);
  CHECK(j["priors"]["retry_exceeded_network"].get<double>() == 1);
  const std::string text = DiagnosisText(d, {}, /*explain=*/true);
  CHECK(text.find("1. gid_index  probability") != std::string::npos);
  CHECK(text.find("to tell gid_index from retry_exceeded_network") != std::string::npos);
  CHECK(text.find("cond:link_local_gid") != std::string::npos);
}

TEST_CASE("the job page and diagnosis.md show the differential with probabilities") {
  Model m = TestModel();
  DiagnoseRun run;
  run.diagnosis = Run(std::string(kModelQpLinkLocal) + std::string(kModelRetry12), m);
  const std::string html = JobDiagnosisHtml(run, nullptr);
  CHECK(html.find("<h2>Differential</h2>") != std::string::npos);
  CHECK(html.find("<td>retry_exceeded_network</td>") != std::string::npos);
  CHECK(html.find("To tell gid_index from retry_exceeded_network") != std::string::npos);
  const std::string md = JobDiagnosisMarkdown(run);
  CHECK(md.find("## Differential") != std::string::npos);
  CHECK(md.find("2. `retry_exceeded_network` 0.") != std::string::npos);
}

TEST_CASE("a timeout among the process group's first collectives is a feature of its own") {
  auto timeout = [](std::string_view seq) {
    return "[E ProcessGroupNCCL.cpp:828] [Rank 7] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=" +
           std::string(seq) +
           ", OpType=BROADCAST, Timeout(ms)=600000) ran for 606142 milliseconds before timing "
           "out.\n";
  };
  CHECK(HasFeature(timeout("1"), "struct:timeout_early_seq"));
  CHECK(HasFeature(timeout("5"), "struct:timeout_early_seq"));
  CHECK_FALSE(HasFeature(timeout("6"), "struct:timeout_early_seq"));
  CHECK_FALSE(HasFeature(timeout("70426"), "struct:timeout_early_seq"));
  CHECK_FALSE(HasFeature(timeout("0x1"), "struct:timeout_early_seq"));
  // A description wrapped onto a line of its own counts too.
  CHECK(HasFeature("WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1,\n",
                   "struct:timeout_early_seq"));
}

TEST_CASE("a cause citing the very lines an earlier one cited says so instead of repeating them") {
  Diagnosis d;
  const EvidenceLine a{"job.log", 1, "[Rank 1] Watchdog caught collective operation timeout", ""};
  const EvidenceLine b{"job.log", 4, "terminate called after throwing an instance of", ""};
  const EvidenceLine c{"job.log", 9, "NET/IB : Got completion from peer with status=12", ""};
  auto cause = [](const char* category, double p, std::vector<EvidenceLine> lines) {
    Cause x;
    x.category = category;
    x.probability = p;
    x.evidence = std::move(lines);
    return x;
  };
  d.causes.push_back(cause("straggler_or_slow_rank", 0.6, {a, b}));
  d.causes.push_back(cause("desync_collective_mismatch", 0.3, {b, a}));
  d.causes.push_back(cause("retry_exceeded_network", 0.1, {a, c}));
  const std::string text = DiagnosisText(d, {}, /*explain=*/false);
  CHECK(text.find("job.log:1  [Rank 1] Watchdog") != std::string::npos);  // cause 1 in full
  CHECK(text.find("evidence: the same 2 line(s) as cause 1 (straggler_or_slow_rank)") !=
        std::string::npos);
  CHECK(text.find("job.log:9  NET/IB") != std::string::npos);  // cause 3: other lines, in full
  CHECK(text.find("as cause 2") == std::string::npos);
}
