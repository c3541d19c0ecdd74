// kernel.log: its pass, warn, fail and error cases (preflight/checks/kernel_log.cpp).
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/host_check_fixture.h"

TEST_CASE("kernel.log passes on a clean boot log") {
  auto r = RunOnFixture("memlock-64k", CheckKernelLog);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].outcome == Outcome::kPass);
  CHECK(Has(r.findings[0].message, "6 kernel log records"));
}

TEST_CASE("kernel.log flags the corpus' mlx5 failures, flaps and the fatal Xid 79") {
  auto r = RunOnFixture("kernel-errors", CheckKernelLog);
  const Finding* mkey = ForEntity(r.findings, "0000:41:00.0");
  REQUIRE(mkey);
  CHECK(mkey->outcome == Outcome::kWarn);
  CHECK(Has(mkey->message, "CREATE_MKEY"));
  CHECK(Has(mkey->message, "353031 ratelimited"));
  const Finding* mr = ForEntity(r.findings, "mlx5_0");
  REQUIRE(mr);
  CHECK(Has(mr->message, "6 times"));
  const Finding* flap = ForEntity(r.findings, "mlx5_5:1");
  REQUIRE(flap);
  CHECK(flap->outcome == Outcome::kWarn);
  CHECK(Has(flap->message, "2 times"));
  const Finding* xid = ForEntity(r.findings, "0000:09:00.0");
  REQUIRE(xid);
  CHECK(xid->outcome == Outcome::kFail);
  CHECK(Has(xid->message, "Xid 79"));
  CHECK(Has(xid->evidence.at(0).value, "[1084456.074562] NVRM: Xid"));
  // "fallen off the bus" of the same GPU is folded into the Xid.
  CHECK(std::count_if(r.findings.begin(), r.findings.end(),
                      [](const Finding& f) { return f.entity == "0000:09:00.0"; }) == 1);
  // mlx5_0's boot-time "Link ACTIVE" alone is not a flap.
  CHECK(ForEntity(r.findings, "mlx5_0:1") == nullptr);
  // dmesg_nvrm_fallen_off_bus_NVSentinel-155.txt: lost without an Xid line.
  const Finding* lost = ForEntity(r.findings, "0000:b3:00.0");
  REQUIRE(lost);
  CHECK(lost->outcome == Outcome::kFail);
  CHECK(Has(lost->message, "fell off the bus"));
  // dmesg_pcie_aer_corrected_returnn-1486.txt: two corrected errors on one root port.
  const Finding* aer = ForEntity(r.findings, "0000:00:03.0");
  REQUIRE(aer);
  CHECK(aer->outcome == Outcome::kWarn);
  CHECK(Has(aer->message, "2 times"));
}

TEST_CASE("kernel.log honours --since") {
  RootedFileReader fs(Fixture("kernel-errors"));
  auto r = RunCheck(fs, CheckKernelLog, {}, {}, 1084456000000);
  CHECK(ForEntity(r.findings, "0000:41:00.0") == nullptr);
  CHECK(ForEntity(r.findings, "0000:09:00.0") != nullptr);
}

TEST_CASE("kernel.log: garbage lines are an error naming the file, missing log too") {
  auto r = RunOnFixture("host-broken", CheckKernelLog);
  auto errors = With(r.findings, Outcome::kError);
  REQUIRE(errors.size() == 1);
  CHECK(Has(errors[0].message, "host-broken/dev/kmsg"));
  CHECK(Has(errors[0].message, "line 3"));
  MemFileReader fs;
  auto missing = RunCheck(fs, CheckKernelLog);
  CHECK(missing.findings.at(0).outcome == Outcome::kError);
}

TEST_CASE("kernel.log: a log larger than what is read is an error saying how much was checked") {
  // Three records; the limit cuts the third one in the middle.
  const std::string r1 = "6,1,1000000,-;mlx5_core 0000:41:00.0: first\n";
  const std::string r2 = "6,2,2000000,-;eth0: Link up\n";
  const std::string r3 = "6,3,3000000,-;NVRM: Xid (PCI:0000:41:00): 79, GPU has fallen off\n";
  MemFileReader fs;
  fs.AddFile("/dev/kmsg", r1 + r2 + r3);
  GatherOptions cut;
  cut.kmsg_max_bytes = r1.size() + r2.size() + 10;
  NodeFacts facts = GatherNodeFacts(fs, cut);
  CHECK(facts.host.kmsg_truncated);
  CHECK(facts.host.kmsg_bytes == r1.size() + r2.size());  // whole records only
  Environment env;
  Thresholds th;
  CheckContext ctx{facts, env, th};
  auto findings = CheckKernelLog(ctx);
  auto errors = With(findings, Outcome::kError);
  REQUIRE(errors.size() == 1);  // the cut record is not reported as a malformed line
  CHECK(errors[0].code == "kernel.log/truncated");
  CHECK(Has(errors[0].message, "only its oldest 2 records (up to 2.000000 s after boot)"));
  REQUIRE(errors[0].evidence.size() == 1);
  CHECK(errors[0].evidence[0].value ==
        "read " + std::to_string(r1.size() + r2.size()) + " bytes, 2 records; the log went on");
  CHECK(Has(errors[0].next_step, "dmesg"));
  CHECK(With(findings, Outcome::kFail).empty());  // the Xid 79 was past the cut

  // The whole log fits: no truncation finding, and the Xid is seen.
  NodeFacts whole = GatherNodeFacts(fs);
  CHECK_FALSE(whole.host.kmsg_truncated);
  CheckContext ctx2{whole, env, th};
  auto all = CheckKernelLog(ctx2);
  CHECK(With(all, Outcome::kError).empty());
  CHECK_FALSE(With(all, Outcome::kFail).empty());
}

namespace {
// The live node with kernel.dmesg_restrict=1 as seen by a non-root user: /dev/kmsg refuses.
class DeniedKmsgReader final : public FileReader {
 public:
  explicit DeniedKmsgReader(const MemFileReader& inner) : inner_(inner) {}
  Result<std::string> ReadFile(std::string_view path, std::size_t max) const override {
    if (path == "/dev/kmsg") {
      return MakeError("cannot open: Operation not permitted", "/dev/kmsg",
                       "run as a user allowed to read it (or as root)");
    }
    return inner_.ReadFile(path, max);
  }
  Result<std::vector<std::string>> ListDir(std::string_view p) const override {
    return inner_.ListDir(p);
  }
  Result<std::string> ReadLink(std::string_view p) const override { return inner_.ReadLink(p); }
  bool Exists(std::string_view p) const override { return inner_.Exists(p); }
  bool IsDir(std::string_view p) const override { return inner_.IsDir(p); }
  Result<std::uint64_t> FsSizeBytes(std::string_view p) const override {
    return inner_.FsSizeBytes(p);
  }
  std::string HostPath(std::string_view p) const override { return std::string(p); }
  bool IsSysroot() const override { return false; }

 private:
  const MemFileReader& inner_;
};
}  // namespace

TEST_CASE("kernel.log: a log refused by dmesg_restrict is an error with the fix") {
  MemFileReader mem;
  mem.AddFile("/proc/sys/kernel/dmesg_restrict", "1\n");
  DeniedKmsgReader fs(mem);
  NodeFacts facts = GatherNodeFacts(fs);
  Environment env;
  Thresholds th;
  CheckContext ctx{facts, env, th};
  auto findings = CheckKernelLog(ctx);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].outcome == Outcome::kError);
  CHECK(Has(findings[0].next_step, "kernel.dmesg_restrict=1"));
  CHECK(Has(findings[0].next_step, "sysctl -w kernel.dmesg_restrict=0"));
}
