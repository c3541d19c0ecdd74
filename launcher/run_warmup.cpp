// Warm-up phase of `run`: infer the topology, start one safe-launch-warmup per local
// rank, print the verdict (every node one line, node 0 the details), write warmup.json, and
// decide whether the job starts. The work itself is warmup/warmup_phase.h.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "launcher/bw_record.h"
#include "launcher/config.h"
#include "launcher/layout.h"
#include "launcher/run_phases.h"
#include "warmup/bw_history.h"
#include "warmup/claim_guard.h"
#include "warmup/warmup_phase.h"

namespace sl::launcher {

namespace {

// A free TCP port on the loopback address, for single-node warm-ups that named no port: every
// rank is local, so a fixed default (29501) would only collide with other jobs on the node.
int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

void LogBlock(const std::string& text, bool error) {
  for (const auto& line : SplitLines(text)) {
    if (Trim(line).empty()) continue;
    if (error)
      log::Error("{}", line);
    else
      log::Info("{}", line);
  }
}

// Node 0 prints the job-wide details; other nodes (or node 0 failing before any report) the
// reasons and fixes, briefly; every node the verdict line.
void LogOutcome(const warmup::WarmupOutcome& outcome) {
  if (!outcome.details.empty()) {
    LogBlock(outcome.details, false);
  } else if (!outcome.passed && outcome.report.contains("findings")) {
    for (const auto& f : outcome.report["findings"]) {
      if (f.value("outcome", "") == "pass" || f.value("waived", false)) continue;
      log::Error("  {}: {}", f.value("check", ""), f.value("message", ""));
      if (!f.value("next_step", "").empty()) log::Error("    fix: {}", f.value("next_step", ""));
    }
  }
  if (outcome.passed) {
    log::Info("{}", outcome.verdict_line);
  } else {
    log::Error("{}", outcome.verdict_line);
  }
}

// Node 0's name must resolve on every node before anyone waits for it: otherwise the warm-up
// (and torchrun after it) waits its whole timeout and only the other nodes' rank logs say
// "Name or service not known". Returns the addresses, or an error naming the name, where it
// came from and this node.
Result<std::vector<std::string>> ResolveRendezvous(const std::string& host,
                                                   const std::string& source, int node_rank,
                                                   const std::string& node) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    return MakeError("node " + std::to_string(node_rank) + " (" + node +
                         "): the rendezvous host '" + host + "' (from " + source +
                         ") does not resolve: " + ::gai_strerror(rc),
                     source,
                     "give node 0 a name every node resolves (DNS or /etc/hosts), or its address, "
                     "in torchrun's --rdzv_endpoint / --master_addr or safe-launch --rendezvous");
  }
  std::vector<std::string> out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    const void* addr =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (::inet_ntop(a->ai_family, addr, buf, sizeof buf) &&
        std::find(out.begin(), out.end(), buf) == out.end())
      out.emplace_back(buf);
  }
  ::freeaddrinfo(res);
  return out;
}

bool IsLoopback(const std::string& addr) {
  return StartsWith(addr, "127.") || addr == "::1" || StartsWith(addr, "::ffff:127.");
}

constexpr const char* kHistoryVar = "SAFE_LAUNCH_BW_HISTORY";
constexpr const char* kBaselineVar = "SAFE_LAUNCH_BW_BASELINE";

// `run`'s bandwidth history and baseline come from the environment (an sbatch script exports
// them once for every job), the threshold from the recipe.
BandwidthRecord BandwidthRecordFromEnv(const RunContext& ctx) {
  BandwidthRecord r;
  r.history = Lookup(ctx.base_env, kHistoryVar).value_or("");
  r.baseline = Lookup(ctx.base_env, kBaselineVar).value_or("");
  if (!r.history.empty() || !r.baseline.empty()) r.svg = ctx.run_dir + "/bandwidth.svg";
  r.max_drop = ctx.thresholds.max_busbw_drop;
  return r;
}

// The recipe's bandwidth thresholds; the baseline's figures go to rank 0, whose sweep falling
// below them starts the pair rounds.
warmup::BandwidthPlan BandwidthPlanFor(const RunContext& ctx, const BandwidthRecord& record) {
  warmup::BandwidthPlan plan;
  plan.min_fraction = ctx.thresholds.min_busbw_fraction;
  plan.judge_bytes = ctx.thresholds.busbw_judge_bytes;
  plan.max_drop = ctx.thresholds.max_busbw_drop;
  if (record.baseline.empty()) return plan;
  auto text = ReadUserFile(record.baseline, InputKind::kHistory);
  auto base = text.ok() ? warmup::ParseBaseline(*text) : Result<warmup::HistoryEntry>(text.error());
  if (!base.ok()) {
    log::Warn("{}={}: {}", kBaselineVar, record.baseline, base.error().Describe());
    return plan;
  }
  for (const auto& p : base->sweep) plan.baseline.push_back({p.bytes, 0, 0, p.busbw_gbps});
  return plan;
}

// History and baseline findings inform; they never stop the job (bench is the gate).
void LogRecordFindings(const std::vector<Finding>& findings) {
  for (const auto& f : findings) {
    if (f.outcome == Outcome::kWarn || f.outcome == Outcome::kFail)
      log::Warn("warm-up bandwidth: {} {}", f.check_id, f.message);
    else
      log::Info("warm-up bandwidth: {} {}", f.check_id, f.message);
  }
}

// Node 0, when SAFE_LAUNCH_BW_HISTORY or SAFE_LAUNCH_BW_BASELINE named a file and a sweep ran.
void RecordIfAsked(const BandwidthRecord& record, const warmup::WarmupOutcome& outcome,
                   const RunContext& ctx) {
  if (record.history.empty() && record.baseline.empty()) return;
  if (!outcome.report.contains("sweep") || outcome.report["sweep"].empty()) return;
  LogRecordFindings(RecordBandwidth(record, warmup::EntryFromReport(outcome.report), outcome.report,
                                    ctx.facts, ctx.base_env));
}

// What this node gives torchrun: the command's or the environment's endpoint, else (--per-task)
// the MASTER_ADDR/MASTER_PORT RankEnvironment sets from the layout; host "" when none.
warmup::RendezvousEndpoint JobRendezvous(const RunConfig& config, const RunContext& ctx,
                                         const warmup::Topology& t) {
  warmup::RendezvousEndpoint e;
  const Environment& env = ctx.job_env.empty() ? ctx.base_env : ctx.job_env;
  if (auto j = TorchEndpoint(config.command, env)) {
    e.host = j->host;
    e.port = j->port;
    e.source = j->source;
  } else if (config.per_task) {
    e.host = t.rendezvous_host;
    e.port = t.rendezvous_port;
    e.source = "MASTER_ADDR set by safe-launch from " + t.source.at("rendezvous");
  } else {
    e.source = "none";
  }
  return e;
}

// Node 0's name and the endpoint torchrun gets resolve here (else the warm-up fails in seconds,
// naming them); node 0 compares every node's endpoint, loopback across hosts included.
// The store itself on loopback in a multi-node job is only warned about: one host running
// every node is legitimate.
bool RendezvousResolves(const warmup::Topology& t, RunContext& ctx,
                        warmup::RendezvousEndpoint* job) {
  const std::string source = t.source.count("rendezvous") ? t.source.at("rendezvous") : "";
  auto addrs = ResolveRendezvous(t.rendezvous_host, source, t.node_rank, ctx.host);
  if (addrs.ok() && !job->host.empty()) {
    auto job_addrs = ResolveRendezvous(job->host, job->source, t.node_rank, ctx.host);
    if (job_addrs.ok())
      job->addresses = *job_addrs;
    else
      addrs = job_addrs.error();
  }
  if (!addrs.ok()) {
    log::Error("warm-up: {}", addrs.error().Describe());
    ctx.status_extra["warmup"] = {{"verdict", "fail"}, {"reason", addrs.error().message}};
    return false;
  }
  ctx.status_extra["rendezvous"] = {{"host", t.rendezvous_host},
                                    {"port", t.rendezvous_port},
                                    {"addresses", *addrs},
                                    {"job",
                                     {{"host", job->host},
                                      {"port", job->port},
                                      {"source", job->source},
                                      {"addresses", job->addresses}}}};
  if (!addrs->empty() && std::all_of(addrs->begin(), addrs->end(), IsLoopback))
    log::Warn(
        "rendezvous host '{}' resolves to loopback ({}) in a {}-node job: right only when "
        "every node runs on this host; otherwise each node meets only itself (Debian maps "
        "the host name to 127.0.1.1 in /etc/hosts: use an address or a name on the network)",
        t.rendezvous_host, (*addrs)[0], t.nnodes);
  return true;
}

warmup::WarmupOptions WarmupOptionsFor(const WarmupConfig& args, const RunContext& ctx,
                                       const warmup::Topology& t, const BandwidthRecord& record) {
  warmup::WarmupOptions o;
  o.topology = t;
  o.facts = ctx.facts;
  o.node_name = !args.node_name.empty()       ? args.node_name
                : !ctx.facts.hostname.empty() ? ctx.facts.hostname
                                              : ctx.host;
  o.env = ctx.job_env.empty() ? ctx.base_env : ctx.job_env;
  o.run_dir = ctx.run_dir;
  o.timeout = std::chrono::milliseconds(static_cast<long long>(args.timeout_s * 1000));
  o.backend = args.backend;
  o.waive = args.waive;
  o.waive.insert(o.waive.end(), ctx.warmup_waive.begin(), ctx.warmup_waive.end());
  o.bandwidth = BandwidthPlanFor(ctx, record);
  o.auth = warmup::ResolveWarmupAuth(o.env, t.warmup_port);
  if (!o.auth.Authenticated() && t.nnodes > 1)
    log::Warn(
        "warm-up store unauthenticated: any process that reaches {}:{} can answer for a node; "
        "export the same {} (e.g. `openssl rand -hex 32`) on every node of the job",
        t.rendezvous_host, t.warmup_port, warmup::kWarmupSecretVar);
  return o;
}

// A late process of this job (the same --node-rank twice) finds node 0's guard on the warm-up
// port: refused at once, naming the first claimant, instead of waiting its whole timeout for a
// store that is gone. True when this process must not go on.
bool RefusedAsLateClaim(const warmup::Topology& t, const warmup::WarmupOptions& o,
                        RunContext& ctx) {
  const std::string line = warmup::ProbeClaimGuard(t.rendezvous_host, t.warmup_port, 250);
  if (line.empty()) return false;
  auto notice = warmup::ParseGuardLine(o.auth, line);
  if (!notice.ok()) {
    log::Warn("{}:{} answered as another job's warm-up guard ({}); going on", t.rendezvous_host,
              t.warmup_port, notice.error().message);
    return false;
  }
  if (!*notice) return false;
  const std::string why = warmup::LateClaimMessage(**notice, t.node_rank, o.node_name);
  log::Error("warm-up FAILED: {}", why);
  log::Error(
      "  fix: give every node its own --node-rank (or SLURM_NODEID); stop this safe-launch, or "
      "the job on {}:{} first if this one is meant to replace it",
      t.rendezvous_host, t.warmup_port);
  ctx.status_extra["warmup"] = {{"verdict", "fail"}, {"reason", why}};
  return true;
}

// Node 0, once the job is to start: the warm-up port answers late claimants while the job runs.
void GuardWarmupPort(const warmup::Topology& t, const warmup::WarmupOptions& o,
                     const warmup::WarmupOutcome& outcome, RunContext& ctx) {
  if (t.node_rank != 0 || t.nnodes < 2) return;
  auto line = warmup::GuardLine(o.auth, warmup::NoticeFromReport(outcome.report));
  auto guard = warmup::ClaimGuard::Start(t.rendezvous_host, t.warmup_port, std::move(line));
  if (!guard.ok()) {
    log::Debug("warm-up port not guarded while the job runs: {}", guard.error().message);
    return;
  }
  ctx.claim_guard = std::move(*guard);
}

}  // namespace

int RunWarmupPhase(const RunConfig& config, RunContext& ctx) {
  const WarmupConfig& args = config.warmup;
  if (args.skip || !config.topology) {
    if (args.skip_reason.empty()) {
      log::Info("warm-up skipped (--no-warmup)");
      ctx.status_extra["warmup"] = {{"verdict", "skipped"}};
    } else {
      log::Warn("warm-up skipped: {}", args.skip_reason);
      ctx.status_extra["warmup"] = {{"verdict", "skipped"}, {"reason", args.skip_reason}};
    }
    return exit_code::kOk;
  }
  if (!ctx.have_facts) {
    RootedFileReader fs(ctx.sysroot);
    ctx.facts = GatherNodeFacts(fs, {.kernel_log = false});  // --no-preflight: no kernel.log
    ctx.have_facts = true;
  }
  warmup::Topology t = *config.topology;
  if (auto s = ResolveLocalGpus(&t, static_cast<int>(ctx.facts.gpus.size())); !s.ok()) {
    log::Error("warm-up: cannot tell the job's layout: {}", s.error().Describe());
    log::Error("pass --nnodes/--node-rank/--nproc-per-node/--rendezvous, or --no-warmup");
    return exit_code::kUsage;
  }
  if (t.nnodes == 1 && !args.force) {
    // A single-node job gains little from a warm-up (nothing to compare; its collective faults
    // show within seconds) and would pay libtorch's start-up; --warmup asks for it anyway.
    log::Debug("warm-up skipped: single-node job (pass --warmup to run it)");
    ctx.status_extra["warmup"] = {{"verdict", "skipped"}, {"reason", "single node"}};
    return exit_code::kOk;
  }
  if (t.nnodes == 1 && t.source["rendezvous"] != "--rendezvous" &&
      t.source["warmup_port"] != "--warmup-port") {
    t.rendezvous_host = "127.0.0.1";
    if (int port = FreeLoopbackPort(); port > 0) t.warmup_port = port;
  }
  warmup::RendezvousEndpoint job = JobRendezvous(config, ctx, t);
  if (t.nnodes > 1 && !RendezvousResolves(t, ctx, &job)) return exit_code::kWarmupFailed;
  log::Info("warm-up: node {} of {}, {} rank(s) here, store {}:{} ({} from {}), timeout {:g} s",
            t.node_rank, t.nnodes, t.nproc_per_node, t.rendezvous_host, t.warmup_port, "rendezvous",
            t.source["rendezvous"], args.timeout_s);

  const BandwidthRecord record = BandwidthRecordFromEnv(ctx);
  warmup::WarmupOptions o = WarmupOptionsFor(args, ctx, t, record);
  o.rendezvous = std::move(job);
  if (t.nnodes > 1 && RefusedAsLateClaim(t, o, ctx)) return exit_code::kWarmupFailed;
  auto outcome = warmup::RunWarmup(o);
  if (StopSignalSeen()) {
    // A SIGTERM/SIGINT ended the warm-up: no verdict of its own to report; the stop check after
    // this phase (cmd_run) writes status.json and exits 128+S.
    ctx.status_extra["warmup"] = {{"verdict", "interrupted"}, {"report", outcome.json_path}};
    return exit_code::kOk;
  }

  LogOutcome(outcome);
  if (t.node_rank == 0) RecordIfAsked(record, outcome, ctx);
  if (!outcome.json_path.empty()) log::Info("warm-up report: {}", outcome.json_path);
  ctx.status_extra["warmup"] = {{"verdict", outcome.report.value("verdict", "fail")},
                                {"report", outcome.json_path}};
  if (!outcome.passed) {
    if (args.on_fail == "abort") {
      log::Error(
          "job not started (--on-warmup-fail=abort; --on-warmup-fail=warn starts it anyway)");
      return exit_code::kWarmupFailed;
    }
    log::Warn("starting the job anyway (--on-warmup-fail=warn)");
  }
  GuardWarmupPort(t, o, outcome, ctx);
  return exit_code::kOk;
}

}  // namespace sl::launcher
