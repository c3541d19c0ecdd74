// safe-launch-warmup: one process per local rank, started by `safe-launch run` (warmup_phase.h).
//   safe-launch-warmup --plan PLAN.json --local-rank N --out RESULT.json
// The protocol over the store (keys under "sl-warmup/<job id>/", values HMAC-tagged with the
// job's key, store_auth.h; a value without a valid tag is refused and named):
//   counter "claims/<rank>", arrive/<rank>/<n>   every rank, on connecting (n = its claim number,
//                                                so a second process with that rank is seen)
//   facts/<node>,  counter "facts"        local rank 0 of each node: its NodeReport and layout
//   counter "arrived"                     every rank (a wake-up hint for rank 0, never proof)
//   verdict                               rank 0, after comparing the nodes (or naming the absent)
//   result/<rank>, counter "results"      every rank, after the all_reduce and the sweep
//   pairs                                 rank 0: whether (and which) pair rounds run
//   pair/<rank>                           every rank: its pair measurements (when they ran)
//   report                                rank 0: the report for the other nodes (NodesReport:
//                                         bounded; node 0's warmup.json holds the whole one)
//   counter "done"                        every rank but 0, so rank 0 keeps the store up until read
// Every wait is bounded by the plan's deadline; rank 0 keeps a reserve to publish what it knows.
// This file is torch-free; libtorch stays behind backend.h.
#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/exit_codes.h"
#include "common/file_writer.h"
#include "common/finding.h"
#include "common/json_text.h"
#include "warmup/bandwidth.h"
#include "warmup/compare.h"
#include "warmup/pair_rounds.h"
#include "warmup/protocol.h"
#include "warmup/store_auth.h"
#include "warmup/torch/backend.h"

namespace sl::warmup {
namespace {

using nlohmann::json;

// How long after the store came up node 0 keeps listening for claims before its verdict (see
// WaitForArrivals).
constexpr double kClaimSettleMs = 1500;

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Rank {
 public:
  Rank(WarmupPlan plan, int local_rank) : plan_(std::move(plan)), local_rank_(local_rank) {
    rank_ = plan_.node_rank * plan_.nproc_per_node + local_rank_;
    result_.rank = rank_;
    result_.node_rank = plan_.node_rank;
    result_.local_rank = local_rank_;
    result_.host = plan_.node.node_name;
    result_.timings.spawn = plan_.spawn_unix_ms;
    result_.timings.start = NowMs();
    double total = plan_.deadline_unix_ms - plan_.spawn_unix_ms;
    // Rank 0 stops waiting this long before the deadline so it can still publish the verdict.
    reserve_ms_ = std::clamp(total * 0.15, 200.0, 3000.0);
    // The other ranks poll rank 0's store for the verdict and the report: their backoff grows to
    // about 1 ms per rank of the job (50 ms to 1 s), so that all of them together ask about a
    // thousand times a second whatever the size -- at 1024 nodes a 50 ms cap was 20000 requests
    // a second, and rank 0's own reads waited behind them until the others' deadline
    // (bench/scale.sh). Rank 0 keeps 50 ms: it is the one reading everyone's arrival.
    poll_cap_ms_ = rank_ == 0 ? 50 : std::clamp(plan_.World(), 50, 1000);
  }

  // Returns the process exit status; `out` receives {"result": ..., "report": ...}.
  int Run(json* out) {
    int status = Protocol();
    result_.timings.end = NowMs();
    (*out)["result"] = result_;
    if (!report_.is_null()) (*out)["report"] = report_;
    if (comm_) comm_->Abort();
    if (status != 0) return status;
    return report_.is_null() || report_.value("verdict", "fail") == "fail" ? 1 : 0;
  }

 private:
  double RemainingMs(double reserve = 0) const {
    return plan_.deadline_unix_ms - reserve - NowMs();
  }
  std::chrono::milliseconds Timeout(double reserve = 0) const {
    return std::chrono::milliseconds(
        static_cast<std::int64_t>(std::max(RemainingMs(reserve), 50.0)));
  }
  std::string Where() const { return plan_.store_host + ":" + std::to_string(plan_.store_port); }

  // Polls until `done()` or the deadline (less `reserve`); false on expiry.
  template <typename Fn>
  bool PollUntil(Fn&& done, double reserve) {
    int sleep_ms = 2;
    while (true) {
      if (done()) return true;
      if (RemainingMs(reserve) <= 0) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      sleep_ms = std::min(sleep_ms * 2, poll_cap_ms_);
    }
  }
  std::int64_t Counter(const std::string& key) {
    auto v = store_->Add(key, 0);
    return v.ok() ? *v : -1;
  }
  // A tagged value: nullopt while absent, refused (the reason lands in `refused`) or when the
  // store cannot be read (a store error is not a refusal: node 0 may simply have gone).
  std::optional<json> GetJson(const std::string& key, std::string* refused = nullptr) {
    auto v = store_->Get(key);
    if (!v.ok() || v->state == AuthStore::Value::State::kAbsent) return std::nullopt;
    if (v->state == AuthStore::Value::State::kRefused) {
      if (refused) *refused = v->text;
      return std::nullopt;
    }
    try {
      return json::parse(v->text);
    } catch (const std::exception& e) {
      if (refused) *refused = "'" + store_->FullKey(key) + "' is not JSON: " + e.what();
      return std::nullopt;
    }
  }

  int Protocol() {
    TorchInfo info = QueryTorch();
    plan_.node.torch_version = info.torch_version;
    plan_.node.nccl_version = info.nccl_version;

    options_.store_host = plan_.store_host;
    options_.store_port = plan_.store_port;
    options_.local_address = plan_.local_address;
    options_.rank = rank_;
    options_.world = plan_.World();
    options_.local_rank = local_rank_;
    options_.backend = plan_.backend;
    options_.timeout = Timeout(rank_ == 0 ? reserve_ms_ : 0);
    // Rank 0 connects to the store it hosts: instant, but libtorch refuses a timeout near 0,
    // which is what is left when loading libtorch ate the budget on a busy node.
    if (rank_ == 0) options_.timeout = std::max(options_.timeout, std::chrono::milliseconds(2000));

    auto store = ConnectStore(options_);
    if (!store.ok()) {
      result_.error =
          rank_ == 0
              ? "could not host the warm-up store at " + Where() + ": " + store.error().Describe()
              : "could not reach the warm-up store at " + Where() + " (hosted by node 0, rank 0) " +
                    "within the timeout: " + store.error().Describe() +
                    " -- node 0 never started its warm-up, or this node cannot reach that address";
      return 1;
    }
    raw_store_ = std::move(*store);
    store_ = std::make_unique<AuthStore>(*raw_store_, plan_.auth);
    result_.timings.store = NowMs();

    auto claim = store_->Add("claims/" + std::to_string(rank_), 1);
    if (!claim.ok()) return Fail(claim.error().Describe());
    ArrivalRecord arrive;
    arrive.rank = rank_;
    arrive.node_rank = plan_.node_rank;
    arrive.local_rank = local_rank_;
    arrive.nnodes = plan_.nnodes;
    arrive.nproc_per_node = plan_.nproc_per_node;
    arrive.host = plan_.node.node_name;
    arrive.address = plan_.local_address;
    arrive.pid = static_cast<int>(::getpid());
    arrive.t_ms = result_.timings.store;
    std::string arrive_key = "arrive/" + std::to_string(rank_) + "/" + std::to_string(*claim);
    if (auto s = store_->Set(arrive_key, JsonText(json(arrive), -1)); !s.ok())
      return Fail(s.error().Describe());
    if (*claim > 1) return RefuseSecondClaim(arrive, *claim);
    if (local_rank_ == 0) {
      NodeLayout layout{plan_.node_rank, plan_.nnodes, plan_.nproc_per_node, plan_.node.node_name};
      json facts = {{"report", plan_.node}, {"layout", layout}};
      if (auto s = store_->Set("facts/" + std::to_string(plan_.node_rank), JsonText(facts, -1));
          !s.ok())
        return Fail(s.error().Describe());
      if (auto s = store_->Add("facts", 1); !s.ok()) return Fail(s.error().Describe());
    }
    if (auto s = store_->Add("arrived", 1); !s.ok()) return Fail(s.error().Describe());

    return rank_ == 0 ? Coordinate() : Follow();
  }

  int Fail(const std::string& why) {
    result_.error = why;
    return 1;
  }

  // A second process on this rank (the same --node-rank twice): refused at once, naming the
  // first claimant, instead of waiting for a verdict or joining a group whose rank is taken (it
  // would hang to the deadline). Its facts are never published; node 0 reads the claim and
  // fails the warm-up (ClaimFindings), and this process counts itself done so node 0 does not
  // wait for it.
  int RefuseSecondClaim(const ArrivalRecord& me, std::int64_t claim) {
    (void)store_->Add("arrived", 1);  // wakes rank 0, which names both claimants
    const std::string first_key = "arrive/" + std::to_string(rank_) + "/1";
    std::optional<ArrivalRecord> first;
    // The first claim's record follows its counter by one store call: wait briefly, not for
    // the deadline.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!first && std::chrono::steady_clock::now() < until) {
      if (auto a = GetJson(first_key)) {
        try {
          first = a->get<ArrivalRecord>();
        } catch (const std::exception&) {
          break;
        }
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    (void)store_->Add("done", 1);
    auto who = [](const ArrivalRecord& a) {
      return fmt::format("{} ({}, pid {})", a.host.empty() ? "?" : a.host,
                         a.address.empty() ? "address unknown" : a.address, a.pid);
    };
    return Fail(fmt::format(
        "two processes claim node {}: hosts {} and {} -- the first claimed rank {}; this "
        "process (claim {}) is refused at once, and node 0 will not start the job; give every "
        "node its own --node-rank (or SLURM_NODEID) and stop the stray safe-launch",
        plan_.node_rank, first ? who(*first) : "? (its record is unreadable)", who(me), rank_,
        claim));
  }

  // Reads the claims on every rank not read yet (claim n of rank r is "arrive/r/n"). A claim
  // whose counter is up but whose record is absent is retried next time without holding up the
  // ones after it: a process that died between the two, or a bumped counter, hides no one.
  // `unclaimed_only`: only ranks without a valid claim yet -- the polls while ranks arrive, so
  // that each costs the ranks still missing, not the whole world (bench/scale.sh: at 512 nodes
  // the full scan on every arrival was most of node 0's work); a full scan runs before the
  // verdict, so a second claimant is still named.
  void ReadClaims(bool unclaimed_only = false) {
    for (int r = 0; r < plan_.World(); ++r) {
      if (unclaimed_only && !claims_[r].valid.empty()) continue;
      std::int64_t count = Counter("claims/" + std::to_string(r));
      std::set<std::int64_t>& done = claims_read_[r];
      RankClaims& c = claims_[r];
      for (std::int64_t n = 1; n <= count; ++n) {
        if (done.count(n)) continue;
        std::string refused;
        auto a = GetJson("arrive/" + std::to_string(r) + "/" + std::to_string(n), &refused);
        if (a) {
          try {
            c.valid.push_back(a->get<ArrivalRecord>());
          } catch (const std::exception& e) {
            c.refused.push_back(std::string("unreadable arrival record: ") + e.what());
          }
        } else if (!refused.empty()) {
          c.refused.push_back(refused);
        } else {
          continue;  // counted but not written (yet)
        }
        done.insert(n);
      }
    }
  }

  // Reads each node's published facts and layout not read yet; refusals are kept per node.
  void ReadFacts() {
    for (int n = 0; n < plan_.nnodes; ++n) {
      if (reports_.count(n)) continue;
      std::string refused;
      auto v = GetJson("facts/" + std::to_string(n), &refused);
      if (!v) {
        if (!refused.empty()) facts_refused_[n] = refused;
        continue;
      }
      try {
        reports_[n] = v->at("report").get<NodeReport>();
        layouts_[n] = v->at("layout").get<NodeLayout>();
        facts_refused_.erase(n);
      } catch (const std::exception& e) {
        facts_refused_[n] = std::string("unreadable facts: ") + e.what();
      }
    }
  }

  bool EveryoneHere() const {
    for (int r = 0; r < plan_.World(); ++r) {
      auto it = claims_.find(r);
      if (it == claims_.end() || it->second.valid.empty()) return false;
    }
    return static_cast<int>(reports_.size()) >= plan_.nnodes;
  }

  // Waits for every rank's claim and every node's facts; stops at once on a layout mismatch.
  bool WaitForArrivals() {
    std::int64_t seen = -1;
    auto gather = [&] {
      std::int64_t now = Counter("arrived");
      if (now == seen) return;
      seen = now;
      ReadClaims(/*unclaimed_only=*/true);
      ReadFacts();
    };
    bool done = PollUntil(
        [&] {
          gather();
          return !LayoutFindings(plan_, layouts_).empty() || EveryoneHere();
        },
        reserve_ms_);
    // A process that started before this store and is still retrying its connection (c10d's
    // client retries about once a second; measured 0.35-0.56 s after the store came up, torch
    // 1.13) has not claimed its rank yet: when everyone arrived that fast, wait out one retry so
    // that a second claimant of a node is named before the verdict instead of after it (then
    // the first claimant would already have passed). Costs nothing once arrivals take longer.
    if (done && plan_.nnodes > 1 && LayoutFindings(plan_, layouts_).empty())
      PollUntil([&] { return NowMs() - result_.timings.store >= kClaimSettleMs; }, reserve_ms_);
    ReadClaims();  // a last look, full: a second claimant, a record written after the counter
    ReadFacts();
    return done && LayoutFindings(plan_, layouts_).empty() && EveryoneHere();
  }

  std::vector<Finding> ArrivalVerdict(bool all_here) {
    std::vector<Finding> findings = LayoutFindings(plan_, layouts_);
    const bool layout_ok = findings.empty();
    for (auto& f : ClaimFindings(plan_, claims_)) findings.push_back(std::move(f));
    for (const auto& [n, why] : facts_refused_) {
      Finding f;
      f.check_id = "warmup.auth";
      f.entity = "node " + std::to_string(n);
      f.outcome = Outcome::kFail;
      f.message = "refused node " + std::to_string(n) + "'s facts: " + why;
      f.next_step = std::string("set the same ") + std::string(kWarmupSecretVar) +
                    " on every node of the job";
      findings.push_back(std::move(f));
    }
    if (!all_here && layout_ok) {
      std::set<int> arrived;
      for (const auto& [r, c] : claims_)
        if (!c.valid.empty()) arrived.insert(r);
      double waited_s = (result_.timings.arrived - result_.timings.start) / 1000.0;
      for (auto& f : MissingRankFindings(plan_, arrived, node_names_, "arrive at the rendezvous",
                                         "warmup.arrival", waited_s))
        findings.push_back(std::move(f));
    } else if (all_here && Worst(findings) != Outcome::kFail) {
      std::vector<NodeReport> list;
      for (auto& [n, r] : reports_) list.push_back(r);
      for (auto& f : CompareNodes(list, plan_.waive)) findings.push_back(std::move(f));
    }
    return findings;
  }

  int Coordinate() {
    bool all_here = WaitForArrivals();
    result_.timings.arrived = NowMs();
    for (const auto& [n, r] : reports_) node_names_[n] = r.node_name;
    std::vector<json> arrivals;
    for (const auto& [r, c] : claims_)
      for (const auto& a : c.valid) arrivals.push_back(a);
    std::vector<Finding> findings = ArrivalVerdict(all_here);
    bool run_collectives = all_here && Worst(findings) != Outcome::kFail && plan_.collectives;
    // Every other node fetches the verdict: the findings as NodesReport keeps them (a
    // comparison's evidence holds one entry per node).
    json verdict = {{"run_collectives", run_collectives},
                    {"findings", NodesFindings(json(findings))}};
    if (auto s = store_->Set("verdict", JsonText(verdict, -1)); !s.ok())
      return Fail(s.error().Describe());
    result_.timings.verdict = NowMs();

    std::vector<RankResult> results;
    if (run_collectives) {
      Collectives();
      if (auto s = store_->Set("result/0", JsonText(json(result_), -1)); !s.ok())
        return Fail(s.error().Describe());
      (void)store_->Add("results", 1);
      CollectResults(&findings, &results);
      if (auto s = DecidePairs(results, &findings); !s.ok()) return Fail(s.error().Describe());
      if (pairs_run_) CollectPairs(&findings);
    }
    LateClaims(&findings);
    result_.timings.end = NowMs();
    BuildReport(findings, results, arrivals);
    // The other nodes get what they need (the verdict, the findings naming the odd nodes), not
    // everyone's arrival and entry: N nodes fetching the whole report cost N^2 bytes through
    // this store (265 MB at 1024 nodes, bench/scale.sh), and this process held the replies.
    const json& for_nodes = plan_.report_to_nodes == "full" ? report_ : NodesReport(report_);
    if (auto s = store_->Set("report", JsonText(for_nodes, -1)); !s.ok())
      return Fail(s.error().Describe());
    // Keep the store (hosted in this process) up until every other process has the report.
    PollUntil([&] { return Counter("done") >= ExpectedOthers(); }, 0);
    // A claim made after the report went out still stops node 0: the job must not start with
    // a contested layout (the others already read the report; they fail at their rendezvous).
    const std::size_t known = findings.size();
    LateClaims(&findings);
    if (findings.size() > known) {
      result_.timings.end = NowMs();
      BuildReport(findings, results, arrivals);
    }
    return 0;
  }

  // Processes other than this one that will come for the report: every rank of a node whose
  // layout is known (as many as that node runs, even when it differs from ours, since a
  // mismatch is named before the slower ones connected), the claimants of the other nodes, and
  // any second claimant.
  std::int64_t ExpectedOthers() {
    ReadClaims();
    std::map<int, std::int64_t> per_node;  // node -> processes seen or announced
    for (const auto& [r, c] : claims_)
      per_node[plan_.NodeOfRank(r)] += static_cast<std::int64_t>(c.valid.size());
    per_node[plan_.node_rank] =
        std::max<std::int64_t>(per_node[plan_.node_rank], plan_.nproc_per_node);
    for (const auto& [n, l] : layouts_)
      if (n != plan_.node_rank) per_node[n] = std::max<std::int64_t>(per_node[n], l.nproc_per_node);
    std::int64_t total = 0;
    for (const auto& [n, count] : per_node) total += count;
    return total - 1;
  }

  // Waits for every rank's result, then believes only tagged results that fit the layout.
  void CollectResults(std::vector<Finding>* findings, std::vector<RankResult>* results) {
    const int world = plan_.World();
    std::vector<std::string> keys;
    for (int r = 0; r < world; ++r) keys.push_back("result/" + std::to_string(r));
    PollUntil(
        [&] {
          auto all = store_->HasAll(keys);
          return all.ok() && *all;
        },
        reserve_ms_);
    std::set<int> finished;
    for (int r = 0; r < world; ++r) {
      std::string refused;
      auto v = GetJson(keys[static_cast<std::size_t>(r)], &refused);
      if (!v) {
        if (!refused.empty())
          findings->push_back(RankFinding(
              r, "warmup.auth", "refused its result: " + refused,
              std::string("set the same ") + std::string(kWarmupSecretVar) + " on every node"));
        continue;
      }
      RankResult rr;
      try {
        rr = v->get<RankResult>();
      } catch (const std::exception& e) {
        findings->push_back(
            RankFinding(r, "warmup.collective", std::string("unreadable result: ") + e.what(), ""));
        continue;
      }
      auto shape = ResultShapeFindings(plan_, r, rr);
      for (auto& f : shape) findings->push_back(std::move(f));
      if (!shape.empty()) continue;
      finished.insert(r);
      if (!rr.ok)
        findings->push_back(RankFinding(
            r, "warmup.collective", rr.error,
            "run `safe-launch preflight` on that node; with NCCL, rerun with NCCL_DEBUG=INFO "
            "and look at the rank's warm-up log in the run directory"));
      results->push_back(std::move(rr));
    }
    double since = (NowMs() - result_.timings.verdict) / 1000.0;
    for (auto& f : MissingRankFindings(plan_, finished, node_names_, "finish the collectives",
                                       "warmup.collective", since))
      findings->push_back(std::move(f));
    if (plan_.nnodes > 1)
      for (auto& f : CompareBandwidth(BandwidthPerNode(*results, node_names_)))
        findings->push_back(std::move(f));
  }

  // A second claimant that arrived after the verdict is still named in the report.
  void LateClaims(std::vector<Finding>* findings) {
    ReadClaims();
    for (auto& f : ClaimFindings(plan_, claims_)) {
      bool known = std::any_of(findings->begin(), findings->end(),
                               [&](const Finding& g) { return g.message == f.message; });
      if (!known) findings->push_back(std::move(f));
    }
  }

  Finding RankFinding(int r, const std::string& check, const std::string& what,
                      const std::string& fix) {
    int node = plan_.NodeOfRank(r);
    auto it = node_names_.find(node);
    Finding f;
    f.check_id = check;
    f.entity = "rank " + std::to_string(r) + " on node " + std::to_string(node) +
               (it == node_names_.end() || it->second.empty() ? "" : " (" + it->second + ")");
    f.outcome = Outcome::kFail;
    f.message = f.entity + ": " + what;
    f.next_step = fix;
    return f;
  }

  // Polls for a tagged value under `key` until the deadline; a refused value is remembered
  // (and named in `refused`) while waiting for the real one.
  std::optional<json> AwaitTagged(const std::string& key, std::string* refused) {
    std::optional<json> got;
    PollUntil(
        [&] {
          got = GetJson(key, refused);
          return got.has_value();
        },
        0);
    return got;
  }

  int Follow() {
    std::string refused;
    auto verdict = AwaitTagged("verdict", &refused);
    if (!verdict && !refused.empty())
      return Fail("refused a verdict: " + refused + " -- node 0 runs with another " +
                  std::string(kWarmupSecretVar) + ", or something else answers at " + Where());
    if (!verdict)
      return Fail(
          "no verdict from rank 0 (node 0) within the timeout: node 0 is still waiting for "
          "ranks that never arrived, or its warm-up died -- see node 0's log");
    result_.timings.arrived = result_.timings.verdict = NowMs();
    if (verdict->value("run_collectives", false)) {
      Collectives();
      if (auto s = store_->Set("result/" + std::to_string(rank_), JsonText(json(result_), -1));
          !s.ok())
        return Fail(s.error().Describe());
      (void)store_->Add("results", 1);
      if (auto pairs = AwaitTagged("pairs", &refused); pairs && pairs->value("run", false)) {
        if (auto s = RunPairs(pairs->at("schedule")); !s.ok()) return Fail(s.error().Describe());
      }
    }
    refused.clear();
    if (auto report = AwaitTagged("report", &refused); report && report->is_object()) {
      report_ = *report;
    } else if (result_.error.empty()) {
      result_.error = "no report from rank 0 (node 0) within the timeout" +
                      (refused.empty() ? std::string() : "; refused a report: " + refused);
    }
    (void)store_->Add("done", 1);
    return report_.is_null() ? 1 : 0;
  }

  // Creates the group, verifies one all_reduce, then the sweep; errors land in result_.error.
  void Collectives() {
    double reserve = reserve_ms_;
    options_.timeout = Timeout(reserve);
    // The process group's own keys are c10d's (plain): the tagged verdict above decides who
    // gets this far.
    auto comm = CreateCommunicator(*raw_store_, options_);
    if (!comm.ok()) {
      result_.error = comm.error().Describe();
      return;
    }
    comm_ = std::move(*comm);
    result_.backend = comm_->Backend();
    result_.timings.group = NowMs();
    if (auto s = comm_->AllReduceVerified(plan_.verify_count, Timeout(reserve)); !s.ok()) {
      result_.error = s.error().Describe();
      return;
    }
    result_.timings.verified = NowMs();
    for (auto bytes : plan_.sweep_bytes) {
      auto t = comm_->TimeAllReduce(bytes, plan_.iterations, Timeout(reserve));
      if (!t.ok()) {
        result_.error = t.error().Describe();
        return;
      }
      result_.sweep.push_back(warmup::MakeSweepPoint(bytes, *t, plan_.World()));
    }
    result_.timings.swept = NowMs();
    result_.ok = true;
  }

  // Rank 0: judges the sweep against the expected line (and the baseline) and tells every rank
  // whether the pair rounds run ("pairs"). They run when asked to, or (auto) when the sweep is
  // below either and every rank measured it.
  Status DecidePairs(const std::vector<RankResult>& results, std::vector<Finding>* findings) {
    const BandwidthPlan& bw = plan_.bandwidth;
    std::vector<NodeReport> nodes;
    for (const auto& [n, r] : reports_) nodes.push_back(r);
    if (plan_.nnodes > 1 && !result_.sweep.empty()) {
      BandwidthAssessment a =
          AssessBandwidth(nodes, plan_.nproc_per_node, result_.backend, result_.sweep,
                          BandwidthLimits{bw.min_fraction, bw.judge_bytes});
      for (auto& f : a.findings) findings->push_back(std::move(f));
      bandwidth_json_ = AssessmentJson(a);
      pairs_wanted_ = a.below;
    }
    for (const auto& base : bw.baseline)
      for (const auto& p : result_.sweep)
        if (p.bytes == base.bytes && p.busbw_gbps < (1 - bw.max_drop) * base.busbw_gbps)
          pairs_wanted_ = true;
    bool all_ok = static_cast<int>(results.size()) == plan_.World() &&
                  std::all_of(results.begin(), results.end(), [](auto& r) { return r.ok; });
    pairs_run_ = all_ok && plan_.nnodes >= 2 && bw.pair_rounds != "never" &&
                 (bw.pair_rounds == "always" || (pairs_wanted_ && plan_.nnodes >= 3));
    json schedule = json::array();
    if (pairs_run_)
      for (const auto& round : PairSchedule(plan_.nnodes, bw.rounds)) schedule.push_back(round);
    if (auto s =
            store_->Set("pairs", JsonText(json{{"run", pairs_run_}, {"schedule", schedule}}, -1));
        !s.ok())
      return s;
    if (pairs_run_) return RunPairs(schedule);
    return OkStatus();
  }

  // Every rank: one 2-rank group per round with the same local rank on the partner node, timed
  // at the largest sizes of the sweep; the measurements go to "pair/<rank>". A failure is a
  // measurement with its error, never a hang: every call is bounded by the deadline.
  Status RunPairs(const json& schedule_json) {
    const double start = NowMs();
    auto schedule = schedule_json.get<std::vector<std::vector<std::pair<int, int>>>>();
    std::vector<std::uint64_t> sizes = plan_.sweep_bytes;
    std::sort(sizes.begin(), sizes.end());
    const std::size_t keep = static_cast<std::size_t>(std::max(plan_.bandwidth.pair_sizes, 1));
    if (sizes.size() > keep) sizes.erase(sizes.begin(), sizes.end() - static_cast<long>(keep));
    std::vector<PairMeasure> measures;
    for (int r = 0; r < static_cast<int>(schedule.size()); ++r) {
      int partner = PartnerIn(schedule[static_cast<std::size_t>(r)], plan_.node_rank);
      if (partner < 0) continue;
      BackendOptions o = options_;
      o.world = 2;
      o.rank = plan_.node_rank < partner ? 0 : 1;
      o.group_prefix = fmt::format("pair/{}/{}-{}/{}/", r, std::min(plan_.node_rank, partner),
                                   std::max(plan_.node_rank, partner), local_rank_);
      o.timeout = Timeout(reserve_ms_);
      PairMeasure m{r, plan_.node_rank, partner, local_rank_, 0, 0, false, ""};
      auto comm = CreateCommunicator(*raw_store_, o);
      if (!comm.ok()) {
        m.error = comm.error().Describe();
        measures.push_back(m);
        continue;
      }
      for (auto bytes : sizes) {
        m.bytes = bytes;
        auto t = (*comm)->TimeAllReduce(bytes, plan_.iterations, Timeout(reserve_ms_));
        m.ok = t.ok();
        m.error = t.ok() ? "" : t.error().Describe();
        m.busbw_gbps = t.ok() ? MakeSweepPoint(bytes, *t, 2).busbw_gbps : 0;
        measures.push_back(m);
        if (!t.ok()) break;
      }
      // Kept until exit: destroying a group whose peer is gone can block (see main's _exit).
      pair_comms_.push_back(std::move(*comm));
    }
    pairs_ms_ = NowMs() - start;
    return store_->Set("pair/" + std::to_string(rank_), JsonText(json(measures), -1));
  }

  // Rank 0: every rank's pair measurements, then the analysis that names the slow node.
  void CollectPairs(std::vector<Finding>* findings) {
    std::vector<std::string> keys;
    for (int r = 0; r < plan_.World(); ++r) keys.push_back("pair/" + std::to_string(r));
    PollUntil(
        [&] {
          auto all = store_->HasAll(keys);
          return all.ok() && *all;
        },
        reserve_ms_);
    std::vector<PairMeasure> all;
    for (const auto& key : keys) {
      auto v = GetJson(key);
      if (!v) continue;
      try {
        for (auto& m : v->get<std::vector<PairMeasure>>()) all.push_back(std::move(m));
      } catch (const std::exception&) {
      }
    }
    std::map<int, std::string> labels;
    for (int n = 0; n < plan_.nnodes; ++n) {
      auto it = node_names_.find(n);
      labels[n] = "node " + std::to_string(n) +
                  (it == node_names_.end() || it->second.empty() ? "" : " (" + it->second + ")");
    }
    PairAnalysis a = AnalysePairs(all, labels, plan_.bandwidth.min_fraction);
    for (auto& f : a.findings) findings->push_back(std::move(f));
    pairs_json_ = PairAnalysisJson(a);
    pairs_json_["seconds"] = (NowMs() - result_.timings.swept) / 1000.0;
    pairs_json_["rank0_seconds"] = pairs_ms_ / 1000.0;
  }

  void BuildReport(const std::vector<Finding>& findings, const std::vector<RankResult>& results,
                   std::vector<json> arrivals) {
    Outcome worst = Worst(findings);
    std::string verdict = worst == Outcome::kFail || worst == Outcome::kError ? "fail"
                          : worst == Outcome::kWarn                           ? "warn"
                                                                              : "pass";
    std::sort(arrivals.begin(), arrivals.end(), [](const json& a, const json& b) {
      return a.value("t_ms", 0.0) < b.value("t_ms", 0.0);
    });
    double first = arrivals.empty() ? 0 : arrivals.front().value("t_ms", 0.0);
    json arr = json::array();
    for (auto& a : arrivals) {
      a["offset_ms"] = a.value("t_ms", 0.0) - first;
      arr.push_back(a);
    }
    json nodes = json::array();
    for (int n = 0; n < plan_.nnodes; ++n) {
      auto it = node_names_.find(n);
      nodes.push_back({{"node_rank", n},
                       {"name", it != node_names_.end() ? it->second : ""},
                       {"arrived", it != node_names_.end()}});
    }
    const auto& t = result_.timings;
    auto span = [](double a, double b) { return (a > 0 && b > 0) ? b - a : 0.0; };
    report_ = {
        {"schema", "safe-launch.warmup/1"},
        {"verdict", verdict},
        {"passed", verdict != "fail"},
        {"nnodes", plan_.nnodes},
        {"nproc_per_node", plan_.nproc_per_node},
        {"world", plan_.World()},
        {"backend", result_.backend.empty() ? plan_.backend : result_.backend},
        {"store", Where()},
        {"nodes", nodes},
        {"findings", findings},
        {"arrivals", arr},
        {"sweep", result_.sweep},
        {"bandwidth_per_node", json::array()},
        {"timings_ms",
         {{"process_start", span(t.spawn, t.start)},
          {"rendezvous", span(t.start, t.arrived)},
          {"comparison", span(t.arrived, t.verdict)},
          {"collectives", t.swept > 0 ? span(t.verdict, t.swept) : 0.0},
          {"total", span(t.spawn, t.end)}}},
        {"ranks", results},
        {"auth",
         {{"job_id", plan_.auth.job_id},
          {"authenticated", plan_.auth.Authenticated()},
          {"secret_from", plan_.auth.source}}},
    };
    if (!bandwidth_json_.is_null()) report_["bandwidth"] = bandwidth_json_;
    if (!pairs_json_.is_null()) report_["pairs"] = pairs_json_;
    report_["versions"] = {{"torch", plan_.node.torch_version}, {"nccl", plan_.node.nccl_version}};
    for (const auto& b : warmup::BandwidthPerNode(results, node_names_))
      report_["bandwidth_per_node"].push_back(
          {{"node_rank", b.node_rank}, {"label", b.label}, {"busbw_gbps", b.busbw_gbps}});
  }

  WarmupPlan plan_;
  int local_rank_ = 0, rank_ = 0;
  double reserve_ms_ = 0;
  int poll_cap_ms_ = 50;  // longest sleep between two polls (PollUntil)
  BackendOptions options_;
  std::unique_ptr<KvStore> raw_store_;
  std::unique_ptr<AuthStore> store_;
  std::map<int, RankClaims> claims_;                   // rank -> every claim read so far (rank 0)
  std::map<int, std::set<std::int64_t>> claims_read_;  // rank -> claim numbers read
  std::map<int, NodeReport> reports_;
  std::map<int, NodeLayout> layouts_;
  std::map<int, std::string> facts_refused_;
  std::unique_ptr<Communicator> comm_;
  RankResult result_;
  std::map<int, std::string> node_names_;
  json report_;
  json bandwidth_json_, pairs_json_;  // rank 0: the sweep against the line; the pair analysis
  bool pairs_wanted_ = false, pairs_run_ = false;
  double pairs_ms_ = 0;
  std::vector<std::unique_ptr<Communicator>> pair_comms_;
};

bool WriteJson(const std::string& path, const json& j) {
  return WriteFileAtomic(path, JsonText(j) + "\n", kPrivateFile).ok();
}

// The command line, with CLI11 as every other command of safe-launch: std::nullopt to go on,
// else the exit status (0 for --help; 2 for a usage error, said on stderr with the usage).
std::optional<int> ParseArgs(int argc, char** argv, std::string* plan, int* local_rank,
                             std::string* out) {
  CLI::App app{
      "One rank of the warm-up collective (started by `safe-launch run`; see doc/manual.md, "
      "'Warm-up')",
      "safe-launch-warmup"};
  app.add_option("--plan", *plan, "The warm-up plan safe-launch wrote (JSON)")->required();
  app.add_option("--local-rank", *local_rank, "This rank's index on the node (0-based)")
      ->required()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out", *out, "Where this rank's result goes (JSON)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "safe-launch-warmup: %s\n%s", e.what(), app.help().c_str());
    return exit_code::kUsage;
  }
  return std::nullopt;
}

}  // namespace
}  // namespace sl::warmup

int main(int argc, char** argv) {
  // Die with the launcher: a warm-up rank must never outlive safe-launch.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::string plan_path, out_path;
  int local_rank = -1;
  if (std::optional<int> rc = sl::warmup::ParseArgs(argc, argv, &plan_path, &local_rank, &out_path))
    return *rc;
  nlohmann::json out;
  sl::warmup::WarmupPlan plan;
  try {
    std::ifstream f(plan_path);
    if (!f) throw std::runtime_error("cannot open " + plan_path);
    plan = nlohmann::json::parse(f).get<sl::warmup::WarmupPlan>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "safe-launch-warmup: bad plan %s: %s\n", plan_path.c_str(), e.what());
    out["result"] = {{"ok", false}, {"error", std::string("bad plan: ") + e.what()}};
    sl::warmup::WriteJson(out_path, out);
    return sl::exit_code::kUsage;
  }
  if (local_rank >= plan.nproc_per_node) {
    std::fprintf(stderr, "safe-launch-warmup: local rank %d >= nproc_per_node %d\n", local_rank,
                 plan.nproc_per_node);
    return sl::exit_code::kUsage;
  }
  sl::warmup::Rank rank(plan, local_rank);
  int status = rank.Run(&out);
  if (out.contains("result") && !out["result"].value("error", "").empty())
    std::fprintf(stderr, "safe-launch-warmup[rank %d]: %s\n", out["result"].value("rank", -1),
                 out["result"].value("error", "").c_str());
  if (!sl::warmup::WriteJson(out_path, out)) {
    std::fprintf(stderr, "safe-launch-warmup: cannot write %s\n", out_path.c_str());
    return sl::exit_code::kInternal;
  }
  // Skip static destructors: a c10d group whose peer vanished can block in its destructor.
  std::fflush(nullptr);
  _exit(status);
}
