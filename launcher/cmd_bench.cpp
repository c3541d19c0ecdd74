// `safe-launch bench`: the warm-up's bandwidth sweep alone (no job), for the regression run
// after every change: measured against the expected line, the pair rounds when below it, the
// history and the baseline, and a picture. `--import FILE` brings an nccl-tests output into the
// same comparison; `--nccl-tests` runs all_reduce_perf (under srun when in a Slurm job) with the
// tuned environment and imports it. doc/manual.md "Bandwidth".
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/file_writer.h"
#include "common/json_text.h"
#include "common/log.h"
#include "common/parse/nccl_tests.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "launcher/bw_record.h"
#include "launcher/commands.h"
#include "launcher/config.h"
#include "launcher/layout.h"
#include "nccl/conf_file.h"
#include "recipes/plan.h"
#include "recipes/version_probe.h"
#include "warmup/bandwidth.h"
#include "warmup/bw_history.h"
#include "warmup/bw_svg.h"
#include "warmup/warmup_phase.h"
#include "watchdog/supervisor.h"

namespace sl::launcher {

namespace {

namespace fs = std::filesystem;

struct BenchArgs {
  LayoutFlags layout;
  std::string sysroot, recipe, run_dir, node_name, backend = "auto", sizes, pairs = "auto";
  std::string history, baseline, svg, import_file;
  std::string mpi_hosts;  ///< --mpirun-hosts: run nccl-tests with mpirun on these hosts
  bool nccl_tests = false;
  std::vector<std::string> nccl_args;  ///< replaces "-b 8M -e 512M -f 2 -g 1"
  double timeout_s = 120;
  int iterations = 0, last_n = 5;
};

// What every mode shares: the tuned environment, the thresholds, this node's facts.
struct BenchContext {
  Environment env, job_env;
  NodeFacts facts;
  Thresholds thresholds;
  std::string run_dir;
  recipes::Versions versions;
};

Result<std::vector<std::uint64_t>> ParseSizes(const std::string& text) {
  std::vector<std::uint64_t> out;
  for (const auto& part : Split(text, ',')) {
    std::string t = ToLower(Trim(part));
    std::uint64_t mult = 1;
    if (EndsWith(t, "k")) mult = 1ull << 10;
    if (EndsWith(t, "m")) mult = 1ull << 20;
    if (EndsWith(t, "g")) mult = 1ull << 30;
    if (mult > 1) t.pop_back();
    auto v = ParseUint(t, "--sizes");
    if (!v.ok() || *v == 0 || *v > (1ull << 34) / mult)
      return MakeError("--sizes: '" + part + "' is not a size", "", "e.g. --sizes 1M,8M,64M");
    out.push_back(*v * mult);
  }
  if (out.empty()) return MakeError("--sizes is empty", "", "e.g. --sizes 1M,8M,64M");
  return out;
}

Result<BenchContext> Prepare(const BenchArgs& a) {
  BenchContext c;
  c.env = ProcessEnvironment();
  RootedFileReader reader(a.sysroot);
  c.facts = GatherNodeFacts(reader, {.kernel_log = false});
  log::Init(c.facts.hostname);
  if (a.run_dir.empty()) {
    std::error_code ec;
    std::string tmpl = (fs::temp_directory_path(ec) / "safe-launch-bench.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return MakeError("cannot create " + tmpl);
    c.run_dir = tmpl;
  } else {
    std::error_code ec;
    fs::create_directories(a.run_dir, ec);
    if (ec) return MakeError("cannot create the run directory: " + ec.message(), a.run_dir);
    c.run_dir = a.run_dir;
  }
  recipes::ResolveOptions opts;
  opts.recipe = a.recipe;
  std::error_code ec;
  opts.run_dir = fs::absolute(c.run_dir, ec).string();
  opts.versions = recipes::DetectVersions({}, c.env).value_or(recipes::Versions{});
  opts.conf = nccl::ReadConfFiles(reader, c.env, opts.versions.nccl);
  auto plan = recipes::ResolveForNode(opts, c.env, c.facts);
  if (!plan.ok()) return plan.error();
  c.job_env = recipes::ApplyPlan(*plan, c.env);
  c.thresholds = plan->thresholds;
  c.versions = opts.versions;
  return c;
}

// The first executable `name` on env's PATH, "" when none.
std::string FindOnPath(const std::string& name, const Environment& env) {
  for (const auto& c : ExecCandidates(name, env))
    if (::access(c.c_str(), X_OK) == 0) return c;
  return "";
}

// A free loopback port for a single-node bench that named none (as run's warm-up does).
int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// Runs the warm-up in a thread; on a terminal, one progress line that rewrites itself.
warmup::WarmupOutcome RunWithProgress(const warmup::WarmupOptions& o) {
  std::atomic<bool> done{false};
  warmup::WarmupOutcome outcome;
  std::thread worker([&] {
    outcome = warmup::RunWarmup(o);
    done = true;
  });
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const auto start = std::chrono::steady_clock::now();
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!tty || done) continue;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\rsafe-launch bench: sweep %s on %d node(s), %.1f s (timeout %.0f s) ",
                 o.topology.node_rank == 0 ? "running" : "joined", o.topology.nnodes, s,
                 static_cast<double>(o.timeout.count()) / 1000);
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  worker.join();
  return outcome;
}

Result<warmup::HistoryEntry> Sweep(const BenchArgs& a, BenchContext& c, nlohmann::json* report,
                                   std::vector<Finding>* findings) {
  auto t = InferLayout(a.layout, {}, c.env);
  if (!t.ok()) return t.error();
  if (auto s = ResolveLocalGpus(&*t, static_cast<int>(c.facts.gpus.size())); !s.ok())
    return s.error();
  if (t->nnodes == 1 && a.layout.rendezvous.empty() && a.layout.warmup_port == 0) {
    t->rendezvous_host = "127.0.0.1";
    if (int port = FreeLoopbackPort(); port > 0) t->warmup_port = port;
  }
  log::Init(c.facts.hostname, std::to_string(t->node_rank));
  warmup::WarmupOptions o;
  o.topology = *t;
  o.facts = c.facts;
  o.node_name = a.node_name;
  o.env = c.job_env;
  o.run_dir = c.run_dir;
  o.timeout = std::chrono::milliseconds(static_cast<long long>(a.timeout_s * 1000));
  o.backend = a.backend;
  o.iterations = a.iterations;
  if (!a.sizes.empty()) {
    auto sizes = ParseSizes(a.sizes);
    if (!sizes.ok()) return sizes.error();
    o.sweep_bytes = *sizes;
  }
  o.bandwidth.min_fraction = c.thresholds.min_busbw_fraction;
  o.bandwidth.judge_bytes = c.thresholds.busbw_judge_bytes;
  o.bandwidth.max_drop = c.thresholds.max_busbw_drop;
  o.bandwidth.pair_rounds = a.pairs;
  if (!a.baseline.empty()) {
    auto text = ReadUserFile(a.baseline, InputKind::kHistory);
    if (!text.ok())
      return MakeError("cannot read the baseline: " + text.error().message, a.baseline);
    auto base = warmup::ParseBaseline(*text);
    if (!base.ok()) return MakeError(base.error().message, a.baseline, base.error().fix);
    for (const auto& p : base->sweep) o.bandwidth.baseline.push_back({p.bytes, 0, 0, p.busbw_gbps});
  }
  o.auth = warmup::ResolveWarmupAuth(o.env, t->warmup_port);
  auto outcome = RunWithProgress(o);
  if (!outcome.details.empty())
    for (const auto& line : SplitLines(outcome.details))
      if (!Trim(line).empty()) log::Info("{}", line);
  (outcome.passed ? log::Info("{}", outcome.verdict_line) : log::Error("{}", outcome.verdict_line));
  *report = outcome.report;
  if (!outcome.passed) {
    findings->push_back(MakeFinding("bench.sweep", "job", Outcome::kFail, outcome.verdict_line));
  }
  warmup::HistoryEntry e = warmup::EntryFromReport(outcome.report);
  e.source = "bench";
  return e;
}

Result<warmup::HistoryEntry> Import(const std::string& file, BenchContext& c,
                                    std::vector<Finding>* findings) {
  auto read = ReadUserFile(file, InputKind::kImport);
  if (!read.ok())
    return MakeError("cannot read the nccl-tests output: " + read.error().message, file);
  const std::string& text = *read;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = ParseNcclTests(text);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!out.ok()) return MakeError(out.error().message, file, out.error().fix);
  log::Info("{}: {} bytes, {} row(s) parsed in {:.1f} ms", file, text.size(), out->rows.size(), ms);
  for (auto& f : warmup::NcclTestsFindings(*out, file)) findings->push_back(std::move(f));
  warmup::HistoryEntry e = warmup::EntryFromNcclTests(*out);
  // The expected line from this node's facts, as if every node of the run were like it.
  warmup::NodeReport self;
  self.node_name = c.facts.hostname;
  self.facts = c.facts;
  self.env = c.job_env;
  int per_node = e.ranks_per_node > 0 ? e.ranks_per_node : std::max(1, out->ngpus);
  std::vector<warmup::SweepPoint> sweep;
  for (const auto& p : e.sweep) sweep.push_back({p.bytes, 0, 0, p.busbw_gbps});
  auto a =
      warmup::AssessBandwidth({self}, per_node, "nccl", sweep,
                              {c.thresholds.min_busbw_fraction, c.thresholds.busbw_judge_bytes});
  e.expected_gbps = a.expected_gbps;
  // Only a run across nodes goes through the NICs; a one-node run is NVLink/PCIe.
  if (e.nodes.size() > 1)
    for (auto& f : a.findings) findings->push_back(std::move(f));
  return e;
}

// all_reduce_perf on the PATH, under srun inside a Slurm allocation, with the tuned environment;
// its output is kept in the run directory and imported.
Result<std::string> RunNcclTests(const BenchArgs& a, BenchContext& c) {
  std::string searched;
  SpawnSpec spec;
  std::vector<std::string> args =
      a.nccl_args.empty() ? std::vector<std::string>{"-b", "8M", "-e", "512M", "-f", "2", "-g", "1"}
                          : a.nccl_args;
  spec.argv = {"all_reduce_perf"};
  if (Lookup(c.env, "SLURM_JOB_ID") && !FindOnPath("srun", c.env).empty()) {
    spec.argv = {"srun", "all_reduce_perf"};
  } else if (!a.mpi_hosts.empty()) {
    // Open MPI: one rank per GPU on each host; -x carries each tuned variable to the ranks.
    if (FindOnPath("mpirun", c.env).empty())
      return MakeError("--mpirun-hosts given but mpirun is not on the PATH");
    const int per = std::max(a.layout.nproc_per_node, 1);
    std::vector<std::string> hosts;
    for (const auto& h : Split(a.mpi_hosts, ',')) hosts.push_back(h + ":" + std::to_string(per));
    spec.argv = {"mpirun", "-np", std::to_string(per * static_cast<int>(hosts.size())), "-H",
                 Join(hosts, ",")};
    for (const auto& [k, v] : c.job_env)
      if (StartsWith(k, "NCCL_") || StartsWith(k, "TORCH_"))
        spec.argv.insert(spec.argv.end(), {"-x", k});
    spec.argv.push_back("all_reduce_perf");
  }
  if (FindOnPath("all_reduce_perf", c.env).empty())
    return MakeError("all_reduce_perf is not on the PATH", "",
                     "build nccl-tests (make MPI=1) and put its build/ directory on the PATH");
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = c.job_env;
  const std::string out_path = c.run_dir + "/nccl-tests.txt";
  std::remove(out_path.c_str());
  auto fd = CreateNewFile(out_path, kPrivateFile);
  if (!fd.ok()) return fd.error();
  spec.stdout_fd = *fd;
  log::Info("running {}", Join(spec.argv, " "));
  // SIGTERM/SIGINT (scancel, Ctrl-C) queue for the wait instead of killing us and orphaning
  // the benchmark: the wait TERMs it, KILLs it after the grace, and RunBench exits 128+S.
  BlockLoopSignals({SIGTERM, SIGINT, SIGCHLD});
  auto child = Spawn(spec);
  ::close(*fd);
  if (!child.ok()) return child.error();
  WaitOutcome waited =
      WaitChildren({child->pid}, std::chrono::steady_clock::now() + std::chrono::hours(24 * 365),
                   WaitPolicy{.stop_grace = std::chrono::seconds(5)});
  const int status = waited.ends[0].wait_status;
  if (waited.stopped) {
    return MakeError(
        fmt::format("{} stopped: {} from pid {}", spec.argv[0],
                    watchdog::SignalName(waited.stopped->signal), waited.stopped->from_pid),
        out_path, "what it printed before the stop is in the file");
  }
  if (child->exec_errno != 0)
    return MakeError("cannot run " + spec.argv[0] + ": " + std::strerror(child->exec_errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    log::Warn("{} ended with status {}; importing what it printed", spec.argv[0],
              WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return out_path;
}

// History and baseline comparisons, the appended line and the picture (node 0 only).
void Record(const BenchArgs& a, BenchContext& c, const warmup::HistoryEntry& e,
            const nlohmann::json& report, std::vector<Finding>* findings) {
  BandwidthRecord r{a.history, a.baseline, a.svg.empty() ? c.run_dir + "/bandwidth.svg" : a.svg,
                    a.last_n, c.thresholds.max_busbw_drop};
  for (auto& f : RecordBandwidth(r, e, report, c.facts, c.env)) findings->push_back(std::move(f));
}

int RunBench(const BenchArgs& a) {
  auto ctx = Prepare(a);
  if (!ctx.ok()) {
    log::Error("bench: {}", ctx.error().Describe());
    return exit_code::kUsage;
  }
  std::vector<Finding> findings;
  nlohmann::json report;
  Result<warmup::HistoryEntry> entry = MakeError("no mode");
  bool node0 = true;
  if (a.nccl_tests) {
    auto out = RunNcclTests(a, *ctx);
    if (!out.ok()) {
      log::Error("bench --nccl-tests: {}", out.error().Describe());
      if (auto s = StopSignalSeen()) return exit_code::kSignalBase + s->signal;
      return exit_code::kUsage;
    }
    entry = Import(*out, *ctx, &findings);
  } else if (!a.import_file.empty()) {
    entry = Import(a.import_file, *ctx, &findings);
  } else {
    entry = Sweep(a, *ctx, &report, &findings);
    node0 = report.value("this_node", nlohmann::json::object()).value("node_rank", 0) == 0;
  }
  if (!entry.ok()) {
    log::Error("bench: {}", entry.error().Describe());
    return exit_code::kUsage;
  }
  if (node0) Record(a, *ctx, *entry, report, &findings);
  for (const auto& f : findings) {
    std::string tag(f.outcome == Outcome::kPass ? "pass" : OutcomeName(f.outcome));
    (f.outcome == Outcome::kFail ? log::Error("  {:<5} {:<28} {}", tag, f.check_id, f.message)
                                 : log::Info("  {:<5} {:<28} {}", tag, f.check_id, f.message));
    if (!f.next_step.empty() && f.outcome != Outcome::kPass)
      log::Info("        fix: {}", f.next_step);
  }
  if (!report.is_null()) {
    for (const auto& fj : report.value("findings", nlohmann::json::array())) {
      std::string id = fj.value("check", "");
      if (StartsWith(id, "warmup.bandwidth") && fj.value("outcome", "") != "pass" &&
          fj.value("outcome", "") != "skip")
        findings.push_back(fj.get<Finding>());
    }
  }
  log::Info("bench: run directory {}", ctx->run_dir);
  Outcome worst = Worst(findings);
  return worst == Outcome::kWarn || worst == Outcome::kFail || worst == Outcome::kError
             ? exit_code::kChecksFailed
             : exit_code::kOk;
}

}  // namespace

void SetupBench(CLI::App& sub, int* exit_code) {
  auto a = std::make_shared<BenchArgs>();
  sub.add_option("--nnodes", a->layout.nnodes, "Nodes (default: SLURM_NNODES, else 1)")
      ->check(CLI::Range(1, 1000000));
  sub.add_option("--node-rank", a->layout.node_rank, "This node's rank (default: SLURM_NODEID)")
      ->check(CLI::Range(0, 1000000));
  sub.add_option("--nproc-per-node", a->layout.nproc_per_node, "Ranks per node (default 1)")
      ->check(CLI::Range(1, 4096));
  sub.add_option("--rendezvous", a->layout.rendezvous, "Node 0's HOST:PORT");
  sub.add_option("--warmup-port", a->layout.warmup_port, "Port of the sweep's store on node 0")
      ->check(CLI::Range(1, 65535));
  sub.add_option("--sizes", a->sizes, "Sweep sizes, e.g. 8M,64M,512M (default: the warm-up's)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            auto sizes = ParseSizes(text);
            return sizes.ok() ? std::string() : sizes.error().message + " (e.g. 1M,8M,64M)";
          },
          "SIZES"));
  sub.add_option("--iterations", a->iterations, "Timed all_reduces per size")
      ->check(CLI::Range(1, 1000));
  sub.add_option("--backend", a->backend, "auto | nccl | gloo")
      ->check(CLI::IsMember({"auto", "nccl", "gloo"}));
  sub.add_option("--pairs", a->pairs,
                 "Pair rounds naming a slow node: auto (when below the line or baseline) | "
                 "always | never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  auto* history =
      sub.add_option("--history", a->history, "JSON-lines history file: compare, then append");
  sub.add_option("--history-runs", a->last_n, "Compare with the median of the last N runs")
      ->check(CLI::Range(1, 1000))
      ->needs(history);
  sub.add_option("--baseline", a->baseline, "Baseline: one history line (a good run's)");
  sub.add_option("--svg", a->svg, "Where the picture goes (default: RUN_DIR/bandwidth.svg)");
  sub.add_option("--import", a->import_file, "Import an nccl-tests output instead of sweeping");
  sub.add_flag("--nccl-tests", a->nccl_tests,
               "Run all_reduce_perf (srun in a Slurm job) with the tuned environment, import it");
  sub.add_option("--mpirun-hosts", a->mpi_hosts,
                 "Outside Slurm: run all_reduce_perf with mpirun on HOST,HOST (--nproc-per-node "
                 "ranks each)");
  sub.add_option("--nccl-tests-args", a->nccl_args,
                 "Arguments for all_reduce_perf (default: -b 8M -e 512M -f 2 -g 1)")
      ->allow_extra_args();
  sub.add_option("--timeout", a->timeout_s, "Seconds for the sweep")
      ->check(SecondsValidator(0, 86400, /*lo_open=*/true));
  sub.add_option("--recipe", a->recipe, "Recipe (name or path) for the environment and thresholds");
  sub.add_option("--sysroot", a->sysroot, "Read the node's facts from this tree");
  sub.add_option("--node-name", a->node_name, "This node's name in messages");
  sub.add_option("--run-dir", a->run_dir, "Where results go (default: a new $TMPDIR directory)");
  sub.callback([a, exit_code] { *exit_code = RunBench(*a); });
}

}  // namespace sl::launcher
