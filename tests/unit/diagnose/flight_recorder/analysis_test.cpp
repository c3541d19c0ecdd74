#include "diagnose/flight_recorder/analysis.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "diagnose/flight_recorder/report.h"
#include "tests/unit/diagnose/flight_recorder/fr_paths.h"

using namespace sl::diagnose::fr;
namespace fs = std::filesystem;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Gen(const std::string& name) { return FR_GEN_DIR + "/" + name + "/dumps"; }

nlohmann::json Summary(const std::string& name) {
  return nlohmann::json::parse(Slurp(FR_GEN_DIR + "/" + name + "/summary.json"));
}

FrAnalysis Analyse(const std::vector<std::string>& paths, const FrOptions& o = {}) {
  auto a = AnalyzeFlightRecorder(paths, o);
  REQUIRE(a.ok());
  return std::move(a).value();
}

// The generated dumps of `name` in a MemFileReader, under /run/<host>/fr/ per rank.
sl::MemFileReader InMemory(const std::string& name, const std::map<int, std::string>& hosts) {
  sl::MemFileReader m;
  m.AddDir("/run");
  std::set<std::string> made;
  for (const auto& e : fs::directory_iterator(Gen(name))) {
    int rank = std::stoi(e.path().filename().string().substr(8));
    std::string host = hosts.count(rank) ? hosts.at(rank) : "gpu00";
    if (made.insert(host).second) {
      m.AddDir("/run/" + host).AddDir("/run/" + host + "/fr");
      m.AddFile("/run/" + host + "/manifest.json", "{\"host\": \"" + host + "\"}");
    }
    m.AddFile("/run/" + host + "/fr/fr_rank_" + std::to_string(rank) + ".pkl",
              Slurp(e.path().string()));
  }
  return m;
}

}  // namespace

TEST_CASE("healthy dumps give no cause") {
  auto a = Analyse({Gen("healthy")});
  CHECK(a.dumps.size() == 8);
  CHECK(a.errors.empty());
  CHECK(a.Top() == nullptr);
  CHECK(FlightRecorderCauses(a).empty());
}

TEST_CASE("a rank that never entered the collective the others wait in is the straggler") {
  auto a = Analyse({Gen("missing5")});
  const PgFinding* f = a.Top();
  REQUIRE(f != nullptr);
  CHECK(f->verdict == PgVerdict::kLaggard);
  CHECK(f->pg == "0");
  CHECK(f->seq == Summary("missing5")["fault_seq"].get<std::int64_t>());
  CHECK(f->never_entered == std::vector<int>{5});
  CHECK(f->entered.size() == 7);
  auto causes = FlightRecorderCauses(a);
  REQUIRE(!causes.empty());
  CHECK(causes[0].category == "straggler_or_slow_rank");
  CHECK(causes[0].entity == "rank 5");
  CHECK_THAT(causes[0].message, Catch::Contains("ALLREDUCE #"));
}

TEST_CASE("the faulty rank's file sorting first does not make the healthy ranks look guilty") {
  auto lag = Analyse({Gen("missing0")});
  REQUIRE(lag.Top() != nullptr);
  CHECK(lag.Top()->never_entered == std::vector<int>{0});
  auto op = Analyse({Gen("op0")});
  REQUIRE(op.Top() != nullptr);
  CHECK(op.Top()->verdict == PgVerdict::kDesync);
  REQUIRE(op.Top()->odd.size() == 1);
  CHECK(op.Top()->odd[0].rank == 0);
  CHECK(op.Top()->mismatch == "op");
  CHECK(op.Str(op.Top()->op) == "nccl:all_reduce");
  auto causes = FlightRecorderCauses(op);
  CHECK(causes[0].category == "desync_collective_mismatch");
  CHECK(causes[0].entity == "rank 0");
}

TEST_CASE("a rank with other sizes under the same seq is a desync on sizes") {
  auto a = Analyse({Gen("size3")});
  REQUIRE(a.Top() != nullptr);
  CHECK(a.Top()->verdict == PgVerdict::kDesync);
  CHECK(a.Top()->mismatch == "sizes");
  REQUIRE(a.Top()->odd.size() == 1);
  CHECK(a.Top()->odd[0].rank == 3);
}

TEST_CASE("every rank entered and none finished is reported as a network suspect") {
  auto a = Analyse({Gen("stuck")});
  REQUIRE(a.Top() != nullptr);
  CHECK(a.Top()->verdict == PgVerdict::kStuckAll);
  CHECK(a.Top()->entered.size() == 8);
  CHECK(a.Top()->completed.empty());
  auto causes = FlightRecorderCauses(a);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].category == "retry_exceeded_network");
}

TEST_CASE("ranks with no dump are named, and are the suspects when everyone else waits") {
  std::vector<std::string> files;
  for (int r = 0; r < 8; ++r) {
    if (r != 6) files.push_back(Gen("stuck") + "/fr_rank_" + std::to_string(r));
  }
  auto a = Analyse(files);
  CHECK(a.missing == std::vector<int>{6});
  REQUIRE(a.Top() != nullptr);
  CHECK(a.Top()->verdict == PgVerdict::kMissingDump);
  auto causes = FlightRecorderCauses(a);
  REQUIRE(!causes.empty());
  CHECK(causes[0].category == "oom_or_crash_other_rank");
  CHECK(causes[0].entity == "rank 6");
}

TEST_CASE("a truncated dump is an error naming the file and byte, the other ranks still decide") {
  auto m = InMemory("missing5", {});
  std::string cut = *m.ReadFile("/run/gpu00/fr/fr_rank_2.pkl");
  m.AddFile("/run/gpu00/fr/fr_rank_2.pkl", cut.substr(0, cut.size() / 2));
  FrOptions o;
  o.reader = &m;
  auto a = Analyse({"/run"}, o);
  REQUIRE(a.errors.size() == 1);
  CHECK(a.errors[0].file == "/run/gpu00/fr/fr_rank_2.pkl");
  CHECK(a.errors[0].offset > 0);
  CHECK_THAT(a.errors[0].message, Catch::Contains("truncated"));
  CHECK(a.missing == std::vector<int>{2});
  REQUIRE(a.Top() != nullptr);
  CHECK(a.Top()->never_entered == std::vector<int>{5});
}

TEST_CASE("hosts from the bundles' manifests group the ranks by node") {
  auto m = InMemory("missing5", {{4, "gpu06"}, {5, "gpu07"}, {6, "gpu08"}, {7, "gpu08"}});
  FrOptions o;
  o.reader = &m;
  auto a = Analyse({"/run"}, o);
  CHECK(a.HostOf(5) == "gpu07");
  auto causes = FlightRecorderCauses(a);
  REQUIRE(!causes.empty());
  CHECK(causes[0].entity == "node gpu07 (rank 5)");
  CHECK(a.DescribeRanks({6, 7}) == "node gpu08 (ranks 6-7)");
  CHECK(a.DescribeRanks({0, 1}) == "ranks 0-1 on gpu00");
}

TEST_CASE("p2p send/recv pairs are matched by p2p seq, not flagged as different ops") {
  auto a = Analyse({Gen("p2p")});
  CHECK(a.Top() == nullptr);
  bool saw_p2p = false;
  for (const auto& f : a.findings) saw_p2p = saw_p2p || f.p2p;
  CHECK(saw_p2p);
}

TEST_CASE("the real 4-rank Gloo desync names rank 1's broadcast against the others' all_reduce") {
  std::string dir = FR_FIXTURES + "/h200-torch2.11-gloo-4rank-optype-mismatch";
  for (std::string ext : {"pkl", "json"}) {
    CAPTURE(ext);
    std::vector<std::string> files;
    for (int r = 0; r < 4; ++r) files.push_back(dir + "/fr_rank_" + std::to_string(r) + "." + ext);
    auto a = Analyse(files);
    REQUIRE(a.Top() != nullptr);
    CHECK(a.Top()->verdict == PgVerdict::kDesync);
    CHECK(a.Top()->seq == 5);
    REQUIRE(a.Top()->odd.size() == 1);
    CHECK(a.Top()->odd[0].rank == 1);
    CHECK(a.Str(a.Top()->odd[0].op) == "gloo:broadcast");
  }
  // The whole folder: .pkl and .json of each rank, one kept, noted.
  auto all = Analyse({dir});
  CHECK(all.dumps.size() == 4);
  CHECK(all.notes.size() == 4);
}

namespace {

// The --json report of `files` read by `threads` reader threads, without its timings.
std::string FrJsonOf(const std::vector<std::string>& files, int threads) {
  FrOptions o;
  o.threads = threads;
  auto a = Analyse(files, o);
  auto j = DiagnosisJson(a, FlightRecorderCauses(a));
  j["flight_recorder"].erase("timing_s");
  return j.dump();
}

}  // namespace

TEST_CASE("the --json rows are the same whatever the file order and the reader threads") {
  // Strings are interned in the order the readers meet them (rank 7 first when its file comes
  // first, any order with threads): no row order may follow the interned ids.
  for (std::string name : {"healthy", "missing5", "op0", "size3", "p2p"}) {
    CAPTURE(name);
    std::vector<std::string> files;
    for (int r = 0; r < 8; ++r) files.push_back(Gen(name) + "/fr_rank_" + std::to_string(r));
    const std::vector<std::string> reversed(files.rbegin(), files.rend());
    const std::string want = FrJsonOf(files, 1);
    CHECK(FrJsonOf(reversed, 1) == want);
    for (int round = 0; round < 6; ++round) {
      CHECK(FrJsonOf(round % 2 ? reversed : files, round % 3 ? 8 : 3) == want);
    }
  }
  // Healthy groups (no stuck collective, no time to order them by) come by name.
  auto j = nlohmann::json::parse(FrJsonOf({Gen("healthy")}, 4));
  std::vector<std::string> pgs;
  for (const auto& g : j["flight_recorder"]["process_groups"]) pgs.push_back(g["pg"]);
  CHECK(pgs == std::vector<std::string>{"0", "1", "2", "3", "4"});
  // A tie (one rank against one) goes by what they entered, not by file order.
  const std::string op0 = Gen("op0") + "/fr_rank_";
  CHECK(FrJsonOf({op0 + "1", op0 + "0"}, 1) == FrJsonOf({op0 + "0", op0 + "1"}, 2));
}

TEST_CASE("no dump at all is an error, not an empty answer") {
  sl::MemFileReader m;
  m.AddDir("/empty");
  FrOptions o;
  o.reader = &m;
  auto a = AnalyzeFlightRecorder({"/empty"}, o);
  REQUIRE(!a.ok());
  CHECK_THAT(a.error().message, Catch::Contains("no Flight Recorder dump"));
}
