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

namespace {

std::string Le32(std::uint32_t v) {
  std::string out;
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  return out;
}

std::string Unicode(const std::string& s) { return "X" + Le32(std::uint32_t(s.size())) + s; }

// What a job's dumps look like to the reader: {"pg_config": <the same long text in every rank,
// memoized>, "entries": [<that text again, by memo>, rank]}, protocol 2. `head` goes first
// (a memo key or a FRAME the prefix checks against the input's size); `tail` pads the end.
std::string RankPickle(int rank, const std::string& head = "", std::size_t tail = 0) {
  std::string ranks = "[";
  for (int r = 0; r < 1500; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  ranks += "]";
  using namespace std::string_literals;
  std::string p = "\x80\x02"s + head + "}q\x00("s + Unicode("pg_config") + "q\x01"s +
                  Unicode(ranks) + "q\x02"s + Unicode("entries") + "q\x03]q\x04(h\x02K"s +
                  static_cast<char>(rank) + "eu"s;
  if (tail > 0) p += Unicode(std::string(tail, 'x')) + "0";  // pushed, then POP
  return p + ".";
}

// The values of a doc as text, for comparing two parses.
std::string Render(const PickleDoc& d, std::uint32_t id) {
  const Node& n = d.at(id);
  switch (n.kind) {
    case Kind::kStr:
      return "'" + std::string(d.Text(id)) + "'";
    case Kind::kInt:
      return std::to_string(n.i);
    case Kind::kList: {
      std::string out = "[";
      d.ForEachItem(id, [&](std::uint32_t c) { out += Render(d, c) + ","; });
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = "{";
      d.ForEachPair(id, [&](std::uint32_t k, std::uint32_t v) {
        out += Render(d, k) + ":" + Render(d, v) + ",";
      });
      return out + "}";
    }
    default:
      return "?";
  }
}

// `bytes` parsed by `u` (which has seen other inputs) and by a fresh unpickler: the same doc,
// or the same error.
void SameAsFresh(Unpickler& u, const std::string& bytes) {
  PickleDoc reused, fresh;
  Unpickler f;
  auto a = u.Parse(bytes, &reused);
  auto b = f.Parse(bytes, &fresh);
  REQUIRE(a.ok() == b.ok());
  if (!a.ok()) {
    CHECK(a.error().message == b.error().message);
    CHECK(a.error().where == b.error().where);
    return;
  }
  CHECK(Render(reused, reused.root()) == Render(fresh, fresh.root()));
  CHECK(reused.size() == fresh.size());
}

}  // namespace

TEST_CASE("the leading bytes a job's dumps share are parsed once, with the same result") {
  Unpickler u;
  PickleDoc doc;
  REQUIRE(u.Parse(RankPickle(0), &doc).ok());
  CHECK(u.reused() == 0);
  // The second dump finds what it shares with the first and keeps the state there.
  REQUIRE(u.Parse(RankPickle(1), &doc).ok());
  CHECK(u.reused() == 0);
  const std::string r2 = RankPickle(2);
  SameAsFresh(u, r2);
  CHECK(u.reused() > Unpickler::kMinShared);
  CHECK(u.reused() < r2.size());
  // The memo reference into the shared bytes resolves as in a fresh parse.
  REQUIRE(u.Parse(r2, &doc).ok());
  std::uint32_t entries = doc.Find(doc.root(), "entries");
  std::vector<std::uint32_t> items;
  doc.ForEachItem(entries, [&](std::uint32_t c) { items.push_back(c); });
  REQUIRE(items.size() == 2);
  CHECK(items[0] == doc.Find(doc.root(), "pg_config"));
  CHECK(doc.at(items[1]).i == 2);
  // A dump that differs inside those bytes (another pg_config) is parsed whole, and right.
  std::string other = RankPickle(3);
  other[other.find("1499")] = '7';
  SameAsFresh(u, other);
  CHECK(u.reused() == 0);
  SameAsFresh(u, RankPickle(4));
}

TEST_CASE("dumps that part between a value and its PUT keep the state before the PUT") {
  // The reader takes a str's PUT with the str; where the dumps stop agreeing at the PUT itself
  // (BINPUT in one, LONG_BINPUT in the other), the kept state must still end before it.
  std::string ranks = "[";
  for (int r = 0; r < 1500; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  ranks += "]";
  using namespace std::string_literals;
  auto dump = [&](const std::string& put, int rank) {
    return "\x80\x02}q\x00("s + Unicode("pg_config") + "q\x01"s + Unicode(ranks) + put +
           Unicode("entries") + "q\x03]q\x04(h\x02K"s + static_cast<char>(rank) + "eu."s;
  };
  const std::string binput = "q\x02"s, long_binput = "r\x02\x00\x00\x00"s;
  Unpickler u;
  PickleDoc doc;
  REQUIRE(u.Parse(dump(binput, 0), &doc).ok());
  REQUIRE(u.Parse(dump(long_binput, 1), &doc).ok());
  const std::string next = dump(binput, 2);
  SameAsFresh(u, next);
  CHECK(u.reused() == next.find(ranks) + ranks.size());
  SameAsFresh(u, dump(long_binput, 3));
  CHECK(u.reused() > Unpickler::kMinShared);
}

TEST_CASE("a dump cut inside or after the shared bytes gives the error a fresh parse gives") {
  Unpickler u;
  PickleDoc doc;
  REQUIRE(u.Parse(RankPickle(0), &doc).ok());
  REQUIRE(u.Parse(RankPickle(1), &doc).ok());
  const std::string r2 = RankPickle(2);
  for (std::size_t n :
       {std::size_t(10), Unpickler::kMinShared, r2.size() - 9, r2.size() - 4, r2.size() - 1}) {
    CAPTURE(n);
    SameAsFresh(u, r2.substr(0, n));
  }
  SameAsFresh(u, r2);
  CHECK(u.reused() > Unpickler::kMinShared);
}

TEST_CASE("what the shared bytes check against the input's size is checked again") {
  // A memo key of 20000 is in range for a 30000-byte dump, out of range for a 10000-byte one.
  const std::string key = std::string("]r", 2) + Le32(20000) + "0";
  Unpickler u;
  PickleDoc doc;
  REQUIRE(u.Parse(RankPickle(0, key, 30000), &doc).ok());
  REQUIRE(u.Parse(RankPickle(1, key, 30000), &doc).ok());
  SameAsFresh(u, RankPickle(2, key, 30000));
  CHECK(u.reused() > Unpickler::kMinShared);
  auto shorter = u.Parse(RankPickle(3, key), &doc);
  REQUIRE(!shorter.ok());
  CHECK_THAT(shorter.error().message, Catch::Contains("memo key 20000 out of range"));
  SameAsFresh(u, RankPickle(3, key));
  // A FRAME that announces 25000 bytes: there in the long dumps, past the end of a short one.
  Unpickler v;
  const std::string frame = "\x95" + Le32(25000) + std::string(4, '\0');
  REQUIRE(v.Parse(RankPickle(0, frame, 30000), &doc).ok());
  REQUIRE(v.Parse(RankPickle(1, frame, 30000), &doc).ok());
  SameAsFresh(v, RankPickle(2, frame, 30000));
  CHECK(v.reused() > Unpickler::kMinShared);
  auto cut = v.Parse(RankPickle(3, frame), &doc);
  REQUIRE(!cut.ok());
  CHECK_THAT(cut.error().message, Catch::Contains("truncated"));
  SameAsFresh(v, RankPickle(3, frame));
}

TEST_CASE("dumps with a byte changed anywhere parse as a fresh unpickler parses them") {
  // One unpickler through a series of damaged dumps (it keeps and drops shared prefixes as they
  // come), each compared with a parse from byte 0: the doc or the error is the same.
  const std::string base = RankPickle(0, "", 2000);
  Unpickler u;
  PickleDoc doc;
  REQUIRE(u.Parse(base, &doc).ok());
  std::uint64_t x = 7;
  int reused = 0;
  for (int i = 0; i < 400; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::string bytes = i % 3 == 0 ? base : RankPickle(1 + i % 5, "", 2000);
    const std::size_t at = static_cast<std::size_t>((x >> 33) % bytes.size());
    bytes[at] = static_cast<char>(x >> 13);
    CAPTURE(i, at);
    SameAsFresh(u, bytes);
    if (u.reused() > 0) ++reused;
  }
  // A change after the shared bytes (the rank, the 2000-byte tail) resumes from them; one inside
  // them is parsed whole and may start another kept prefix (83 of the 400 resumed when written).
  CHECK(reused > 50);
}
