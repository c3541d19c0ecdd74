#include "watchdog/watch/json_scan.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace sl::watch {
namespace {

using nlohmann::json;

// Writes every SAX event as text: the scanner and nlohmann must write the same log (numbers as
// doubles: the scanner hands every number over as one).
struct Log {
  std::string text{};
  int stop_after = -1;  // return false from the n-th event (-1: never)
  int events = 0;
  bool Put(const std::string& e) {
    text += e + ";";
    return stop_after < 0 || ++events <= stop_after;
  }
  std::string Num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  static std::string Dump(const std::string& v) {
    return json(v).dump(-1, ' ', true, json::error_handler_t::replace);
  }
  bool null() { return Put("null"); }
  bool boolean(bool v) { return Put(v ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) { return Put("n" + Num(static_cast<double>(v))); }
  bool number_unsigned(json::number_unsigned_t v) { return Put("n" + Num(static_cast<double>(v))); }
  bool number_float(double v, const std::string&) { return Put("n" + Num(v)); }
  bool string(std::string& v) { return Put("s" + Dump(v)); }
  bool binary(json::binary_t&) { return Put("binary"); }
  bool start_object(std::size_t) { return Put("{"); }
  bool end_object() { return Put("}"); }
  bool start_array(std::size_t) { return Put("["); }
  bool end_array() { return Put("]"); }
  bool key(std::string& k) { return Put("k" + Dump(k)); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }
};

// The scanner's result and events against nlohmann's for `text`.
void Same(const std::string& text, int stop_after = -1) {
  Log ours, theirs;
  ours.stop_after = theirs.stop_after = stop_after;
  const bool ok = ScanJson(text, &ours);
  const bool want = json::sax_parse(text, &theirs);
  INFO("text: " << json(text).dump(-1, ' ', true, json::error_handler_t::replace));
  CHECK(ok == want);
  CHECK(ours.text == theirs.text);
}

const char* const kLive =
    "{\"schema\": \"safe-launch.live/1\", \"phase\": \"running\", \"phase_since_unix\": "
    "1796284800.123456, \"updated_unix\": 1796284830.654321, \"last_output_unix\": 1.5e9, "
    "\"lines\": {\"stdout\": 1796284830, \"stderr\": 3}, \"tail\": [\"step 41\", \"a\\u00e9\\n\"], "
    "\"last_event\": {\"signature\": \"nccl.init_done\", \"category\": \"info\", \"ok\": true, "
    "\"none\": null, \"neg\": -0.25E-3}}\n";

TEST_CASE("the JSON scanner accepts and reports what nlohmann's SAX parser does") {
  for (const char* text : {
           "{}",
           "[]",
           " { } ",
           "{\"a\":[]}",
           "[[[]],{}]",
           "\xEF\xBB\xBF{}",
           "\xEF\xBB{}",
           "",
           "   ",
           "{",
           "}",
           "[1,]",
           "{,}",
           "{\"a\":1,}",
           "{\"a\" 1}",
           "{\"a\":}",
           "{1:2}",
           "[1 2]",
           "{}{}",
           "{} x",
           "{}\n\t\r ",
           "[01]",
           "[-]",
           "[1.]",
           "[.5]",
           "[1e]",
           "[1e+]",
           "[-0]",
           "[1E+2]",
           "[1e-400]",
           "[1e999]",
           "[-1e999]",
           "[123456789012345678901234567890]",
           "[18446744073709551615]",
           "[-9223372036854775808]",
           "[tru]",
           "[nul]",
           "[True]",
           "[\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\"]",
           "[\"\\ud83d\"]",
           "[\"\\ude00\"]",
           "[\"\\ud83d\\u0041\"]",
           "[\"\\u12\"]",
           "[\"\\x\"]",
           "[\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"]",
           "[\"\t\"]",
           "[\"\x7f\"]",
           "[\"\xc3\xa9\"]",
           "[\"\xc3\x28\"]",
           "[\"\xc0\xaf\"]",
           "[\"\xe0\x80\xaf\"]",
           "[\"\xed\xa0\x80\"]",
           "[\"\xf4\x90\x80\x80\"]",
           "[\"\xf0\x9f\x98\x80\"]",
           "[\"\xe2\x82\"]",
           "[\"\xff\"]",
           "\xff\xfe{\"phase\": 1}",
           "\"top\"",
           "42",
           "null",
           "{\"a\":{\"b\":[1,{\"c\":null}]},\"d\":false}",
           "[\"abc",
           "[\"\\u0000\"]",
           "[1.5e3, -2, 0.0]",
       }) {
    Same(text);
  }
  Same(std::string("[\"a\0b\"]", 7));
  Same(std::string("{\"a\":1}\0", 8));
  Same(std::string("{\"a\":1} \0x]", 11));
  Same(std::string("{\"a\":\0}", 7));
}

TEST_CASE("every cut of a live.json and bytes changed at random scan as nlohmann parses them") {
  const std::string live = kLive;
  for (std::size_t n = 0; n <= live.size(); ++n) Same(live.substr(0, n));
  std::mt19937 rng(28);
  const std::string bytes = "{}[]\",:\\.-+eE0123456789 tfnu\xc3\xa9\xff";
  for (int round = 0; round < 3000; ++round) {
    std::string t = live;
    for (int k = 0; k < 1 + round % 3; ++k) {
      t[rng() % t.size()] = bytes[rng() % bytes.size()];
    }
    Same(t);
  }
}

TEST_CASE("a handler that returns false stops the scan there, as it stops nlohmann") {
  for (int n = 0; n < 12; ++n) Same(kLive, n);
}

TEST_CASE("nesting 200000 deep needs no stack") {
  Same(std::string(200000, '[') + std::string(200000, ']'));
  Same(std::string(200000, '['));
}

}  // namespace
}  // namespace sl::watch
