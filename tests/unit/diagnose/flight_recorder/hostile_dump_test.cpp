// Dumps and bundles built to hurt the reader: memo bombs, numbers out of range, manifests of the
// wrong shape, a reader that throws. Each is that file's error; the diagnosis goes on.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <string>

#include "common/file_reader.h"
#include "diagnose/flight_recorder/analysis.h"
#include "diagnose/flight_recorder/dump.h"

using namespace sl::diagnose::fr;
namespace fs = std::filesystem;

namespace {

struct Reader {
  Strings strings;
  Stacks stacks;
  PgRegistry pgs;
  DumpReader reader{&strings, &stacks, &pgs};
};

std::string Str(const std::string& s) {  // BINUNICODE
  std::string out = "X";
  std::uint32_t n = static_cast<std::uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  return out + s;
}

// A dump of one entry whose input_sizes is a list of `k` references to a list of `k` references
// ... `levels` deep: a few hundred bytes that are k^levels values when walked.
std::string MemoBomb(int k, int levels) {
  std::string p = "\x80\x02";
  p += "](";
  for (int i = 0; i < k; ++i) p += "K\x01";
  p += "eq";
  p.push_back('\0');
  p += "0";  // POP: the list stays in the memo only
  for (int l = 1; l < levels; ++l) {
    p += "](";
    for (int i = 0; i < k; ++i) {
      p += "h";
      p.push_back(static_cast<char>(l - 1));
    }
    p += "eq";
    p.push_back(static_cast<char>(l));
    p += "0";
  }
  p += "}(" + Str("version") + Str("2.10") + Str("entries") + "](";
  p += "}(" + Str("input_sizes") + "h";
  p.push_back(static_cast<char>(levels - 1));
  p += Str("collective_seq_id") + "K\x01" + Str("profiling_name") + Str("nccl:all_reduce");
  p += "u";  // SETITEMS of the entry
  p += "e";  // APPENDS to entries
  p += "u.";
  return p;
}

}  // namespace

TEST_CASE("a pickle of repeated memo references is refused by the output budget, fast") {
  Reader r;
  const std::string bomb = MemoBomb(90, 4);
  REQUIRE(bomb.size() < 1000);
  auto d = r.reader.Read(bomb);
  REQUIRE(!d.ok());
  CHECK_THAT(d.error().message, Catch::Contains("expands to more than"));
  // The same shape with few references reads: the budget is about expansion, not the shape.
  auto small = r.reader.Read(MemoBomb(3, 4));
  REQUIRE(small.ok());
  CHECK(small->entries.size() == 1);
}

TEST_CASE("a number no 64-bit integer holds is a named error for that dump, not an abort") {
  Reader r;
  auto overflow = r.reader.Read(R"({"entries": [{"collective_seq_id": 1e400}]})");
  REQUIRE(!overflow.ok());
  CHECK_THAT(overflow.error().message, Catch::Contains("out of range"));
  auto big = r.reader.Read(R"({"entries": [{"collective_seq_id": 1e300}]})");
  REQUIRE(!big.ok());
  CHECK_THAT(big.error().message, Catch::Contains("collective_seq_id is out of range"));
  auto wide = r.reader.Read(R"({"entries": [{"time_created_ns": 18446744073709551615}]})");
  REQUIRE(!wide.ok());
  CHECK_THAT(wide.error().message, Catch::Contains("time_created_ns is out of range"));
  auto text = r.reader.Read(R"({"entries": [{"collective_seq_id": "99999999999999999999999"}]})");
  REQUIRE(!text.ok());
  CHECK_THAT(text.error().message, Catch::Contains("out of range"));
  // In range still reads.
  auto fine = r.reader.Read(R"({"entries": [{"collective_seq_id": 7.0}]})");
  REQUIRE(fine.ok());
  CHECK(fine->entries.at(0).seq == 7);
}

namespace {

// A FileReader that throws for one file, as a reader thread might (bad_alloc, a parser's).
class ThrowingReader final : public sl::FileReader {
 public:
  explicit ThrowingReader(const sl::MemFileReader& inner) : inner_(inner) {}
  sl::Result<std::string> ReadFile(std::string_view path, std::size_t max) const override {
    if (path.find("fr_rank_1") != std::string_view::npos) throw std::bad_alloc();
    return inner_.ReadFile(path, max);
  }
  sl::Result<std::vector<std::string>> ListDir(std::string_view p) const override {
    return inner_.ListDir(p);
  }
  sl::Result<std::string> ReadLink(std::string_view p) const override { return inner_.ReadLink(p); }
  bool Exists(std::string_view p) const override { return inner_.Exists(p); }
  bool IsDir(std::string_view p) const override { return inner_.IsDir(p); }
  sl::Result<std::uint64_t> FsSizeBytes(std::string_view p) const override {
    return inner_.FsSizeBytes(p);
  }
  std::string HostPath(std::string_view p) const override { return std::string(p); }
  bool IsSysroot() const override { return true; }

 private:
  const sl::MemFileReader& inner_;
};

const char* kEntry = R"({"entries": [{"collective_seq_id": 1, "profiling_name": "nccl:all_reduce",
  "state": "completed", "process_group": ["0", "default_pg"]}]})";

}  // namespace

TEST_CASE("an exception in a reader thread is that file's error and the others are read") {
  sl::MemFileReader mem;
  mem.AddDir("/run").AddDir("/run/fr");
  for (int r = 0; r < 4; ++r) mem.AddFile("/run/fr/fr_rank_" + std::to_string(r), kEntry);
  ThrowingReader reader(mem);
  FrOptions o;
  o.reader = &reader;
  o.threads = 2;
  auto a = AnalyzeFlightRecorder({"/run"}, o);
  REQUIRE(a.ok());
  CHECK(a->dumps.size() == 3);
  REQUIRE(a->errors.size() == 1);
  CHECK_THAT(a->errors[0].file, Catch::Contains("fr_rank_1"));
  CHECK_THAT(a->errors[0].message, Catch::Contains("cannot read"));
}

TEST_CASE("a manifest with fields of the wrong type is read as far as it goes") {
  for (
      const char* manifest :
      {R"({"host": 5})", R"({"host": "n1", "collectors": [{"id": 5}]})",
       R"({"host": "n1", "collectors": [{"id": "flight_recorder", "details": {"dumps": "x"}}]})",
       R"({"host": "n1", "collectors": [{"id": "flight_recorder", "details": {"dumps": [{"rank": "3"}, 7]}}]})",
       R"({"host": "n1", "collectors": "none"})", R"([1, 2])"}) {
    sl::MemFileReader mem;
    mem.AddDir("/run").AddDir("/run/n1").AddDir("/run/n1/fr");
    mem.AddFile("/run/n1/manifest.json", manifest);
    mem.AddFile("/run/n1/fr/fr_rank_0", kEntry);
    FrOptions o;
    o.reader = &mem;
    auto a = AnalyzeFlightRecorder({"/run"}, o);
    INFO(manifest);
    REQUIRE(a.ok());
    CHECK(a->dumps.size() == 1);
  }
}

TEST_CASE("a rank list that holds itself makes the members unknown, never rank -1") {
  std::string p = "\x80\x02}(" + Str("entries") + "](}(" + Str("collective_seq_id") + "K\x01";
  p += Str("process_group") + "](" + Str("0") + Str("default_pg") + "eue";
  p += Str("pg_config") + "}(" + Str("0") + "}(" + Str("desc") + Str("default_pg") + Str("ranks");
  p += "]q";
  p.push_back('\0');
  p += "(h";
  p.push_back('\0');
  p += "K";
  p.push_back('\0');
  p += "K\x01";
  p += "euuu.";
  Reader r;
  auto d = r.reader.Read(p);
  REQUIRE(d.ok());
  auto& pgs = r.pgs.all();
  REQUIRE(pgs.count("0") == 1);
  for (int m : pgs["0"].members) CHECK(m >= 0);
  CHECK(pgs["0"].members.empty());
}
