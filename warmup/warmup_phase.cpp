#include "warmup/warmup_phase.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/file_writer.h"
#include "common/finding.h"
#include "common/json_text.h"
#include "common/spawn.h"
#include "warmup/compare.h"
#include "warmup/protocol.h"

namespace sl::warmup {
namespace {

namespace fs = std::filesystem;

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ReadText(const std::string& path, std::size_t max = 1 << 20) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::string s(max, '\0');
  f.read(s.data(), static_cast<std::streamsize>(max));
  s.resize(static_cast<std::size_t>(f.gcount()));
  return s;
}

std::string LastLines(const std::string& text, int n) {
  std::size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n')) --pos;
  std::size_t end = pos;
  for (int i = 0; i < n && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  return text.substr(pos == 0 ? 0 : pos + 1, end - (pos == 0 ? 0 : pos + 1));
}

// Plans hold the store's key and reports the job's facts: owner-only, through the one writer.
bool WriteFile(const std::string& path, const std::string& content) {
  return WriteFileAtomic(path, content, kPrivateFile).ok();
}

// Everything but the report: a failure that happened before node 0 could say anything.
nlohmann::json LocalFailureReport(const WarmupOptions& o, std::vector<Finding> findings,
                                  double spawn_ms) {
  return {{"schema", "safe-launch.warmup/1"},
          {"verdict", "fail"},
          {"passed", false},
          {"nnodes", o.topology.nnodes},
          {"nproc_per_node", o.topology.nproc_per_node},
          {"world", o.topology.WorldSize()},
          {"backend", o.backend},
          {"store", o.topology.rendezvous_host + ":" + std::to_string(o.topology.warmup_port)},
          {"findings", findings},
          {"source", "node " + std::to_string(o.topology.node_rank) + " (no report from node 0)"},
          {"timings_ms", {{"total", NowMs() - spawn_ms}}}};
}

// One local rank's process and where it writes.
struct RankRun {
  pid_t pid = -1;
  int local_rank = 0;
  std::string out, log;
  bool killed = false;  ///< still running at the backstop and killed
  int status = 0;       ///< raw wait status
};

// Starts one safe-launch-warmup per local rank through the one Spawn and waits for them all, up
// to `hard_stop_ms` (wall clock). A SIGTERM/SIGINT ends the wait within a tick (the ranks get
// TERM, then KILL): the launcher sees it latched (StopSignalSeen) and stops with 128+S. Error
// when a rank could not be forked (the ones started are killed and reaped).
Result<std::vector<RankRun>> RunRanks(const WarmupOptions& o, const std::string& binary,
                                      const std::string& plan_path, const std::string& dir,
                                      double hard_stop_ms) {
  const Topology& t = o.topology;
  std::vector<RankRun> ranks(static_cast<std::size_t>(t.nproc_per_node));
  std::vector<pid_t> pids;
  for (int l = 0; l < t.nproc_per_node; ++l) {
    RankRun& c = ranks[static_cast<std::size_t>(l)];
    c.local_rank = l;
    c.out = dir + "/rank" + std::to_string(t.GlobalRank(l)) + ".json";
    c.log = dir + "/rank" + std::to_string(t.GlobalRank(l)) + ".log";
    std::remove(c.out.c_str());
    // The ranks get the job's environment, so NCCL sees the tuned variables the job will see;
    // they die with safe-launch and log to the rank file.
    SpawnSpec spec;
    spec.argv = {binary, "--plan", plan_path, "--local-rank", std::to_string(l), "--out", c.out};
    spec.env = o.env;
    // The ranks get the derived key in the plan; the secret itself stays out of their environ.
    spec.env.erase(std::string(kWarmupSecretVar));
    spec.death_signal = SIGKILL;
    // A fresh 0600 file: never a planted symlink followed, never a previous run's log appended.
    std::remove(c.log.c_str());
    auto created = CreateNewFile(c.log, kPrivateFile);
    const int log_fd = created.ok() ? *created : -1;
    spec.stdout_fd = spec.stderr_fd = log_fd >= 0 ? log_fd : kDevNullFd;
    auto spawned = Spawn(spec);
    if (log_fd >= 0) ::close(log_fd);
    if (!spawned.ok()) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      (void)WaitChildren(pids, std::chrono::steady_clock::now());
      return spawned.error();
    }
    c.pid = spawned->pid;
    pids.push_back(c.pid);
  }
  const auto backstop = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long long>(hard_stop_ms - NowMs()));
  WaitOutcome waited = WaitChildren(pids, backstop);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].status = waited.ends[i].wait_status;
    ranks[i].killed = waited.deadline_passed && waited.ends[i].killed;
  }
  return ranks;
}

}  // namespace

std::string FindWarmupBinary(const InstallLayout& layout) {
  if (layout.bin_dir.empty()) return "";
  // Installed: P/libexec/safe-launch/ (not on PATH: it is no command of its own). Build tree and
  // scripts/device-check.sh's kit: next to safe-launch.
  for (const std::string& dir : {layout.libexec_dir, layout.bin_dir}) {
    const std::string candidate = dir + "/safe-launch-warmup";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string SourceAddressFor(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return "";
  std::string out;
  for (addrinfo* ai = res; ai != nullptr && out.empty(); ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    // connect() on UDP sends nothing: it only asks the kernel for the route and source address.
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      char buf[INET6_ADDRSTRLEN] = {};
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
        if (ss.ss_family == AF_INET)
          ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
        else
          ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
        out = buf;
      }
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return out;
}

namespace {

// "node 2 (gpu-17)": the entity of this node's findings.
std::string NodeLabel(const WarmupOptions& o) {
  return "node " + std::to_string(o.topology.node_rank) + " (" +
         (o.node_name.empty() ? o.facts.hostname : o.node_name) + ")";
}

// The outcome of a warm-up that failed on this node before any rank could report.
WarmupOutcome SetupFailure(const WarmupOptions& o, const std::string& node_label, double spawn_ms,
                           const std::string& check, const std::string& msg,
                           const std::string& fix) {
  Finding f;
  f.check_id = check;
  f.entity = node_label;
  f.outcome = Outcome::kFail;
  f.message = msg;
  f.next_step = fix;
  WarmupOutcome outcome;
  outcome.report = LocalFailureReport(o, {f}, spawn_ms);
  outcome.verdict_line = VerdictLine(outcome.report);
  return outcome;
}

// Where the rank plans, logs and results go: run_dir/warmup, or a fresh directory under $TMPDIR.
// "" (or `ec` set) when it could not be made.
std::string MakeWarmupDir(const WarmupOptions& o, std::error_code& ec) {
  std::string dir;
  if (!o.run_dir.empty()) {
    dir = (fs::path(o.run_dir) / "warmup").string();
    fs::create_directories(dir, ec);
  } else {
    std::string tmpl = (fs::temp_directory_path(ec) / "safe-launch-warmup.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) dir = tmpl;
  }
  return dir;
}

// What every local rank reads: the topology, the deadline, the store's auth and this node's facts.
WarmupPlan MakePlan(const WarmupOptions& o, double spawn_ms) {
  const Topology& t = o.topology;
  WarmupPlan plan;
  plan.nnodes = t.nnodes;
  plan.node_rank = t.node_rank;
  plan.nproc_per_node = t.nproc_per_node;
  plan.store_host = t.rendezvous_host;
  plan.store_port = t.warmup_port;
  plan.local_address = SourceAddressFor(t.rendezvous_host, t.warmup_port);
  plan.hosts = t.hosts;
  plan.spawn_unix_ms = spawn_ms;
  plan.deadline_unix_ms = spawn_ms + static_cast<double>(o.timeout.count());
  plan.backend = o.backend;
  if (!o.sweep_bytes.empty()) plan.sweep_bytes = o.sweep_bytes;
  plan.waive = o.waive;
  plan.bandwidth = o.bandwidth;
  if (o.iterations > 0) plan.iterations = o.iterations;
  plan.auth = o.auth.job_id.empty() ? ResolveWarmupAuth(o.env, t.warmup_port) : o.auth;
  plan.node.node_rank = t.node_rank;
  plan.node.node_name = o.node_name.empty() ? o.facts.hostname : o.node_name;
  plan.node.facts = o.facts;
  plan.node.env = ComparableEnvironment(o.env);
  plan.node.rendezvous = o.rendezvous;
  return plan;
}

// A rank's RESULT.json; null when it is missing or not JSON.
nlohmann::json ReadRankOutput(const std::string& path) {
  std::string text = ReadText(path);
  if (text.empty()) return nullptr;
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// The rank's entry in this_node.ranks: how it ended and its result.
nlohmann::json RankEntry(const Topology& t, const RankRun& c, const nlohmann::json& out) {
  nlohmann::json entry = {{"local_rank", c.local_rank},
                          {"rank", t.GlobalRank(c.local_rank)},
                          {"log", c.log},
                          {"killed_at_deadline", c.killed}};
  if (WIFEXITED(c.status)) entry["exit_status"] = WEXITSTATUS(c.status);
  if (WIFSIGNALED(c.status)) entry["signal"] = WTERMSIG(c.status);
  if (out.contains("result")) entry["result"] = out["result"];
  return entry;
}

// The rank's own failure (killed at the backstop, an error in its result, no result at all);
// nothing when it ended with a clean result.
std::optional<Finding> RankFailure(const RankRun& c, const nlohmann::json& out,
                                   const std::string& rank_text, double backstop_s) {
  Finding f;
  f.check_id = "warmup.rank";
  f.entity = rank_text;
  f.outcome = Outcome::kFail;
  if (c.killed) {
    f.message = fmt::format("{} was still running {:.0f} s after the deadline and was killed",
                            rank_text, backstop_s);
  } else if (out.contains("result") && !out["result"].value("error", "").empty()) {
    f.message = rank_text + ": " + out["result"].value("error", "");
  } else if (!out.contains("result")) {
    std::string tail = LastLines(ReadText(c.log), 3);
    f.message = rank_text + " ended without a result (" +
                (WIFSIGNALED(c.status) ? "killed by signal " + std::to_string(WTERMSIG(c.status))
                                       : "exit status " + std::to_string(WEXITSTATUS(c.status))) +
                ")" + (tail.empty() ? "" : ": " + tail);
  } else {
    return std::nullopt;
  }
  f.next_step = "look at " + c.log;
  return f;
}

// What this node's ranks left: the job-wide report (if one received it), their entries, their
// failures.
struct Collected {
  nlohmann::json report;
  nlohmann::json local = nlohmann::json::array();
  std::vector<Finding> local_findings;
};

// The job-wide report from whichever local rank received it (rank 0 on node 0), and every rank's
// entry and failure.
Collected CollectRanks(const Topology& t, const std::vector<RankRun>& children,
                       const std::string& node_label, double backstop_s) {
  Collected got;
  for (const auto& c : children) {
    nlohmann::json out = ReadRankOutput(c.out);
    got.local.push_back(RankEntry(t, c, out));
    if (got.report.is_null() && out.contains("report") && out["report"].is_object())
      got.report = out["report"];
    std::string rank_text =
        "rank " + std::to_string(t.GlobalRank(c.local_rank)) + " on " + node_label;
    if (auto f = RankFailure(c, out, rank_text, backstop_s))
      got.local_findings.push_back(std::move(*f));
  }
  return got;
}

// The report this node keeps: node 0's (plus this node's own rank errors), or, when none came,
// one built from what the local ranks saw; with this node's section added.
nlohmann::json ThisNodeReport(const WarmupOptions& o, Collected got, const WarmupPlan& plan,
                              const std::string& node_label, const std::string& dir,
                              double spawn_ms) {
  const Topology& t = o.topology;
  nlohmann::json report = std::move(got.report);
  if (report.is_null()) {
    if (got.local_findings.empty()) {
      Finding f;
      f.check_id = "warmup.rank";
      f.entity = node_label;
      f.outcome = Outcome::kFail;
      f.message = "no warm-up report from node 0 and no error from this node's ranks";
      f.next_step = "look at the rank logs in " + dir;
      got.local_findings.push_back(std::move(f));
    }
    report = LocalFailureReport(o, got.local_findings, spawn_ms);
  } else if (!got.local_findings.empty() && t.node_rank != 0) {
    // The job-wide report is node 0's view; this node's own rank errors are added to the file.
    report["local_findings"] = got.local_findings;
  }
  report["this_node"] = {{"node_rank", t.node_rank},
                         {"name", plan.node.node_name},
                         {"local_address", plan.local_address},
                         {"warmup_dir", dir},
                         {"ranks", std::move(got.local)}};
  return report;
}

// The outcome from the report, written to run_dir/warmup.json (or the warm-up directory's).
WarmupOutcome Finish(const WarmupOptions& o, nlohmann::json report, const std::string& dir) {
  WarmupOutcome outcome;
  outcome.passed = report.value("verdict", "fail") != "fail";
  outcome.verdict_line = VerdictLine(report);
  if (o.topology.node_rank == 0) outcome.details = RenderWarmupReport(report);
  std::string path =
      !o.run_dir.empty() ? (fs::path(o.run_dir) / "warmup.json").string() : dir + "/warmup.json";
  if (WriteFile(path, JsonText(report) + "\n")) outcome.json_path = path;
  outcome.report = std::move(report);
  return outcome;
}

}  // namespace

WarmupOutcome RunWarmup(const WarmupOptions& o) {
  const std::string node_label = NodeLabel(o);
  const double spawn_ms = NowMs();
  auto fail_now = [&](const std::string& check, const std::string& msg, const std::string& fix) {
    return SetupFailure(o, node_label, spawn_ms, check, msg, fix);
  };

  std::error_code ec;
  const std::string dir = MakeWarmupDir(o, ec);
  if (dir.empty() || ec || !fs::is_directory(dir))
    return fail_now("warmup.setup",
                    "cannot create the warm-up directory " + dir + ": " + ec.message(),
                    "make the run directory writable (--run-dir)");

  std::string binary = o.warmup_binary.empty() ? FindWarmupBinary(SelfLayout()) : o.warmup_binary;
  if (binary.empty() || ::access(binary.c_str(), X_OK) != 0)
    return fail_now(
        "warmup.setup",
        "safe-launch-warmup was not found" +
            (binary.empty() ? " in " + SelfLayout().libexec_dir + " or next to safe-launch"
                            : " at " + binary) +
            ": this safe-launch was built without libtorch",
        "build it with libtorch (cmake -DCMAKE_PREFIX_PATH=<torch cmake prefix>, see "
        "doc/manual.md 'Warm-up'), or pass --no-warmup");

  const WarmupPlan plan = MakePlan(o, spawn_ms);
  const std::string plan_path = dir + "/plan.json";
  if (!WriteFile(plan_path, JsonText(nlohmann::json(plan)) + "\n"))
    return fail_now("warmup.setup", "cannot write " + plan_path + ": " + std::strerror(errno),
                    "make the run directory writable (--run-dir)");

  // The ranks enforce the deadline themselves; 3 s later the wait kills what is left.
  const double hard_stop = plan.deadline_unix_ms + 3000;
  auto started = RunRanks(o, binary, plan_path, dir, hard_stop);
  if (!started.ok()) {
    return fail_now("warmup.setup", started.error().message, started.error().fix);
  }
  Collected got =
      CollectRanks(o.topology, *started, node_label, (hard_stop - plan.deadline_unix_ms) / 1000.0);
  return Finish(o, ThisNodeReport(o, std::move(got), plan, node_label, dir, spawn_ms), dir);
}

}  // namespace sl::warmup
