#include "diagnose/flight_recorder/pickle.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/unit/diagnose/flight_recorder/fr_paths.h"

using namespace sl::diagnose::fr;

namespace {

std::string SlurpPickle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

const char* const kPlain[] = {
#include "plain_pickles.inc"
};

const std::string kGloo = FR_FIXTURES + "/h200-torch2.11-gloo-4rank-optype-mismatch/fr_rank_1.pkl";

}  // namespace

TEST_CASE("torch 2.11's real Gloo dump parses into its dict with 5 entries") {
  std::string bytes = SlurpPickle(kGloo);
  REQUIRE(!bytes.empty());
  Unpickler u;
  PickleDoc doc;
  auto st = u.Parse(bytes, &doc);
  REQUIRE(st.ok());
  REQUIRE(doc.at(doc.root()).kind == Kind::kDict);
  CHECK(doc.Text(doc.Find(doc.root(), "version")) == "2.10");
  std::uint32_t entries = doc.Find(doc.root(), "entries");
  REQUIRE(entries != PickleDoc::kNotFound);
  CHECK(doc.at(entries).count == 5);
  std::vector<std::string> ops;
  doc.ForEachItem(
      entries, [&](std::uint32_t e) { ops.emplace_back(doc.Text(doc.Find(e, "profiling_name"))); });
  CHECK(ops.back() == "gloo:broadcast");
  // LONG1 time stamps (wider than BININT) come back as 64-bit ints.
  std::uint32_t first = 0;
  doc.ForEachItem(entries, [&](std::uint32_t e) { first = first ? first : e; });
  CHECK(doc.at(doc.Find(first, "time_created_ns")).i == 1796002254805623192LL);
}

TEST_CASE("plain data pickled with protocols 0 to 5 reads back the same values") {
  for (int p = 0; p < 6; ++p) {
    CAPTURE(p);
    std::string bytes = Hex(kPlain[p]);
    Unpickler u;
    PickleDoc doc;
    auto st = u.Parse(bytes, &doc);
    REQUIRE(st.ok());
    std::uint32_t root = doc.root();
    CHECK(doc.Text(doc.Find(root, "version")) == "2.10");
    std::vector<std::uint32_t> n;
    doc.ForEachItem(doc.Find(root, "n"), [&](std::uint32_t c) { n.push_back(c); });
    REQUIRE(n.size() == 11);
    CHECK(doc.at(n[0]).i == 1);
    CHECK(doc.at(n[1]).i == -2);
    CHECK(doc.at(n[2]).i == (std::int64_t(1) << 40));
    CHECK(doc.at(n[3]).kind == Kind::kBigInt);
    CHECK(doc.at(n[4]).f == 1.5);
    CHECK((doc.at(n[5]).kind == Kind::kBool && doc.at(n[5]).i == 1));
    CHECK((doc.at(n[6]).kind == Kind::kBool && doc.at(n[6]).i == 0));
    CHECK(doc.at(n[7]).kind == Kind::kNone);
    CHECK((doc.at(n[8]).kind == Kind::kTuple && doc.at(n[8]).count == 3));
    CHECK((doc.at(n[9]).kind == Kind::kList && doc.at(n[9]).count == 0));
    CHECK((doc.at(n[10]).kind == Kind::kDict && doc.at(n[10]).count == 0));
    // The memo: "a" and "b" are one list object, as in Python.
    CHECK(doc.Find(root, "a") == doc.Find(root, "b"));
  }
}

TEST_CASE("GLOBAL is refused with its opcode and byte offset, nothing is imported") {
  // pickle of os.system at protocol 2 spelled by hand: PROTO 2, GLOBAL 'os system', ..., REDUCE
  std::string bytes = std::string("\x80\x02") + "cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85R.";
  Unpickler u;
  PickleDoc doc;
  auto st = u.Parse(bytes, &doc);
  REQUIRE(!st.ok());
  CHECK(st.error().where == "byte 2");
  CHECK_THAT(st.error().message, Catch::Contains("GLOBAL") && Catch::Contains("refused"));
}

TEST_CASE("STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ and PERSID are refused") {
  // pickle.dumps(os.system, protocol=4): STACK_GLOBAL at byte 28.
  std::string sg = Hex("80049514000000000000008c05706f736978948c0673797374656d9493942e");
  Unpickler u;
  PickleDoc doc;
  auto st = u.Parse(sg, &doc);
  REQUIRE(!st.ok());
  CHECK(st.error().where == "byte 28");
  CHECK_THAT(st.error().message, Catch::Contains("STACK_GLOBAL"));
  // No global at all, yet a call: EMPTY_LIST, EMPTY_TUPLE, REDUCE.
  for (auto [op, name] : std::vector<std::pair<char, std::string>>{
           {'R', "REDUCE"}, {'b', "BUILD"}, {'\x81', "NEWOBJ"}, {'o', "OBJ"}, {'Q', "BINPERSID"}}) {
    std::string bytes = std::string("\x80\x02])") + op + ".";
    auto r = u.Parse(bytes, &doc);
    REQUIRE(!r.ok());
    CHECK(r.error().where == "byte 4");
    CHECK_THAT(r.error().message, Catch::Contains(name) && Catch::Contains("refused"));
  }
  auto inst = u.Parse(std::string("(ios\nsystem\n."), &doc);
  REQUIRE(!inst.ok());
  CHECK_THAT(inst.error().message, Catch::Contains("INST"));
}

TEST_CASE("a dump cut at any byte is an error naming a byte, never a crash or a value") {
  std::string bytes = SlurpPickle(kGloo);
  Unpickler u;
  PickleDoc doc;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto st = u.Parse(std::string_view(bytes).substr(0, n), &doc);
    REQUIRE(!st.ok());
    REQUIRE(st.error().where.rfind("byte ", 0) == 0);
  }
  CHECK(u.Parse(bytes, &doc).ok());
}

TEST_CASE("a forged memo key, a newer protocol and an unknown opcode are clear errors") {
  Unpickler u;
  PickleDoc doc;
  auto memo = u.Parse(std::string("\x80\x02]r\xff\xff\xff\x7f.", 9), &doc);
  REQUIRE(!memo.ok());
  CHECK_THAT(memo.error().message, Catch::Contains("memo key") && Catch::Contains("out of range"));
  auto proto = u.Parse(std::string("\x80\x06N."), &doc);
  REQUIRE(!proto.ok());
  CHECK_THAT(proto.error().message, Catch::Contains("protocol 6"));
  auto unknown = u.Parse(std::string("\x80\x02\xff."), &doc);
  REQUIRE(!unknown.ok());
  CHECK(unknown.error().where == "byte 2");
  CHECK_THAT(unknown.error().message, Catch::Contains("unknown opcode"));
  auto get = u.Parse(std::string("\x80\x02h\x05."), &doc);
  REQUIRE(!get.ok());
  CHECK_THAT(get.error().message, Catch::Contains("never stored"));
}
