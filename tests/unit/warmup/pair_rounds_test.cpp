// Pair rounds: the schedule and the naming of the slow node (warmup/pair_rounds.h).
#include "warmup/pair_rounds.h"

#include <catch2/catch.hpp>
#include <set>

using namespace sl;
using namespace sl::warmup;

namespace {

// One measurement per pair and round of the schedule; `bw(a, b)` gives the figure.
template <typename Fn>
std::vector<PairMeasure> Measure(int nnodes, int rounds, Fn bw, int local_ranks = 1) {
  std::vector<PairMeasure> out;
  auto schedule = PairSchedule(nnodes, rounds);
  for (int r = 0; r < static_cast<int>(schedule.size()); ++r)
    for (const auto& [a, b] : schedule[static_cast<std::size_t>(r)])
      for (int l = 0; l < local_ranks; ++l)
        for (int n : {a, b})
          out.push_back({r, n, n == a ? b : a, l, 1u << 20, bw(a, b, l), true, ""});
  return out;
}

}  // namespace

TEST_CASE("every round is a matching and partners differ from round to round") {
  for (int n : {2, 3, 4, 5, 16}) {
    INFO(n);
    auto s = PairSchedule(n, 3);
    CHECK(static_cast<int>(s.size()) == std::min(3, n % 2 ? n : n - 1));
    std::set<std::pair<int, int>> all;
    for (const auto& round : s) {
      std::set<int> seen;
      for (const auto& [a, b] : round) {
        CHECK(a < b);
        CHECK(b < n);
        CHECK(seen.insert(a).second);
        CHECK(seen.insert(b).second);
        CHECK(all.insert({a, b}).second);  // no pair twice
      }
      CHECK(static_cast<int>(seen.size()) >= n - 1);  // at most one node sits out
    }
  }
  CHECK(PartnerIn({{0, 3}, {1, 2}}, 2) == 1);
  CHECK(PartnerIn({{0, 3}}, 1) == -1);
}

TEST_CASE("a node slow in every pair it is part of is named, not its partners") {
  auto m = Measure(4, 3, [](int a, int b, int) { return (a == 2 || b == 2) ? 0.1 : 1.0; });
  auto a = AnalysePairs(m, {{2, "node 2 (c)"}}, 0.7);
  REQUIRE(a.slow_nodes == std::vector<int>{2});
  CHECK(a.slow_links.empty());
  CHECK(a.reference_gbps == Approx(1.0));
  REQUIRE(a.findings.size() == 1);
  CHECK(a.findings[0].outcome == Outcome::kWarn);
  CHECK(a.findings[0].entity == "node 2 (c)");
  CHECK(a.findings[0].message.find("slow in every pair it is part of") != std::string::npos);
  CHECK(a.per_node[2][1u << 20] == Approx(0.1));
  CHECK(a.per_node[0][1u << 20] == Approx(1.0));  // median of 1.0, 1.0, 0.1
}

TEST_CASE("one slow rail on a node shows: a pair is as fast as its slowest local rank") {
  auto m = Measure(
      4, 3, [](int a, int b, int l) { return (l == 1 && (a == 3 || b == 3)) ? 0.2 : 1.0; }, 2);
  auto a = AnalysePairs(m, {}, 0.7);
  CHECK(a.slow_nodes == std::vector<int>{3});
}

TEST_CASE("a slow pair between fast nodes names the link") {
  auto m = Measure(6, 3, [](int a, int b, int) { return (a == 1 && b == 4) ? 0.2 : 1.0; });
  auto s = PairSchedule(6, 3);
  bool scheduled = false;
  for (const auto& r : s)
    for (const auto& p : r) scheduled |= p == std::make_pair(1, 4);
  REQUIRE(scheduled);  // round 1 of the circle schedule pairs 1 with 4
  auto a = AnalysePairs(m, {}, 0.7);
  CHECK(a.slow_nodes.empty());
  REQUIRE(a.slow_links.size() == 1);
  CHECK(a.slow_links[0] == std::make_pair(1, 4));
  CHECK(a.findings[0].entity == "node 1 <-> node 4");
}

TEST_CASE("two nodes cannot be told apart, a uniformly slow fabric names nobody") {
  auto two = AnalysePairs(Measure(2, 3, [](int, int, int) { return 0.1; }), {}, 0.7);
  CHECK(two.slow_nodes.empty());
  CHECK(two.findings.back().outcome == Outcome::kSkip);
  auto flat = AnalysePairs(Measure(4, 3, [](int, int, int) { return 0.1; }), {}, 0.7);
  CHECK(flat.slow_nodes.empty());
  CHECK(flat.findings.back().outcome == Outcome::kPass);
  auto failed = Measure(4, 1, [](int, int, int) { return 1.0; });
  failed[0].ok = false;
  failed[0].error = "gloo timeout";
  auto f = AnalysePairs(failed, {}, 0.7);
  CHECK(f.findings[0].message.find("gloo timeout") != std::string::npos);
}
