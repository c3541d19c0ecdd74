// The version cache: whatever is found at versions.json, DetectVersions returns and rewrites it.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "recipes/version_probe.h"

using namespace sl;
using namespace sl::recipes;

namespace {

struct CacheFixture {
  std::string dir, python, cache;
  CacheFixture() {
    char tmpl[] = "/tmp/sl-version-cache-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    // A stand-in interpreter: prints a sys.path (one folder without torch or NCCL), whatever -c.
    python = dir + "/python";
    std::ofstream(python) << "#!/bin/sh\necho '[\"" << dir << "/site\"]'\n";
    ::chmod(python.c_str(), 0755);
    cache = dir + "/cache";
    std::filesystem::create_directories(cache);
  }
  ~CacheFixture() { std::filesystem::remove_all(dir); }
  std::string Stamp() const {
    struct stat st {};
    ::stat(python.c_str(), &st);
    long long ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    return std::to_string(ns) + ":" + std::to_string(st.st_size);
  }
  Result<Versions> Detect() const {
    DetectOptions o;
    o.python = python;
    o.cache_dir = cache;
    o.system_nccl = dir + "/none/libnccl.so.2";
    return DetectVersions(o, {});
  }
  void WriteCache(const std::string& text) const {
    std::ofstream(cache + "/versions.json") << text;
  }
  // The cache as rewritten: the interpreter's entry holds the probed sys.path.
  void CheckRewritten() const {
    std::ifstream in(cache + "/versions.json");
    REQUIRE(in);
    auto j = nlohmann::json::parse(in, nullptr, false);
    REQUIRE(j.is_object());
    const auto& e = j["syspath:" + python];
    CHECK(e["stamp"] == Stamp());
    CHECK(e["value"] == nlohmann::json::array({dir + "/site"}));
  }
};

}  // namespace

TEST_CASE("a cache entry whose stamp is not a string is ignored and rewritten") {
  CacheFixture f;
  f.WriteCache(R"({"syspath:)" + f.python + R"(": {"stamp": 123, "value": ["/x"]}})");
  auto v = f.Detect();
  REQUIRE(v.ok());
  CHECK_FALSE(v->torch);
  f.CheckRewritten();
}

TEST_CASE("a cache entry with the right stamp but a value of another shape is probed again") {
  CacheFixture f;
  f.WriteCache(R"({"syspath:)" + f.python + R"(": {"stamp": ")" + f.Stamp() +
               R"(", "value": [1, {"a": 2}]}, "nccl:/x": {"stamp": "1:1", "value": 1e300}})");
  auto v = f.Detect();
  REQUIRE(v.ok());
  f.CheckRewritten();
}

TEST_CASE("a cache that is not a JSON object is ignored and rewritten") {
  for (const char* text : {"[1,2]", "{\"syspath:x\": 5", "\"str\"", ""}) {
    INFO(text);
    CacheFixture f;
    f.WriteCache(text);
    REQUIRE(f.Detect().ok());
    f.CheckRewritten();
  }
}

TEST_CASE("a directory where the cache file belongs is replaced by the cache") {
  CacheFixture f;
  std::filesystem::create_directories(f.cache + "/versions.json");
  auto v = f.Detect();
  REQUIRE(v.ok());
  REQUIRE(std::filesystem::is_regular_file(f.cache + "/versions.json"));
  f.CheckRewritten();
  // One that holds files is left alone: detection still works, without a cache.
  std::filesystem::remove(f.cache + "/versions.json");
  std::filesystem::create_directories(f.cache + "/versions.json/keep");
  REQUIRE(f.Detect().ok());
  CHECK(std::filesystem::is_directory(f.cache + "/versions.json/keep"));
  CHECK(std::distance(std::filesystem::directory_iterator(f.cache),
                      std::filesystem::directory_iterator{}) == 1);  // no tmp file left behind
}
