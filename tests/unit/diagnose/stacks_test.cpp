// Python stacks (faulthandler, py-spy) parsed from literal text, and the cross-rank rule that
// names the rank whose main thread is elsewhere while the others wait.
#include <catch2/catch.hpp>

#include "common/file_reader.h"
#include "diagnose/py_stacks.h"
#include "diagnose/stacks_analysis.h"

using namespace sl;
using namespace sl::diagnose;

namespace {

// What safe-launch's sitecustomize + faulthandler wrote for rank 1 of the torch 1.13 Gloo job
// (tests/integration/hang/stall_job.py): its main thread in time.sleep.
constexpr std::string_view kRank1Sleeping =
    "# safe-launch python stacks: pid=4243 rank=1 main_thread=0x00007f602aa1db80\n"
    "Thread 0x00007f6029bdc6c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
    "\n"
    "Current thread 0x00007f602aa1db80 (most recent call first):\n"
    "  File \"/home/alice/job/stall_job.py\", line 29 in <module>\n";

// Rank 0 of the same job: in all_reduce (torch 1.13's distributed_c10d.py).
constexpr std::string_view kRank0AllReduce =
    "# safe-launch python stacks: pid=4242 rank=0 main_thread=0x00007f11aa000740\n"
    "Current thread 0x00007f11aa000740 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1536 "
    "in all_reduce\n"
    "  File \"/home/alice/job/stall_job.py\", line 31 in <module>\n";

RankStacks Rank(int rank, std::string_view text, std::string wchan = "") {
  RankStacks r;
  r.rank = rank;
  r.file = "stacks/rank_" + std::to_string(rank) + ".py.txt";
  r.stacks = ParsePyStacks(text);
  r.wchan = std::move(wchan);
  return r;
}

std::string InCollective(int rank, std::string_view op, int line = 31) {
  return "Current thread 0x00007f11aa000740 (most recent call first):\n"
         "  File \"/venv/lib/python3.12/site-packages/torch/distributed/c10d_logger.py\", line 81 "
         "in wrapper\n"
         "  File \"/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py\", "
         "line 2806 in " +
         std::string(op) + "\n  File \"/home/alice/train.py\", line " + std::to_string(line) +
         " in step\n  File \"/home/alice/train.py\", line 50 in <module>\n# rank " +
         std::to_string(rank) + "\n";
}

const CauseClaim* Find(const std::vector<CauseClaim>& claims, std::string_view rule) {
  for (const auto& c : claims) {
    if (c.rule == rule) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("faulthandler's dump is read into threads, frames and the header's main thread") {
  PyStacks s = ParsePyStacks(kRank1Sleeping);
  CHECK(s.format == "faulthandler");
  CHECK(s.pid == 4243);
  CHECK(s.rank == 1);
  REQUIRE(s.threads.size() == 2);
  CHECK(s.threads[0].frames.size() == 2);
  CHECK(s.threads[0].frames[0].function == "wait");
  CHECK(s.threads[0].frames[0].line == 324);
  CHECK_FALSE(s.threads[0].main);
  CHECK(s.threads[1].current);
  CHECK(s.threads[1].main);
  const PyThread* m = s.Main();
  REQUIRE(m != nullptr);
  REQUIRE(m->frames.size() == 1);
  CHECK(m->frames[0].file == "/home/alice/job/stall_job.py");
  CHECK(m->frames[0].line == 29);
  CHECK(m->frames[0].function == "<module>");
  CHECK(m->frames[0].line_no == 7);
}

TEST_CASE("without a header the main thread is the one whose outermost frame is <module>") {
  PyStacks s = ParsePyStacks(
      "Current thread 0x00007f6029bdc6c0 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
      "\n"
      "Thread 0x00007f602aa1db80 (most recent call first):\n"
      "  File \"/home/alice/train.py\", line 12 in load\n"
      "  File \"/home/alice/train.py\", line 40 in <module>\n");
  REQUIRE(s.Main() != nullptr);
  CHECK(s.Main()->frames.front().function == "load");
}

TEST_CASE("a second dump appended to the same file replaces the first") {
  std::string twice = std::string(kRank1Sleeping) +
                      "Current thread 0x00007f602aa1db80 (most recent call first):\n"
                      "  File \"/home/alice/train.py\", line 77 in save_checkpoint\n"
                      "  File \"/home/alice/train.py\", line 90 in <module>\n";
  PyStacks s = ParsePyStacks(twice);
  REQUIRE(s.threads.size() == 1);
  CHECK(s.Main()->frames.front().function == "save_checkpoint");
}

TEST_CASE("py-spy's dump is read too: MainThread by name, native frames marked") {
  PyStacks s = ParsePyStacks(
      "Process 4242: /usr/bin/python3 train.py --lr 3e-4\n"
      "Python v3.11.2 (/usr/bin/python3.11)\n"
      "\n"
      "Thread 0x7F3A1C2FD640 (active): \"Thread-1\"\n"
      "    run (threading.py:975)\n"
      "Thread 4242 (idle): \"MainThread\"\n"
      "    clock_nanosleep (libc.so.6)\n"
      "    <module> (train.py:29)\n");
  CHECK(s.format == "py-spy");
  CHECK(s.pid == 4242);
  REQUIRE(s.threads.size() == 2);
  const PyThread* m = s.Main();
  REQUIRE(m != nullptr);
  CHECK(m->name == "MainThread");
  REQUIRE(m->frames.size() == 2);
  CHECK(m->frames[0].native);
  CHECK(m->frames[0].function == "clock_nanosleep");
  CHECK(m->frames[1].file == "train.py");
  CHECK(m->frames[1].line == 29);
  CHECK(NormalThreadId("0x00007F3A1C2FD640") == NormalThreadId("0x7f3a1c2fd640"));
}

TEST_CASE("the rank whose main thread is not in the collective the other waits in is named") {
  auto claims =
      StacksClaims({Rank(0, kRank0AllReduce), Rank(1, kRank1Sleeping, "hrtimer_nanosleep")});
  const CauseClaim* c = Find(claims, "stacks.main_thread_elsewhere");
  REQUIRE(c != nullptr);
  CHECK(c->source == "stacks");
  CHECK(c->category == "straggler_or_slow_rank");
  CHECK(c->confidence >= 0.7);
  CHECK(c->entity.rank == "1");
  CHECK_THAT(c->why, Catch::Contains("stall_job.py:29 in <module> (sleep)"));
  CHECK_THAT(c->why, Catch::Contains("all_reduce"));
  REQUIRE_FALSE(c->evidence.empty());
  CHECK(c->evidence[0].file == "stacks/rank_1.py.txt");
  CHECK(c->evidence[0].line == 7);
  CHECK_THAT(c->evidence[0].text, Catch::Contains("line 29 in <module>"));
  CHECK(Find(claims, "stacks.all_wait_in_same_collective") == nullptr);
}

TEST_CASE("what the late rank does is said from its frames: checkpoint, data loader") {
  const std::string saving =
      "Current thread 0x1 (most recent call first):\n"
      "  File \"/venv/lib/python3.12/site-packages/torch/serialization.py\", line 650 in _save\n"
      "  File \"/venv/lib/python3.12/site-packages/torch/serialization.py\", line 628 in save\n"
      "  File \"/home/alice/train.py\", line 88 in <module>\n";
  const std::string loading =
      "Current thread 0x1 (most recent call first):\n"
      "  File \"/venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py\", line 1295 "
      "in _get_data\n"
      "  File \"/home/alice/train.py\", line 44 in <module>\n";
  auto claims = StacksClaims({Rank(0, InCollective(0, "all_reduce")), Rank(1, saving),
                              Rank(2, InCollective(2, "all_reduce")), Rank(3, loading)});
  const CauseClaim* c = Find(claims, "stacks.main_thread_elsewhere");
  REQUIRE(c != nullptr);
  CHECK(c->entity.rank == "1, 3");
  CHECK_THAT(c->why,
             Catch::Contains("rank 1 at /home/alice/train.py:88 in <module> (checkpoint save)"));
  CHECK_THAT(c->why, Catch::Contains("(data loading)"));
}

TEST_CASE("every rank waiting in the same collective and nobody elsewhere points to the fabric") {
  auto claims =
      StacksClaims({Rank(0, InCollective(0, "all_reduce")), Rank(1, InCollective(1, "all_reduce")),
                    Rank(2, InCollective(2, "all_reduce", 35))});
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].rule == "stacks.all_wait_in_same_collective");
  CHECK(claims[0].category == "retry_exceeded_network");
  CHECK(claims[0].confidence < 0.5);
  CHECK(claims[0].entity.rank == "0-2");
}

TEST_CASE("ranks waiting in different collectives are a desync, the minority named") {
  auto claims =
      StacksClaims({Rank(0, InCollective(0, "all_reduce")), Rank(1, InCollective(1, "broadcast")),
                    Rank(2, InCollective(2, "all_reduce"))});
  const CauseClaim* c = Find(claims, "stacks.different_collectives");
  REQUIRE(c != nullptr);
  CHECK(c->category == "desync_collective_mismatch");
  CHECK(c->entity.rank == "1");
  CHECK(Find(claims, "stacks.all_wait_in_same_collective") == nullptr);
}

TEST_CASE("one rank, or nobody in a collective, gives no claim") {
  CHECK(StacksClaims({Rank(0, kRank0AllReduce)}).empty());
  CHECK(StacksClaims({Rank(0, kRank1Sleeping), Rank(1, kRank1Sleeping)}).empty());
}

TEST_CASE("the main thread's wchan is taken from the stacks collector's /proc section") {
  constexpr std::string_view proc =
      "# /proc/4243/task/*/{stat,wchan,stack}\n"
      "## tid 4250\nstat: 4250 (python3) S\nwchan: futex_wait_queue\n\n"
      "## tid 4243\nstat: 4243 (python3) S\nwchan: hrtimer_nanosleep\n[<0>] x\n";
  CHECK(WchanOf(proc, 4243) == "hrtimer_nanosleep");
  CHECK(WchanOf(proc, 4250) == "futex_wait_queue");
  CHECK(WchanOf(proc, 1) == "");
}

TEST_CASE("a run root's bundles give each rank's stacks, the faulthandler file first") {
  MemFileReader fs;
  fs.AddFile("/root/n1/hang-n1-20261201T100000Z/manifest.json", R"({"host": "n1"})");
  fs.AddFile("/root/n1/hang-n1-20261201T100000Z/stacks/rank_0_pid_4242.py.txt",
             std::string(kRank0AllReduce));
  fs.AddFile("/root/n1/hang-n1-20261201T100000Z/stacks/rank_0_pid_4242.txt",
             "# /proc/4242/task/*/{stat,wchan,stack}\n## tid 4242\nstat: x\nwchan: futex\n");
  fs.AddFile("/root/n2/hang-n2-20261201T100001Z/manifest.json", R"({"host": "n2"})");
  fs.AddFile("/root/n2/hang-n2-20261201T100001Z/stacks/rank_1_pid_4243.txt",
             "# py-spy dump --native --pid 4243 (exit 0)\n"
             "Thread 4243 (idle): \"MainThread\"\n    <module> (stall_job.py:29)\n\n"
             "# /proc/4243/task/*/{stat,wchan,stack}\n## tid 4243\nstat: x\n"
             "wchan: hrtimer_nanosleep\n");
  // An incomplete bundle (.partial) is not read.
  fs.AddFile("/root/n2/.hang-n2-20261201T100009Z.partial/manifest.json", R"({"host": "n2"})");
  fs.AddFile("/root/n2/.hang-n2-20261201T100009Z.partial/stacks/rank_1_pid_4243.py.txt",
             std::string(kRank0AllReduce));
  auto ranks = ReadBundleStacks({"/root"}, fs);
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].rank == 0);
  CHECK(ranks[0].node == "n1");
  CHECK(ranks[0].stacks.format == "faulthandler");
  CHECK(ranks[0].file == "/root/n1/hang-n1-20261201T100000Z/stacks/rank_0_pid_4242.py.txt");
  CHECK(ranks[0].wchan == "futex");
  CHECK(ranks[1].rank == 1);
  CHECK(ranks[1].node == "n2");
  CHECK(ranks[1].stacks.format == "py-spy");
  CHECK(ranks[1].wchan == "hrtimer_nanosleep");
  auto claims = StacksClaims(ranks);
  const CauseClaim* c = Find(claims, "stacks.main_thread_elsewhere");
  REQUIRE(c != nullptr);
  CHECK(c->entity.rank == "1");
  CHECK(c->entity.node == "n2");
}

// Stacks pasted into a log (a report): py-spy dump's sections, or one dump.
namespace {
constexpr std::string_view kPastedTwo =
    "some output before\n"
    "Process 101: python train.py\n"
    "Thread 101 (idle): \"MainThread\"\n"
    "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
    "    <module> (train.py:120)\n"
    "Process 102: python train.py\n"
    "Thread 102 (idle): \"MainThread\"\n"
    "    __next__ (torch/utils/data/dataloader.py:633)\n"
    "    <module> (train.py:118)\n";
}  // namespace

TEST_CASE("py-spy sections pasted into a log are one process each, with the log's line numbers") {
  auto ranks = StacksInLog(kPastedTwo, "report.txt");
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].pasted);
  CHECK(ranks[0].pid == 101);
  CHECK(ranks[1].pid == 102);
  CHECK(ranks[1].file == "report.txt");
  REQUIRE(!ranks[1].stacks.threads.empty());
  CHECK(ranks[1].stacks.threads[0].frames.at(0).line_no == 8);  // the log's line 8
}

TEST_CASE("pasted stacks of two processes name the one outside the collective by its pid") {
  auto claims = PastedStacksClaims(kPastedTwo, "report.txt");
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].rule == "stacks.main_thread_elsewhere");
  CHECK(claims[0].category == "straggler_or_slow_rank");
  CHECK(claims[0].why.find("process 102") != std::string::npos);
  CHECK(claims[0].why.find("rank") == std::string::npos);  // a paste does not say the rank
  CHECK(claims[0].entity.rank.empty());
}

TEST_CASE(
    "one pasted dump: busy in a data loader is a weak straggler, waiting in a collective is "
    "nothing") {
  const std::string loader =
      "Thread 0x7FA6E7C01740 (idle): \"MainThread\"\n"
      "    get (queue.py:170)\n"
      "    __next__ (fairseq/data/iterators.py:648)\n"
      "    train (fairseq_cli/train.py:274)\n";
  auto claims = PastedStacksClaims(loader, "log.txt");
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].rule == "stacks.pasted_main_thread_busy");
  CHECK(claims[0].category == "straggler_or_slow_rank");
  CHECK(claims[0].confidence < 0.5);
  CHECK(claims[0].evidence.size() >= 2);
  const std::string waiting =
      "Thread 7 (idle): \"MainThread\"\n"
      "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
      "    <module> (train.py:120)\n";
  CHECK(PastedStacksClaims(waiting, "log.txt").empty());
  CHECK(StacksInLog("NCCL WARN Net : Connection closed by remote peer\n", "log.txt").empty());
}
