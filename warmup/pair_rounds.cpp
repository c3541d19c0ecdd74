#include "warmup/pair_rounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/strings.h"

namespace sl::warmup {

std::vector<std::vector<std::pair<int, int>>> PairSchedule(int nnodes, int rounds) {
  std::vector<std::vector<std::pair<int, int>>> out;
  if (nnodes < 2 || rounds <= 0) return out;
  // Circle method: fix the last slot, rotate the others; an odd count gets a ghost slot whose
  // partner sits out.
  const int n = nnodes % 2 ? nnodes + 1 : nnodes;
  rounds = std::min(rounds, n - 1);
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::pair<int, int>> round;
    auto slot = [&](int i) { return i == n - 1 ? n - 1 : (i + r) % (n - 1); };
    for (int i = 0; i < n / 2; ++i) {
      int a = slot(i), b = slot(n - 1 - i);
      if (a >= nnodes || b >= nnodes) continue;  // paired with the ghost: sits out
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(round.begin(), round.end());
    out.push_back(std::move(round));
  }
  return out;
}

int PartnerIn(const std::vector<std::pair<int, int>>& round, int node) {
  for (const auto& [a, b] : round) {
    if (a == node) return b;
    if (b == node) return a;
  }
  return -1;
}

namespace {

double RoundMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Label(const std::map<int, std::string>& labels, int node) {
  auto it = labels.find(node);
  return it != labels.end() ? it->second : "node " + std::to_string(node);
}

Finding PairFinding(std::string entity, Outcome o, std::string message, std::string fix,
                    std::string condition = "") {
  Finding f = MakeFinding("warmup.bandwidth.pairs", std::move(entity), o, std::move(message),
                          std::move(fix));
  if (!condition.empty()) f.code = "warmup.bandwidth.pairs/" + condition;
  return f;
}

// Pair figures at the largest size each pair measured: the slowest of its local ranks.
std::vector<PairFigure> Figures(const std::vector<PairMeasure>& measures,
                                std::vector<std::string>* errors) {
  std::map<std::tuple<int, int, int>, std::pair<std::uint64_t, double>> by_pair;
  for (const auto& m : measures) {
    if (!m.ok) {
      errors->push_back(fmt::format("round {} node {} with node {}: {}", m.round + 1, m.node,
                                    m.partner, m.error));
      continue;
    }
    auto key = std::make_tuple(m.round, std::min(m.node, m.partner), std::max(m.node, m.partner));
    auto [it, fresh] = by_pair.try_emplace(key, m.bytes, m.busbw_gbps);
    if (fresh) continue;
    auto& [bytes, busbw] = it->second;
    if (m.bytes > bytes) {
      bytes = m.bytes;
      busbw = m.busbw_gbps;
    } else if (m.bytes == bytes) {
      busbw = std::min(busbw, m.busbw_gbps);
    }
  }
  std::vector<PairFigure> out;
  for (const auto& [key, v] : by_pair)
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), v.second, false});
  return out;
}

}  // namespace

PairAnalysis AnalysePairs(const std::vector<PairMeasure>& measures,
                          const std::map<int, std::string>& labels, double fraction) {
  PairAnalysis a;
  std::vector<std::string> errors;
  a.pairs = Figures(measures, &errors);
  std::map<int, std::map<std::uint64_t, std::vector<double>>> samples;
  for (const auto& m : measures)
    if (m.ok) samples[m.node][m.bytes].push_back(m.busbw_gbps);
  for (auto& [node, sizes] : samples)
    for (auto& [bytes, v] : sizes) a.per_node[node][bytes] = RoundMedian(v);
  for (const auto& e : errors)
    a.findings.push_back(
        PairFinding("pairs", Outcome::kWarn, "pair test failed: " + e, "", "pair_failed"));
  if (a.pairs.size() < 2) {
    a.findings.push_back(PairFinding(
        "pairs", Outcome::kSkip,
        "fewer than two pairs measured: a pair test cannot tell which of two nodes is slow", ""));
    return a;
  }
  std::vector<double> v;
  for (const auto& p : a.pairs) v.push_back(p.busbw_gbps);
  std::sort(v.begin(), v.end());
  a.reference_gbps = v[(v.size() - 1) * 3 / 4];
  std::map<int, std::pair<int, int>> per_node;  // node -> (pairs, slow pairs)
  for (auto& p : a.pairs) {
    p.slow = p.busbw_gbps < fraction * a.reference_gbps;
    for (int n : {p.a, p.b}) {
      per_node[n].first += 1;
      per_node[n].second += p.slow;
    }
  }
  std::set<int> slow;
  for (const auto& [n, c] : per_node)
    if (c.first >= 2 && c.second == c.first) slow.insert(n);
  // Everyone slow everywhere is a fabric-wide problem, not one node.
  if (slow.size() == per_node.size()) slow.clear();
  a.slow_nodes.assign(slow.begin(), slow.end());
  for (const auto& p : a.pairs)
    if (p.slow && !slow.count(p.a) && !slow.count(p.b)) a.slow_links.emplace_back(p.a, p.b);
  for (int n : a.slow_nodes) {
    std::vector<std::string> seen;
    for (const auto& p : a.pairs)
      if (p.a == n || p.b == n)
        seen.push_back(fmt::format("{:.2f} with node {}", p.busbw_gbps, p.a == n ? p.b : p.a));
    a.findings.push_back(PairFinding(
        // A warn: a slow node makes the job slow, not wrong (bench exits 1 on it; run starts).
        Label(labels, n), Outcome::kWarn,
        fmt::format("{} is slow in every pair it is part of: {} GB/s where a healthy pair reaches "
                    "{:.2f} GB/s",
                    Label(labels, n), Join(seen, ", "), a.reference_gbps),
        "look at " + Label(labels, n) +
            "'s ports (rate, errors: safe-launch preflight), cable and switch port; drain it",
        "slow_node"));
  }
  for (const auto& [x, y] : a.slow_links) {
    double bw = 0;
    for (const auto& p : a.pairs)
      if (p.a == x && p.b == y) bw = p.busbw_gbps;
    a.findings.push_back(PairFinding(
        Label(labels, x) + " <-> " + Label(labels, y), Outcome::kWarn,
        fmt::format("the link between {} and {} is slow ({:.2f} GB/s, a healthy pair {:.2f}) while "
                    "both are fast with other nodes",
                    Label(labels, x), Label(labels, y), bw, a.reference_gbps),
        "look at the switch path between the two (routing, a congested or degraded uplink)",
        "slow_link"));
  }
  if (a.slow_nodes.empty() && a.slow_links.empty())
    a.findings.push_back(PairFinding(
        "pairs", Outcome::kPass,
        fmt::format("{} pair(s) in {} round(s) within {:.2f} x {:.2f} GB/s", a.pairs.size(),
                    a.pairs.empty() ? 0 : a.pairs.back().round + 1, fraction, a.reference_gbps),
        ""));
  return a;
}

nlohmann::json PairAnalysisJson(const PairAnalysis& a) {
  nlohmann::json per_node = nlohmann::json::array();
  for (const auto& [node, sizes] : a.per_node) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& [bytes, bw] : sizes) points.push_back({{"bytes", bytes}, {"busbw_gbps", bw}});
    per_node.push_back({{"node_rank", node}, {"points", points}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (const auto& [x, y] : a.slow_links) links.push_back({x, y});
  return {{"reference_gbps", a.reference_gbps},
          {"pairs", a.pairs},
          {"slow_nodes", a.slow_nodes},
          {"slow_links", links},
          {"per_node", per_node}};
}

}  // namespace sl::warmup
