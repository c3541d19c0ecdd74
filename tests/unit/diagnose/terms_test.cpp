// The vocabulary's terms (diagnose/catalog/terms.inc) as data, and the lookup the engine uses.
#include "diagnose/terms.h"

#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <string>

using namespace sl::diagnose;

TEST_CASE("every term has an id, a text and a provenance of the catalog's form") {
  // "<project> <file>... <range>", as catalog rows cite their sources.
  const std::regex provenance(R"(^[a-z][a-z0-9-]* \S+.*\b(\d+\.\d+|\d+\.x|\d+-\d+|\d{4}-\d{4})\b)");
  std::set<std::string> texts;
  for (const Term& t : Terms()) {
    INFO(t.text);
    CHECK(!t.id.empty());
    CHECK(t.text.size() >= 3);  // shorter texts would occur in any line
    CHECK(std::regex_search(std::string(t.provenance), provenance));
    CHECK(texts.insert(std::string(t.text)).second);  // each text once
  }
  CHECK(Terms().size() >= 100);
}

TEST_CASE("TermsIn names each concept once, in the table's order, case as printed") {
  const auto ids = TermsIn(
      "UCX ERROR mlx5_0: ibv_create_qp() failed: Cannot allocate memory. Please set max locked "
      "memory (ulimit -l) to 'unlimited' (current: 64 kbytes); ENOMEM again");
  const std::set<std::string_view> got(ids.begin(), ids.end());
  CHECK(ids.size() == got.size());  // "memlock" twice (locked memory, ulimit -l): once
  CHECK(got.count("memlock") == 1);
  CHECK(got.count("enomem") == 1);
  CHECK(got.count("verbs_qp") == 1);
  CHECK(got.count("ib_device") == 1);
  CHECK(got.count("ucx") == 1);
  CHECK(got.count("gid") == 0);
  CHECK(TermsIn("all ranks finished the step").empty());
  CHECK(TermsIn("cannot allocate MEMORY").empty());  // case matters: not strerror's text
}
