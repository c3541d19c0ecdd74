#include "diagnose/flight_recorder/dump.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/unit/diagnose/flight_recorder/fr_paths.h"

using namespace sl::diagnose::fr;

namespace {

std::string SlurpDump(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kGlooDir = FR_FIXTURES + "/h200-torch2.11-gloo-4rank-optype-mismatch/";
const std::string kNcclDir = FR_FIXTURES + "/h200-torch2.11-nccl2.28.9/";

struct DumpReaders {
  Strings strings;
  Stacks stacks;
  PgRegistry pgs;
  DumpReader reader{&strings, &stacks, &pgs};
};

}  // namespace

TEST_CASE("a real Gloo dump reads the same from its pickle and its JSON") {
  for (std::string ext : {".pkl", ".json"}) {
    CAPTURE(ext);
    DumpReaders r;
    auto d = r.reader.Read(SlurpDump(kGlooDir + "fr_rank_1" + ext));
    REQUIRE(d.ok());
    CHECK(d->version == "2.10");
    CHECK(d->gloo);
    REQUIRE(d->entries.size() == 5);
    CHECK(r.strings.at(d->entries[4].op) == "gloo:broadcast");
    CHECK(d->entries[4].seq == 5);
    CHECK(r.strings.at(d->entries[4].pg) == "0");
    CHECK(r.strings.at(d->entries[0].shape) == "[[1024]]|[Float]|[[1024]]|[Float]");
    // Gloo keys pg_config by '' while its entries name group '0': the members still come through.
    auto& pgs = r.pgs.all();
    REQUIRE(pgs.count("0") == 1);
    CHECK(pgs["0"].members == std::vector<int>{0, 1, 2, 3});
    CHECK(pgs["0"].desc == "default_pg");
    // Its pg_status says the stuck collective completed (strings in the JSON form).
    REQUIRE(d->status.size() == 1);
    CHECK(d->status[0].completed == 5);
    if (ext == ".pkl") {  // _dump_fr_trace_json leaves the frames out
      const auto& frames = r.stacks.at(d->entries[4].frames);
      REQUIRE(frames.size() == 3);
      CHECK(r.strings.at(frames[2].file) == "/tmp/desync.py");
    }
  }
}

TEST_CASE("the real NCCL dump and its decoded JSON (wrapped in its path) read the same") {
  for (std::string name : {"flight_recorder_rank_0.pkl", "flight_recorder_rank_0.decoded.json"}) {
    CAPTURE(name);
    DumpReaders r;
    auto d = r.reader.Read(SlurpDump(kNcclDir + name));
    REQUIRE(d.ok());
    CHECK(!d->gloo);
    CHECK(d->comm_lib == "2.28.9");
    REQUIRE(d->entries.size() == 5);
    CHECK(d->entries[3].state == State::kCompleted);
    CHECK(d->entries[4].state == State::kScheduled);
    CHECK(d->entries[4].t_completed == 0);
    CHECK(r.strings.at(d->entries[4].op) == "nccl:all_reduce");
    REQUIRE(d->status.size() == 1);
    CHECK(d->status[0].enqueued == 5);
    CHECK(d->status[0].completed == 4);
  }
}

TEST_CASE("the stack cache finds each key it was given, only those, and forgets on Clear") {
  StackCache c;
  std::vector<std::vector<std::uint32_t>> keys;
  // Past the first table's 1024 slots (it grows), keys that share a prefix or differ in length.
  for (std::uint32_t i = 0; i < 3000; ++i) keys.push_back({i, i + 1, i % 7, i / 3});
  keys.push_back({1, 2});
  keys.push_back({1, 2, 0});
  for (std::size_t i = 0; i < keys.size(); ++i) {
    CHECK(c.Find(keys[i], StackCache::Hash(keys[i])) == nullptr);
    c.Insert(keys[i], StackCache::Hash(keys[i]), static_cast<std::uint32_t>(i + 10));
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint32_t* id = c.Find(keys[i], StackCache::Hash(keys[i]));
    REQUIRE(id != nullptr);
    CHECK(*id == i + 10);
  }
  // The same hash with other ids is not a hit (the ids are compared, not only the hash).
  const std::vector<std::uint32_t> other = {9, 9, 9, 9};
  CHECK(c.Find(other, StackCache::Hash(keys[0])) == nullptr);
  c.Clear();
  CHECK(c.Find(keys[5], StackCache::Hash(keys[5])) == nullptr);
  c.Insert(keys[5], StackCache::Hash(keys[5]), 1);
  CHECK(*c.Find(keys[5], StackCache::Hash(keys[5])) == 1);
}

TEST_CASE("the rank comes from the last digits of the file name, with or without extension") {
  CHECK(RankFromFileName("/tmp/fr_rank_12") == 12);
  CHECK(RankFromFileName("/x/comm_lib_trace_rank_3.pkl") == 3);
  CHECK(RankFromFileName("flight_recorder_rank_0.decoded.json") == 0);
  CHECK(RankFromFileName("/gpu07/fr/fr_rank_63.json") == 63);
  CHECK(RankFromFileName("/x/manifest.json") == -1);
}

TEST_CASE("pg_config's rank text parses, anything else gives no members") {
  CHECK(ParseRankList("[0, 1, 2, 3]") == std::vector<int>{0, 1, 2, 3});
  CHECK(ParseRankList("[56]") == std::vector<int>{56});
  CHECK(ParseRankList("all").empty());
}

TEST_CASE("files that are not Flight Recorder dumps are errors, not crashes") {
  DumpReaders r;
  auto empty = r.reader.Read("");
  REQUIRE(!empty.ok());
  CHECK_THAT(empty.error().message, Catch::Contains("empty"));
  auto text = r.reader.Read("hello");
  REQUIRE(!text.ok());
  CHECK_THAT(text.error().message, Catch::Contains("neither a pickle"));
  auto no_entries = r.reader.Read(R"({"version": "3.0", "pg_config": {}})");
  REQUIRE(!no_entries.ok());
  CHECK_THAT(no_entries.error().message,
             Catch::Contains("no \"entries\"") && Catch::Contains("3.0"));
  auto bad_json = r.reader.Read("{\"entries\": [");
  REQUIRE(!bad_json.ok());
  CHECK(bad_json.error().where.rfind("byte ", 0) == 0);
}
