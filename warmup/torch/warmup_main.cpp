// safe-launch-warmup: one process per local rank, started by `safe-launch run` (warmup_phase.h).
//   safe-launch-warmup --plan PLAN.json --local-rank N --out RESULT.json
// The protocol over the store (keys, in order):
//   arrive/<rank>, counter "arrived"      every rank, on connecting
//   facts/<node>,  counter "facts"        local rank 0 of each node: its NodeReport
//   verdict                               rank 0, after comparing the nodes (or naming the absent)
//   result/<rank>, counter "results"      every rank, after the all_reduce and the sweep
//   report                                rank 0: the job-wide report (warmup.json)
//   counter "done"                        every rank but 0, so rank 0 keeps the store up until read
// Every wait is bounded by the plan's deadline; rank 0 keeps a reserve to publish what it knows.
// This file is torch-free; libtorch stays behind backend.h.
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/exit_codes.h"
#include "common/finding.h"
#include "warmup/compare.h"
#include "warmup/protocol.h"
#include "warmup/torch/backend.h"

namespace sl::warmup {
namespace {

using nlohmann::json;

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
      sleep_ms = std::min(sleep_ms * 2, 50);
    }
  }
  std::int64_t Counter(const std::string& key) {
    auto v = store_->Add(key, 0);
    return v.ok() ? *v : -1;
  }
  bool Has(const std::string& key) {
    auto v = store_->Check({key});
    return v.ok() && *v;
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
    store_ = std::move(*store);
    result_.timings.store = NowMs();

    json arrive = {{"rank", rank_},
                   {"node_rank", plan_.node_rank},
                   {"local_rank", local_rank_},
                   {"host", plan_.node.node_name},
                   {"t_ms", result_.timings.store}};
    if (auto s = store_->Set("arrive/" + std::to_string(rank_), arrive.dump()); !s.ok())
      return Fail(s.error().Describe());
    if (local_rank_ == 0) {
      if (auto s = store_->Set("facts/" + std::to_string(plan_.node_rank), json(plan_.node).dump());
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

  // Gathers node reports published so far: node -> report.
  std::map<int, warmup::NodeReport> NodeReports() {
    std::map<int, warmup::NodeReport> reports;
    for (int n = 0; n < plan_.nnodes; ++n) {
      std::string key = "facts/" + std::to_string(n);
      if (!Has(key)) continue;
      auto v = store_->Get(key);
      if (!v.ok()) continue;
      try {
        reports[n] = json::parse(*v).get<warmup::NodeReport>();
      } catch (const std::exception&) {
      }
    }
    return reports;
  }

  int Coordinate() {
    const int world = plan_.World();
    bool all_here =
        PollUntil([&] { return Counter("arrived") >= world && Counter("facts") >= plan_.nnodes; },
                  reserve_ms_);
    result_.timings.arrived = NowMs();
    auto reports = NodeReports();
    for (const auto& [n, r] : reports) node_names_[n] = r.node_name;

    std::vector<Finding> findings;
    std::set<int> arrived;
    std::vector<json> arrivals;
    for (int r = 0; r < world; ++r) {
      std::string key = "arrive/" + std::to_string(r);
      if (!Has(key)) continue;
      arrived.insert(r);
      if (auto v = store_->Get(key); v.ok()) {
        try {
          arrivals.push_back(json::parse(*v));
        } catch (const std::exception&) {
        }
      }
    }
    double waited_s = (result_.timings.arrived - result_.timings.start) / 1000.0;
    if (!all_here) {
      findings = warmup::MissingRankFindings(
          plan_, arrived, node_names_, "arrive at the rendezvous", "warmup.arrival", waited_s);
    } else {
      std::vector<warmup::NodeReport> list;
      for (auto& [n, r] : reports) list.push_back(r);
      findings = warmup::CompareNodes(list, plan_.waive);
    }
    bool run_collectives = all_here && Worst(findings) != Outcome::kFail;
    json verdict = {{"run_collectives", run_collectives}, {"findings", findings}};
    if (auto s = store_->Set("verdict", verdict.dump()); !s.ok()) return Fail(s.error().Describe());
    result_.timings.verdict = NowMs();

    std::vector<RankResult> results;
    if (run_collectives) {
      Collectives();
      if (auto s = store_->Set("result/0", json(result_).dump()); !s.ok())
        return Fail(s.error().Describe());
      (void)store_->Add("results", 1);
      PollUntil([&] { return Counter("results") >= world; }, reserve_ms_);
      std::set<int> finished;
      for (int r = 0; r < world; ++r) {
        std::string key = "result/" + std::to_string(r);
        if (!Has(key)) continue;
        auto v = store_->Get(key);
        if (!v.ok()) continue;
        try {
          RankResult rr = json::parse(*v).get<RankResult>();
          finished.insert(r);
          if (!rr.ok) {
            Finding f;
            f.check_id = "warmup.collective";
            f.entity = "rank " + std::to_string(r) + " on node " + std::to_string(rr.node_rank) +
                       (rr.host.empty() ? "" : " (" + rr.host + ")");
            f.outcome = Outcome::kFail;
            f.message = f.entity + ": " + rr.error;
            f.next_step =
                "run `safe-launch preflight` on that node; with NCCL, rerun with NCCL_DEBUG=INFO "
                "and look at the rank's warm-up log in the run directory";
            findings.push_back(std::move(f));
          }
          results.push_back(std::move(rr));
        } catch (const std::exception&) {
        }
      }
      double since = (NowMs() - result_.timings.verdict) / 1000.0;
      for (auto& f : warmup::MissingRankFindings(
               plan_, finished, node_names_, "finish the collectives", "warmup.collective", since))
        findings.push_back(std::move(f));
      if (plan_.nnodes > 1) {
        for (auto& f : warmup::CompareBandwidth(warmup::BandwidthPerNode(results, node_names_)))
          findings.push_back(std::move(f));
      }
    }
    result_.timings.end = NowMs();
    BuildReport(findings, results, arrivals);
    if (auto s = store_->Set("report", report_.dump()); !s.ok()) return Fail(s.error().Describe());
    // Keep the store (hosted in this process) up until every other arrived rank has the report.
    PollUntil([&] { return Counter("done") >= static_cast<std::int64_t>(arrived.size()) - 1; }, 0);
    return 0;
  }

  int Follow() {
    if (!PollUntil([&] { return Has("verdict"); }, 0))
      return Fail(
          "no verdict from rank 0 (node 0) within the timeout: node 0 is still waiting for "
          "ranks that never arrived, or its warm-up died -- see node 0's log");
    result_.timings.arrived = result_.timings.verdict = NowMs();
    json verdict;
    if (auto v = store_->Get("verdict"); v.ok()) {
      try {
        verdict = json::parse(*v);
      } catch (const std::exception&) {
      }
    }
    if (verdict.value("run_collectives", false)) {
      Collectives();
      if (auto s = store_->Set("result/" + std::to_string(rank_), json(result_).dump()); !s.ok())
        return Fail(s.error().Describe());
      (void)store_->Add("results", 1);
    }
    if (PollUntil([&] { return Has("report"); }, 0)) {
      if (auto v = store_->Get("report"); v.ok()) {
        try {
          report_ = json::parse(*v);
        } catch (const std::exception&) {
        }
      }
    } else if (result_.error.empty()) {
      result_.error = "no report from rank 0 (node 0) within the timeout";
    }
    (void)store_->Add("done", 1);
    return report_.is_null() ? 1 : 0;
  }

  // Creates the group, verifies one all_reduce, then the sweep; errors land in result_.error.
  void Collectives() {
    double reserve = reserve_ms_;
    options_.timeout = Timeout(reserve);
    auto comm = CreateCommunicator(*store_, options_);
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
    };
    for (const auto& b : warmup::BandwidthPerNode(results, node_names_))
      report_["bandwidth_per_node"].push_back(
          {{"node_rank", b.node_rank}, {"label", b.label}, {"busbw_gbps", b.busbw_gbps}});
  }

  WarmupPlan plan_;
  int local_rank_ = 0, rank_ = 0;
  double reserve_ms_ = 0;
  BackendOptions options_;
  std::unique_ptr<KvStore> store_;
  std::unique_ptr<Communicator> comm_;
  RankResult result_;
  std::map<int, std::string> node_names_;
  json report_;
};

bool WriteJson(const std::string& path, const json& j) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) return false;
    f << j.dump(2) << "\n";
    if (!f) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace
}  // namespace sl::warmup

int main(int argc, char** argv) {
  // Die with the launcher: a warm-up rank must never outlive safe-launch.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::string plan_path, out_path;
  int local_rank = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--plan")
      plan_path = argv[i + 1];
    else if (a == "--out")
      out_path = argv[i + 1];
    else if (a == "--local-rank")
      local_rank = std::atoi(argv[i + 1]);
  }
  if (plan_path.empty() || out_path.empty() || local_rank < 0) {
    std::fprintf(stderr,
                 "usage: safe-launch-warmup --plan PLAN.json --local-rank N --out RESULT.json\n"
                 "(started by `safe-launch run`; see doc/manual.md, 'Warm-up')\n");
    return sl::exit_code::kUsage;
  }
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
