#include "launcher/hostlist.h"

#include <catch2/catch.hpp>

using sl::launcher::ExpandHostlist;
using V = std::vector<std::string>;

TEST_CASE("a plain host list splits on commas") {
  auto h = ExpandHostlist("n1,n2,n3");
  REQUIRE(h.ok());
  CHECK(*h == V{"n1", "n2", "n3"});
}

TEST_CASE("bracket ranges expand with zero padding and single numbers") {
  auto h = ExpandHostlist("gpu[01-04,07]");
  REQUIRE(h.ok());
  CHECK(*h == V{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"});
}

TEST_CASE("padding follows the first bound across a digit boundary") {
  auto h = ExpandHostlist("n[08-11]");
  REQUIRE(h.ok());
  CHECK(*h == V{"n08", "n09", "n10", "n11"});
}

TEST_CASE("a suffix after the bracket and a second item are kept") {
  auto h = ExpandHostlist("a[1-2]-ib,b3");
  REQUIRE(h.ok());
  CHECK(*h == V{"a1-ib", "a2-ib", "b3"});
}

TEST_CASE("several bracket groups in one name multiply out in order") {
  auto h = ExpandHostlist("r[1-2]n[1,3]");
  REQUIRE(h.ok());
  CHECK(*h == V{"r1n1", "r1n3", "r2n1", "r2n3"});
}

TEST_CASE("commas inside brackets do not split items") {
  auto h = ExpandHostlist("x[1,3],y[5-6]");
  REQUIRE(h.ok());
  CHECK(*h == V{"x1", "x3", "y5", "y6"});
}

TEST_CASE("malformed host lists are errors naming the bad part") {
  for (const char* bad : {"gpu[01-", "gpu]1", "gpu[4-2]", "gpu[a-b]", "n1,,n2", "gpu[]", ""}) {
    INFO(bad);
    auto h = ExpandHostlist(bad);
    REQUIRE_FALSE(h.ok());
    CHECK(h.error().where == "SLURM_JOB_NODELIST");
  }
  auto e = ExpandHostlist("gpu[4-2]");
  CHECK(e.error().message.find("4-2") != std::string::npos);
}

TEST_CASE("absurdly large ranges are refused instead of exhausting memory") {
  auto h = ExpandHostlist("n[1-999999999]");
  REQUIRE_FALSE(h.ok());
  CHECK(h.error().message.find("more than") != std::string::npos);
}
