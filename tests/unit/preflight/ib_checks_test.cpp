// Across the ib.* checks: facts gathered once, judged by every check; cases no single check owns.
#include <catch2/catch.hpp>

#include "tests/unit/preflight/checks/ib_check_fixture.h"

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
