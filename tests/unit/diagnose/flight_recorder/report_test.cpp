#include "diagnose/flight_recorder/report.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace sl::diagnose::fr;

namespace {
std::string Gen(const std::string& name) { return std::string(FR_GEN_DIR) + "/" + name + "/dumps"; }
}  // namespace

TEST_CASE("the JSON report has the diagnosis schema, causes best first, evidence with files") {
  auto a = AnalyzeFlightRecorder({Gen("missing5")}, {});
  REQUIRE(a.ok());
  auto j = DiagnosisJson(*a, FlightRecorderCauses(*a));
  CHECK(j["schema"] == "safe-launch.diagnosis/1");
  CHECK(j["verdict"] == "straggler_or_slow_rank");
  REQUIRE(j["causes"].size() >= 1);
  const auto& c = j["causes"][0];
  CHECK(c["category"] == "straggler_or_slow_rank");
  CHECK(c["entity"] == "rank 5");
  CHECK(c["confidence"].get<double>() > 0.5);
  REQUIRE(!c["evidence"].empty());
  CHECK(c["evidence"][0]["file"].get<std::string>().find("fr_rank_5") != std::string::npos);
  CHECK(c["evidence"][0].contains("line"));
  CHECK(!c["fix"].get<std::string>().empty());
  CHECK(j["flight_recorder"]["ranks"].size() == 8);
  CHECK(j["flight_recorder"]["ranks"][5]["last"]["0"].contains("completed"));
}

TEST_CASE("the text report starts with the verdict and names the fix and the Python frame") {
  auto a = AnalyzeFlightRecorder({Gen("op0")}, {});
  REQUIRE(a.ok());
  std::string t = DiagnosisText(*a, FlightRecorderCauses(*a));
  CHECK_THAT(t, Catch::Contains("VERDICT: desync_collective_mismatch"));
  CHECK_THAT(t, Catch::Contains("fix: "));
  CHECK_THAT(t, Catch::Contains("/workspace/train.py:57 in train_step"));
}

TEST_CASE("diagnosis.html is self-contained and holds the verdict, the grid and the node table") {
  auto a = AnalyzeFlightRecorder({Gen("missing5")}, {});
  REQUIRE(a.ok());
  std::string h = DiagnosisHtml(*a, FlightRecorderCauses(*a));
  CHECK_THAT(h, Catch::Contains("Verdict: straggler_or_slow_rank"));
  CHECK_THAT(h, Catch::Contains("class=\"grid\""));
  CHECK_THAT(h, Catch::Contains("class=\"c absent\""));
  CHECK_THAT(h, Catch::Contains("class=\"c wait\""));
  CHECK_THAT(h, Catch::Contains("class=\"nodes\""));
  CHECK_THAT(h, Catch::Contains("<details>"));
  CHECK_THAT(h, !Catch::Contains("http://") && !Catch::Contains("https://") &&
                    !Catch::Contains("<script"));
}
