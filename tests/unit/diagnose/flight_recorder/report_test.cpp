#include "diagnose/flight_recorder/report.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/unit/diagnose/flight_recorder/fr_paths.h"

using namespace sl::diagnose::fr;

namespace {
std::string GenDumps(const std::string& name) { return FR_GEN_DIR + "/" + name + "/dumps"; }
}  // namespace

TEST_CASE("the JSON report has the diagnosis schema, causes best first, evidence with files") {
  auto a = AnalyzeFlightRecorder({GenDumps("missing5")}, {});
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
  auto a = AnalyzeFlightRecorder({GenDumps("op0")}, {});
  REQUIRE(a.ok());
  std::string t = DiagnosisText(*a, FlightRecorderCauses(*a));
  CHECK_THAT(t, Catch::Contains("VERDICT: desync_collective_mismatch"));
  CHECK_THAT(t, Catch::Contains("fix: "));
  CHECK_THAT(t, Catch::Contains("/workspace/train.py:57 in train_step"));
}

TEST_CASE("diagnosis.html is self-contained and holds the verdict, the grid and the node table") {
  auto a = AnalyzeFlightRecorder({GenDumps("missing5")}, {});
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

namespace {

// Two NCCL ranks in PG 0: #1 completed on both, #2 in the given states.
FrAnalysis TwoNcclRanks(State rank0, State rank1) {
  FrAnalysis a;
  const std::uint32_t pg = a.strings->Intern("0");
  const std::uint32_t op = a.strings->Intern("nccl:all_reduce");
  const std::uint32_t shape = a.strings->Intern("[[4]]|[Float]|[[4]]|[Float]");
  a.pgs["0"] = PgInfo{"0", "default_pg", {0, 1}};
  for (int r : {0, 1}) {
    RankDump d;
    d.rank = r;
    d.file = "fr_rank_" + std::to_string(r);
    Entry done;
    done.seq = 1, done.t_created = 1, done.t_started = 2, done.t_completed = 3;
    done.pg = pg, done.op = op, done.shape = shape, done.index = 0;
    done.state = State::kCompleted;
    Entry stuck = done;
    stuck.seq = 2, stuck.t_created = 4, stuck.t_started = 0, stuck.t_completed = 0;
    stuck.index = 1;
    stuck.state = r == 0 ? rank0 : rank1;
    if (stuck.state == State::kStarted) stuck.t_started = 5;
    d.entries = {done, stuck};
    a.by_rank[r] = a.dumps.size();
    a.dumps.push_back(std::move(d));
  }
  AnalyseDumps(&a);
  return a;
}

}  // namespace

TEST_CASE("the H200 one-rank NCCL dump queued behind a GPU kernel is not a network cause") {
  // tests/fixtures/device/h200-torch2.11-nccl2.28.9: a one-rank job whose all_reduce stayed
  // "scheduled" behind a kernel spinning 25 s; it used to be retry_exceeded_network (0.50).
  auto a = AnalyzeFlightRecorder(
      {SL_FIXTURES_DIR + "/device/h200-torch2.11-nccl2.28.9/flight_recorder_rank_0.pkl"}, {});
  REQUIRE(a.ok());
  REQUIRE(a->Top() != nullptr);
  CHECK(a->Top()->members.size() == 1);
  CHECK(a->Top()->states_kept);
  CHECK_FALSE(a->Top()->starts_recorded);
  auto causes = FlightRecorderCauses(*a);
  REQUIRE(!causes.empty());
  for (const Cause& c : causes) CHECK(c.category != "retry_exceeded_network");
  CHECK(causes[0].category == "straggler_or_slow_rank");
  CHECK(causes[0].rule == "fr.one_rank_not_started");
  CHECK(causes[0].entity == "rank 0");
  CHECK_THAT(causes[0].message, Catch::Contains("group of one rank"));
  CHECK_THAT(causes[0].message, Catch::Contains("state scheduled"));
  CHECK_THAT(causes[0].message, Catch::Contains("TORCH_NCCL_ENABLE_TIMING"));
}

TEST_CASE("an NCCL collective started on one GPU and still scheduled on the other names the late") {
  auto a = TwoNcclRanks(State::kStarted, State::kScheduled);
  REQUIRE(a.Top() != nullptr);
  CHECK(a.Top()->verdict == PgVerdict::kStuckAll);
  CHECK(a.Top()->started == std::vector<int>{0});
  auto causes = FlightRecorderCauses(a);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].category == "straggler_or_slow_rank");
  CHECK(causes[0].rule == "fr.not_started_on_some_gpus");
  CHECK(causes[0].entity == "rank 1");
}

TEST_CASE("an NCCL collective started on every GPU and not completed is the transport's") {
  auto a = TwoNcclRanks(State::kStarted, State::kStarted);
  auto causes = FlightRecorderCauses(a);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].category == "retry_exceeded_network");
  CHECK(causes[0].confidence > 0.5);
  CHECK_THAT(causes[0].message, Catch::Contains("started on every GPU"));
}

TEST_CASE("with starts recorded, a collective started on no GPU is not blamed on the network") {
  auto a = TwoNcclRanks(State::kScheduled, State::kScheduled);
  CHECK(a.Top()->starts_recorded);  // #1 has its start time
  auto causes = FlightRecorderCauses(a);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].category != "retry_exceeded_network");
  CHECK(causes[0].rule == "fr.not_started_on_any_gpu");
}
