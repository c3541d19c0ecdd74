// The cause vocabulary has one home (common/cause.cpp) and one text for people (doc/causes.md):
// they must say the same.
#include "common/cause.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/test_paths.h"

namespace {

struct DocCause {
  std::string name, meaning, fix, decide;
};

// "## `name`" headings, each followed by "- cause: ", "- fix: " and "- decide: " lines.
std::vector<DocCause> ReadDoc(const std::string& path) {
  std::ifstream in(path);
  std::vector<DocCause> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("## `", 0) == 0 && line.size() > 5) {
      out.push_back({line.substr(4, line.size() - 5), "", "", ""});
    } else if (!out.empty()) {
      auto take = [&line](const char* key, std::string* slot) {
        const std::string k = key;
        if (line.rfind(k, 0) == 0) *slot = line.substr(k.size());
      };
      take("- cause: ", &out.back().meaning);
      take("- fix: ", &out.back().fix);
      take("- decide: ", &out.back().decide);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("doc/causes.md lists the vocabulary's categories in order with the same text") {
  std::vector<DocCause> doc = ReadDoc(SL_SOURCE_DIR + "/doc/causes.md");
  REQUIRE(!doc.empty());
  REQUIRE(doc.back().name == "unknown");
  doc.pop_back();
  REQUIRE(doc.size() == sl::Causes().size());
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const sl::CauseInfo& c = sl::Causes()[i];
    INFO(c.name);
    CHECK(doc[i].name == c.name);
    CHECK(doc[i].meaning == c.meaning);
    CHECK(doc[i].fix == c.fix);
    CHECK(doc[i].decide == c.decide);
  }
}

TEST_CASE("a symptom or unknown is not a cause, every cause has its texts") {
  CHECK(sl::FindCause("gid_index") != nullptr);
  CHECK(sl::FindCause("collective_timeout") == nullptr);
  CHECK(sl::FindCause("unknown") == nullptr);
  CHECK(sl::CauseIndex("gid_index") == 0);
  CHECK(sl::CauseIndex("unknown") == sl::Causes().size());
  for (const sl::CauseInfo& c : sl::Causes()) {
    INFO(c.name);
    CHECK(!c.meaning.empty());
    CHECK(!c.fix.empty());
    CHECK(!c.decide.empty());
  }
}
