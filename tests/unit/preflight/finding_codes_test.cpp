// The finding-code catalog: unique codes, every finding the checks give on the fixture trees has a
// catalogued code allowing its outcome, and the manual lists every code (they cannot drift).
#include "preflight/finding_codes.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "preflight/check.h"
#include "preflight/runner.h"
#include "tests/unit/test_paths.h"

using namespace sl;
using namespace sl::preflight;

TEST_CASE("finding codes are unique and named <check id>/<condition>") {
  std::set<std::string> ids, seen;
  for (const auto& c : Registry()) ids.insert(c.id);
  ids.insert("preflight");  // the runner's own condition (a check that threw)
  for (const FindingCode& c : FindingCodes()) {
    INFO(c.code);
    CHECK(seen.insert(std::string(c.code)).second);
    const std::size_t slash = c.code.find('/');
    REQUIRE(slash != std::string_view::npos);
    CHECK(ids.count(std::string(c.code.substr(0, slash))) == 1);
    CHECK(c.code.find('/', slash + 1) == std::string_view::npos);
    CHECK_FALSE(c.message.empty());
  }
  // Every registered check has at least one code.
  for (const auto& id : ids) {
    bool any = false;
    for (const FindingCode& c : FindingCodes()) any = any || c.code.rfind(id + "/", 0) == 0;
    CHECK(any);
  }
}

TEST_CASE("every finding on every fixture tree has a catalogued code that allows its outcome") {
  // Several environments so that the env-dependent conditions are reached too.
  const std::vector<Environment> envs = {
      {},
      {{"NCCL_IB_HCA", "=mlx5_0:1"}, {"NCCL_SOCKET_IFNAME", "nosuchif"}, {"NCCL_FOO", "1"}},
      {{"NCCL_IB_GID_INDEX", "0"}, {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_IB_DISABLE", "x"}},
  };
  int trees = 0, findings = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SL_FIXTURES_DIR)) {
    if (!std::filesystem::is_directory(entry.path() / "proc") &&
        !std::filesystem::is_directory(entry.path() / "sys")) {
      continue;
    }
    ++trees;
    for (const auto& env : envs) {
      PreflightOptions options;
      options.sysroot = entry.path().string();
      auto report = RunPreflight(options, env);
      REQUIRE(report.ok());
      for (const Finding& f : report->findings) {
        ++findings;
        INFO(entry.path().filename().string() << ": " << f.check_id << " " << f.entity << " "
                                              << OutcomeName(f.outcome) << ": " << f.message);
        REQUIRE_FALSE(f.code.empty());
        const FindingCode* c = FindFindingCode(f.code);
        REQUIRE(c != nullptr);
        CHECK(c->Allows(f.outcome));
        CHECK(f.code.rfind(f.check_id + "/", 0) == 0);
      }
    }
  }
  CHECK(trees >= 12);
  CHECK(findings > 300);
}

TEST_CASE("the manual lists every finding code") {
  std::ifstream in(SL_FIXTURES_DIR + "/../../doc/manual.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string manual = ss.str();
  for (const FindingCode& c : FindingCodes()) {
    INFO(c.code);
    CHECK(manual.find("`" + std::string(c.code) + "`") != std::string::npos);
  }
}

TEST_CASE("the JSON report and -v text carry the finding code") {
  PreflightOptions options;
  options.sysroot = SL_FIXTURES_DIR + "/memlock-64k";
  options.only = {"os.memlock"};
  auto report = RunPreflight(options, {});
  REQUIRE(report.ok());
  auto j = ReportToJson(*report);
  CHECK(j["findings"][0]["code"] == "os.memlock/soft_below_min");
  CHECK(RenderText(*report, true, false).find("code: os.memlock/soft_below_min") !=
        std::string::npos);
  CHECK(RenderText(*report, false, false).find("code:") == std::string::npos);
}

TEST_CASE("a port NCCL would use with no link partner is ib.port.state/no_link_partner") {
  PreflightOptions options;
  options.sysroot = SL_FIXTURES_DIR + "/ib-port-down";  // mlx5_3: DOWN/Polling
  options.only = {"ib.port.state"};
  auto report = RunPreflight(options, {});
  REQUIRE(report.ok());
  int found = 0;
  for (const Finding& f : report->findings) {
    if (f.entity != "mlx5_3:1") continue;
    ++found;
    CHECK(f.outcome == Outcome::kFail);
    CHECK(f.code == "ib.port.state/no_link_partner");
  }
  CHECK(found == 1);
}

TEST_CASE("the summary line counts a waived fail as waived, not as a fail") {
  PreflightOptions options;
  options.sysroot = SL_FIXTURES_DIR + "/memlock-64k";
  options.only = {"os.memlock"};
  options.waive = {"os.memlock"};
  auto report = RunPreflight(options, {});
  REQUIRE(report.ok());
  const std::string text = RenderText(*report, false, false);
  CHECK(text.find("WAIVED") != std::string::npos);
  CHECK(text.find(" 0 fail,") != std::string::npos);
  CHECK(text.find("1 waived in") != std::string::npos);
}
