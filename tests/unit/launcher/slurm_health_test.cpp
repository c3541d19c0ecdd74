#include "launcher/slurm_health.h"

#include <catch2/catch.hpp>
#include <ctime>

using namespace sl;
using namespace sl::launcher;

TEST_CASE("a drain reason names the check and strips what would break scontrol or sinfo") {
  CHECK(DrainReason("os.memlock", "memlock \"64 KiB\"\nis 'low'\\") ==
        "safe-launch: os.memlock: memlock 64 KiB is low");
  CHECK(DrainReason("ib.port.state", "mlx5_0:1 is DOWN", 2) ==
        "safe-launch: ib.port.state: mlx5_0:1 is DOWN (+2 more)");
}

TEST_CASE("a long drain reason is cut on a UTF-8 boundary below what slurmdbd keeps") {
  std::string message;
  for (int i = 0; i < 100; ++i) message += "\xc3\xa9";  // é, two bytes each
  const std::string r = DrainReason("kernel.log", message, 3);
  CHECK(r.size() <= kDrainReasonMaxBytes);
  CHECK(kDrainReasonMaxBytes < 255);
  CHECK(r.substr(r.size() - 13) == "... (+3 more)");
  const std::string body = r.substr(0, r.size() - 13);
  // Whole characters only: the body ends after a complete two-byte sequence.
  CHECK((body.size() - std::string("safe-launch: kernel.log: ").size()) % 2 == 0);
}

TEST_CASE("a node record from scontrol -o gives its state and reason without user and time") {
  const char* drained =
      "NodeName=vm-n1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 "
      "Partitions=debug  BootTime=2026-12-01T07:20:35 CapWatts=n/a ExtSensorsTemp=n/s "
      "Reason=safe-launch: exp: x [root@2026-12-01T13:30:09]\n";
  SlurmNode n = ParseSlurmNode(drained);
  CHECK(n.state == "IDLE+DRAIN");
  CHECK(n.reason == "safe-launch: exp: x");
  CHECK(n.out_of_service);

  SlurmNode idle = ParseSlurmNode("NodeName=vm State=IDLE ThreadsPerCore=1 ExtSensorsTemp=n/s\n");
  CHECK(idle.state == "IDLE");
  CHECK(idle.reason.empty());
  CHECK_FALSE(idle.out_of_service);
  CHECK(ParseSlurmNode("NodeName=a State=DOWN* Reason=Not responding [slurm@2026]").out_of_service);
  CHECK(ParseSlurmNode("NodeName=a State=MIXED+FAIL Reason=x").out_of_service);
  CHECK(ParseSlurmNode("").state.empty());
}

TEST_CASE("a job's StartTime is read as local time and Unknown gives none") {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 11;
  tm.tm_mday = 1;
  tm.tm_hour = 13;
  tm.tm_min = 32;
  tm.tm_sec = 10;
  tm.tm_isdst = -1;
  const auto expected = static_cast<std::int64_t>(std::mktime(&tm));
  auto t = ParseJobStartTime("JobId=1 JobState=RUNNING StartTime=2026-12-01T13:32:10 EndTime=x");
  REQUIRE(t);
  CHECK(*t == expected);
  CHECK_FALSE(ParseJobStartTime("JobId=1 StartTime=Unknown EndTime=Unknown"));
  CHECK_FALSE(ParseJobStartTime("JobId=1 JobState=PENDING"));
}

TEST_CASE("warnings never drain before a job, the epilog drains on kernel events of the job") {
  Finding warn_xid =
      Coded(MakeFinding("kernel.log", "gpu0", Outcome::kWarn, "Xid 13"), "kernel.log/xid");
  Finding corrected = Coded(MakeFinding("kernel.log", "0000:00:01.0", Outcome::kWarn, "AER"),
                            "kernel.log/aer_corrected");
  Finding fail = Coded(MakeFinding("os.memlock", "node", Outcome::kFail, "low"), "x");
  Finding error = MakeFinding("kernel.log", "node", Outcome::kError, "unreadable");
  CHECK_FALSE(DrainsNode(warn_xid, false));
  CHECK(DrainsNode(warn_xid, true));
  CHECK_FALSE(DrainsNode(corrected, true));
  CHECK(DrainsNode(fail, false));
  CHECK(DrainsNode(fail, true));
  CHECK_FALSE(DrainsNode(error, false));
  CHECK_FALSE(DrainsNode(error, true));
  fail.waived = true;
  CHECK_FALSE(DrainsNode(fail, false));
}

TEST_CASE("a drain reason never carries an environment value: the code's meaning instead") {
  Finding port = MakeFinding("ib.port.state", "mlx5_3:1", Outcome::kFail, "DOWN/Polling");
  port.With("/sys/class/infiniband/mlx5_3/ports/1/state", "1: DOWN");
  CHECK(ReasonText(port) == "mlx5_3:1: DOWN/Polling");
  Finding named = MakeFinding("kernel.log", "gpu0", Outcome::kFail, "Xid 79 on gpu0");
  CHECK(ReasonText(named) == "Xid 79 on gpu0");
  Finding env = Coded(MakeFinding("env.nccl", "NCCL_IB_HCA", Outcome::kFail,
                                  "NCCL_IB_HCA=secret-value-mlx5_9 names no device"),
                      "env.nccl/deprecated_name");
  env.With("NCCL_IB_HCA", "secret-value-mlx5_9");
  const std::string text = ReasonText(env);
  CHECK(text.find("secret-value") == std::string::npos);
  CHECK(text.rfind("NCCL_IB_HCA: ", 0) == 0);
  CHECK(text.size() > std::string("NCCL_IB_HCA: ").size());
}
