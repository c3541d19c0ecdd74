// The streaming pickle reader (dump_stream.cpp) against the full parser: on the real and the
// generated dumps it is the one that reads them and gives the same RankDump and process groups;
// where it gives up, the full parser's result or error comes back unchanged.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "diagnose/flight_recorder/dump.h"
#include "tests/unit/diagnose/flight_recorder/fr_paths.h"

using namespace sl::diagnose::fr;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

std::string SlurpStream(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Two readers over one string and stack table, so ids compare directly; each its own groups.
struct StreamPair {
  Strings strings;
  Stacks stacks;
  PgRegistry stream_pgs, full_pgs;
  DumpReader stream{&strings, &stacks, &stream_pgs};
  DumpReader full{&strings, &stacks, &full_pgs};
  StreamPair() { full.set_stream(false); }
};

void CheckSame(const RankDump& a, const RankDump& b) {
  CHECK(a.version == b.version);
  CHECK(a.comm_lib == b.comm_lib);
  CHECK(a.gloo == b.gloo);
  REQUIRE(a.entries.size() == b.entries.size());
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    CAPTURE(i);
    const Entry& x = a.entries[i];
    const Entry& y = b.entries[i];
    CHECK(x.seq == y.seq);
    CHECK(x.t_created == y.t_created);
    CHECK(x.t_started == y.t_started);
    CHECK(x.t_completed == y.t_completed);
    CHECK(x.pg == y.pg);
    CHECK(x.op == y.op);
    CHECK(x.shape == y.shape);
    CHECK(x.frames == y.frames);
    CHECK(x.index == y.index);
    CHECK(x.state == y.state);
    CHECK(x.is_p2p == y.is_p2p);
  }
  REQUIRE(a.status.size() == b.status.size());
  for (std::size_t i = 0; i < a.status.size(); ++i) {
    CHECK(a.status[i].pg == b.status[i].pg);
    CHECK(a.status[i].enqueued == b.status[i].enqueued);
    CHECK(a.status[i].started == b.status[i].started);
    CHECK(a.status[i].completed == b.status[i].completed);
  }
}

// Both readers on `bytes`: both read it, the streaming one streams it or not as `streamed` says,
// and they give the same records; the streaming reader's dump.
std::optional<RankDump> ReadBoth(StreamPair& r, std::string_view bytes, bool streamed) {
  auto a = r.stream.Read(bytes);
  auto b = r.full.Read(bytes);
  if (!b.ok()) FAIL(b.error().Describe());
  REQUIRE(a.ok());
  CHECK(r.stream.streamed() == streamed);
  CheckSame(*a, *b);
  return std::move(*a);
}

void CheckSamePgs(PgRegistry& a, PgRegistry& b) {
  REQUIRE(a.all().size() == b.all().size());
  for (auto& [name, info] : a.all()) {
    REQUIRE(b.all().count(name) == 1);
    CHECK(info.desc == b.all()[name].desc);
    CHECK(info.members == b.all()[name].members);
  }
}

std::vector<std::string> PickleDumps() {
  std::vector<std::string> out;
  for (const auto& dir : {fs::path(FR_FIXTURES), fs::path(FR_GEN_DIR)}) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::string bytes = SlurpStream(e.path().string());
      if (!bytes.empty() && static_cast<std::uint8_t>(bytes[0]) == 0x80) {
        out.push_back(e.path().string());
      }
    }
  }
  return out;
}

std::string SStr(const std::string& s) {  // BINUNICODE
  std::string out = "X";
  std::uint32_t n = static_cast<std::uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  return out + s;
}

}  // namespace

TEST_CASE("the real and generated pickle dumps are streamed, with the full parser's result") {
  const auto files = PickleDumps();
  REQUIRE(files.size() >= 5 + 7 * 8);  // the device dumps and every generated scenario
  StreamPair r;
  for (const auto& f : files) {
    CAPTURE(f);
    const std::string bytes = SlurpStream(f);
    ReadBoth(r, bytes, true);
    CHECK_FALSE(r.full.streamed());
  }
  CheckSamePgs(r.stream_pgs, r.full_pgs);
}

TEST_CASE("a truncated or corrupted dump falls back to the full parser's error and offset") {
  const std::string bytes =
      SlurpStream(FR_FIXTURES + "/h200-torch2.11-nccl2.28.9/flight_recorder_rank_0.pkl");
  REQUIRE(bytes.size() > 1000);
  StreamPair r;
  for (std::size_t cut : {std::size_t(3), std::size_t(500), bytes.size() - 1}) {
    CAPTURE(cut);
    auto a = r.stream.Read(bytes.substr(0, cut));
    auto b = r.full.Read(bytes.substr(0, cut));
    REQUIRE_FALSE(a.ok());
    REQUIRE_FALSE(b.ok());
    CHECK_FALSE(r.stream.streamed());
    CHECK(a.error().message == b.error().message);
    CHECK(a.error().where == b.error().where);
    CHECK(a.error().message.find("truncated") != std::string::npos);
    CHECK(a.error().where.rfind("byte ", 0) == 0);
  }
  std::string bad = bytes;
  bad[706] = 'c';  // the BINPUT there becomes a GLOBAL: refused
  auto a = r.stream.Read(bad);
  auto b = r.full.Read(bad);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().message == b.error().message);
  CHECK(a.error().where == "byte 706");
  CHECK(a.error().message.find("refused") != std::string::npos);
}

TEST_CASE("shapes the stream reader does not take are read by the full parser") {
  // pg_config's ranks as a list of ints (the stream reader takes the text form only), a memo key
  // stored twice, a POP: each read all the same, as the full parser reads it; the same dump with
  // ranks as text and none of these is streamed.
  const std::string entry = "}q\x02("s + SStr("profiling_name") + SStr("nccl:all_reduce") +
                            SStr("collective_seq_id") + "K\x07"s + SStr("process_group") +
                            SStr("0") + SStr("default_pg") + "\x86u"s;
  auto dump = [&](const std::string& ranks) {
    return "\x80\x02}q\x00("s + SStr("pg_config") + "}(" + SStr("0") + "}(" + SStr("ranks") +
           ranks + "u" + "u" + SStr("entries") + "]q\x01"s + entry + "au.";
  };
  const std::string text = dump(SStr("[0, 1]"));
  std::string twice = text;
  twice.replace(twice.find("}q\x02"s), 3, "}q\x00"s);  // memo key 0 again
  const std::string pop =
      "\x80\x02K\x01"s
      "0" +
      text.substr(2);
  const std::vector<std::string> dumps = {text,
                                          dump("](K\x00K\x01"s
                                               "e"),
                                          twice, pop};
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    CAPTURE(i);
    StreamPair r;
    auto a = ReadBoth(r, dumps[i], i == 0);
    REQUIRE(a->entries.size() == 1);
    CHECK(r.strings.at(a->entries[0].op) == "nccl:all_reduce");
    CHECK(a->entries[0].seq == 7);
    CheckSamePgs(r.stream_pgs, r.full_pgs);
    CHECK(r.stream_pgs.all()["0"].members == std::vector<int>{0, 1});
    CHECK(r.stream_pgs.all()["0"].desc == "default_pg");
  }
}

TEST_CASE("a dump in the pickler's usual form is streamed, keys and values in any order") {
  // The entry written field by field with single SETITEMs, process_group a list, frames shared
  // through the memo, an unknown field with a nested dict: streamed, same as the full parser.
  const std::string frame = "}q\x03("s + SStr("name") + SStr("f") + SStr("filename") +
                            SStr("a.py") + SStr("line") + "K\x05u"s;
  const std::string entry = "}q\x02"s + SStr("state") + SStr("started") + "s" + SStr("extra") +
                            "}(" + SStr("x") + "]u" + "s(" + SStr("frames") + "](" + frame +
                            "h\x03"s + "e" + SStr("process_group") + "](" + SStr("3") + SStr("g") +
                            "e" + SStr("input_sizes") + "](]K\x04"s + "a]K\x05"s + "ae" +
                            SStr("collective_seq_id") + "K\x09u"s;
  const std::string dump = "\x80\x02}q\x00("s + SStr("version") + SStr("2.10") + SStr("entries") +
                           "]q\x01("s + entry + "h\x02"s + "e" + SStr("pg_config") + "}(" +
                           SStr("3") + "}(" + SStr("ranks") + SStr("[4, 5]") + SStr("desc") +
                           SStr("node") + "uu" + "u.";
  StreamPair r;
  auto a = ReadBoth(r, dump, true);
  REQUIRE(a->entries.size() == 2);
  CHECK(a->entries[1].index == 1);
  CHECK(r.strings.at(a->entries[0].shape) == "[[4], [5]]|||");
  CHECK(r.stacks.at(a->entries[0].frames).size() == 2);
  CHECK(a->entries[0].state == State::kStarted);
  CheckSamePgs(r.stream_pgs, r.full_pgs);
  CHECK(r.stream_pgs.all()["3"].members == std::vector<int>{4, 5});
  CHECK(r.stream_pgs.all()["3"].desc == "node");
}

namespace {

// Entries as Python's pickler writes them (protocol 2): each key a str stored in the memo by the
// first entry and referenced after, each value a new object (str + PUT), frames a list of dicts.
struct EntryWriter {
  std::string b = "\x80\x02}q\x00("s;
  std::uint32_t memo = 1;
  std::map<std::string, std::uint32_t> keys;
  std::vector<std::uint32_t> frames_lists;  // the memo key of each entry's frames list

  void Le32(std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }
  std::uint32_t Put() {
    b += 'r';
    Le32(memo);
    return memo++;
  }
  void Get(std::uint32_t k) {
    b += 'j';
    Le32(k);
  }
  void Str(const std::string& s) {
    b += SStr(s);
    Put();
  }
  void Key(const std::string& k) {
    if (auto it = keys.find(k); it != keys.end()) return Get(it->second);
    b += SStr(k);
    keys[k] = Put();
  }
  void Int(std::int32_t v) {
    b += 'J';
    Le32(static_cast<std::uint32_t>(v));
  }
  void Long8(std::int64_t v) {
    b += "\x8a\x08"s;
    b.append(reinterpret_cast<const char*>(&v), 8);
  }
  void Entry(std::int32_t seq, const std::string& op, std::int32_t size,
             const std::string& thread = "pt_main_thread") {
    b += '}';
    Put();
    b += '(';
    Key("frames");
    b += ']';
    frames_lists.push_back(Put());
    b += '(';
    for (int f = 0; f < 2; ++f) {
      b += '}';
      Put();
      b += '(';
      Key("name");
      Str(f == 0 ? op : "train_step");
      Key("filename");
      Str("train.py");
      Key("line");
      b += "K"s + char(10 + f);
      b += 'u';
    }
    b += 'e';
    Key("record_id");
    Int(seq * 3);
    Key("process_group");
    b += ']';
    Put();
    b += '(';
    Str("0");
    Str("default_pg");
    b += 'e';
    Key("collective_seq_id");
    Int(seq);
    Key("thread_name");
    Str(thread);
    Key("profiling_name");
    Str("nccl:" + op);
    Key("time_created_ns");
    Long8(1'790'000'000'000'000'000 + seq * 1000);
    Key("input_sizes");
    b += ']';
    Put();
    b += ']';
    Put();
    Int(size);
    b += "aa";
    Key("state");
    Str(seq % 100 == 6 ? "started" : "completed");
    Key("time_discovered_completed_ns");
    b += 'N';
    Key("is_p2p");
    b += '\x89';
    b += 'u';
  }
  void Begin() {
    b += SStr("version");
    Put();
    Str("2.10");
    b += SStr("entries");
    Put();
    b += ']';
    Put();
    b += '(';
  }
  std::string End() { return b + "eu."; }
};

std::string AlikeDump(int n, std::vector<std::uint32_t>* frames_lists = nullptr) {
  EntryWriter w;
  w.Begin();
  const char* ops[] = {"all_reduce", "all_gather", "broadcast"};
  for (int i = 0; i < n; ++i) w.Entry(i + 1, ops[i % 3], 1 << (i % 5), i % 11 ? "t" : "thread");
  if (frames_lists != nullptr) *frames_lists = w.frames_lists;
  return w.End();
}

}  // namespace

TEST_CASE("entries written alike are read through templates, with the full parser's result") {
  // 300 entries of 3 ops, 5 sizes, 2 states, a skipped field of 2 lengths: all but the first few
  // of each kind come through a template; the seq ids and times are each entry's own.
  const std::string dump = AlikeDump(300);
  StreamPair r;
  auto a = ReadBoth(r, dump, true);
  CHECK(r.stream.templated() >= 250);
  REQUIRE(a->entries.size() == 300);
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    CHECK(a->entries[i].seq == i + 1);
    CHECK(a->entries[i].t_created == 1'790'000'000'000'000'000 + (i + 1) * 1000);
    CHECK(a->entries[i].index == std::uint32_t(i));
  }
  CHECK(r.strings.at(a->entries[4].op) == "nccl:all_gather");
  CHECK(r.strings.at(a->entries[4].shape) == "[[16]]|||");
  CHECK(a->entries[5].state == State::kStarted);
  CHECK(a->entries[6].state == State::kCompleted);
  CheckSamePgs(r.stream_pgs, r.full_pgs);
}

TEST_CASE("an entry that differs from every template where it matters is read the long way") {
  // Entry 200 names another op in its frames and another profiling name: no template has them.
  EntryWriter w;
  w.Begin();
  for (int i = 0; i < 300; ++i) w.Entry(i + 1, i == 200 ? "all_to_all" : "all_reduce", 4);
  const std::string dump = w.End();
  StreamPair r;
  auto a = r.stream.Read(dump);
  auto b = r.full.Read(dump);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(r.stream.streamed());
  CHECK(r.stream.templated() >= 290);
  CHECK(r.stream.templated() < 300);
  CheckSame(*a, *b);
  CHECK(r.strings.at(a->entries[200].op) == "nccl:all_to_all");
  CHECK(r.strings.at(a->entries[201].op) == "nccl:all_reduce");
}

TEST_CASE("what a template would take wrongly gives up to the full parser") {
  std::vector<std::uint32_t> lists;
  const std::string dump = AlikeDump(200, &lists);
  // A memo key stored again inside an entry that matches a template byte for byte otherwise:
  // the stream reader refuses a reused key, so the template must not take it either.
  std::string again = dump;
  const std::size_t last = again.rfind("}r"s);
  REQUIRE(last != std::string::npos);
  std::uint32_t key = 0;
  std::memcpy(&key, again.data() + last + 2, 4);
  const std::uint32_t old_key = lists[10];
  std::memcpy(again.data() + last + 2, &old_key, 4);
  for (const std::string& d : {again}) {
    StreamPair r;
    auto a = ReadBoth(r, d, false);
  }
  // A GET of a memo key a template stored for a container (the 150th entry's frames list) as
  // the last entry's version: the full parser reads it (a list where a str was).
  std::string poison = dump;
  const std::size_t stop = poison.rfind('u');  // the root's SETITEMS
  std::string tail = SStr("comm_lib_version") + "j"s;
  tail.append(reinterpret_cast<const char*>(&lists[150]), 4);
  poison.insert(stop, tail);
  {
    StreamPair r;
    auto a = ReadBoth(r, poison, false);
  }
}

TEST_CASE("a dump cut inside entries read through templates gives the full parser's error") {
  const std::string dump = AlikeDump(100);
  StreamPair r;
  for (std::size_t cut = dump.size() / 2; cut < dump.size(); cut += 997) {
    CAPTURE(cut);
    auto a = r.stream.Read(dump.substr(0, cut));
    auto b = r.full.Read(dump.substr(0, cut));
    REQUIRE_FALSE(a.ok());
    REQUIRE_FALSE(b.ok());
    CHECK(a.error().message == b.error().message);
    CHECK(a.error().where == b.error().where);
  }
}

TEST_CASE("the generated dumps' entries come through templates") {
  std::uint32_t templated = 0, entries = 0;
  StreamPair r;
  for (const auto& f : PickleDumps()) {
    if (f.find("/gen/") == std::string::npos) continue;
    auto a = r.stream.Read(SlurpStream(f));
    REQUIRE(a.ok());
    templated += r.stream.templated();
    entries += static_cast<std::uint32_t>(a->entries.size());
  }
  CAPTURE(templated, entries);
  CHECK(templated * 2 > entries);
}
