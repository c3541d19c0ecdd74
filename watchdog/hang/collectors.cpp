#include "watchdog/hang/collectors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include "common/json_text.h"
#include "common/parse/kmsg.h"
#include "common/strings.h"
#include "nccl/job_env.h"
#include "watchdog/process_tree.h"

namespace sl::hang {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

Environment ParseEnviron(std::string_view text) {
  Environment env;
  for (const std::string& kv : Split(text, '\0')) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

std::vector<std::string> ParseCmdline(std::string_view text) { return Split(text, '\0'); }

bool CatchesSignal(std::string_view proc_status, int sig) {
  if (sig < 1 || sig > 64) return false;
  for (const std::string& line : SplitLines(proc_status)) {
    if (!StartsWith(line, "SigCgt:")) continue;
    const std::string hex(Trim(std::string_view(line).substr(7)));
    std::uint64_t mask = 0;
    for (char c : hex) {
      const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                : -1;
      if (d < 0) return false;
      mask = (mask << 4) | static_cast<std::uint64_t>(d);
    }
    return (mask >> (sig - 1)) & 1u;
  }
  return false;
}

std::vector<RankProc> FindRanks(const FileReader& reader, const std::vector<pid_t>& pids) {
  std::vector<RankProc> all;
  std::map<pid_t, pid_t> parent;
  for (const auto& p : watchdog::ListProcesses(reader)) parent[p.pid] = p.ppid;
  std::map<pid_t, int> rank_of;
  for (pid_t pid : pids) {
    auto text = reader.ReadFile(fmt::format("/proc/{}/environ", pid), 1 << 20);
    if (!text.ok()) continue;
    RankProc r;
    r.pid = pid;
    r.env = ParseEnviron(*text);
    auto rank = Lookup(r.env, "RANK");
    if (!rank) continue;
    r.rank = static_cast<int>(ParseInt(*rank).value_or(-1));
    if (auto lr = Lookup(r.env, "LOCAL_RANK"))
      r.local_rank = static_cast<int>(ParseInt(*lr).value_or(-1));
    rank_of[pid] = r.rank;
    all.push_back(std::move(r));
  }
  // Dataloader workers and other forks inherit RANK: keep only the topmost process of a rank.
  std::vector<RankProc> out;
  for (auto& r : all) {
    bool nested = false;
    for (pid_t p = parent[r.pid]; p > 1 && !nested; p = parent.count(p) ? parent[p] : 0) {
      if (auto it = rank_of.find(p); it != rank_of.end() && it->second == r.rank) nested = true;
    }
    if (!nested) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const RankProc& a, const RankProc& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pid < b.pid;
  });
  return out;
}

CounterSnapshot ReadIbCounters(const FileReader& reader) {
  CounterSnapshot snap;
  const std::string base = "/sys/class/infiniband";
  auto devs = reader.ListDir(base);
  if (!devs.ok()) return snap;
  for (const auto& dev : *devs) {
    auto ports = reader.ListDir(base + "/" + dev + "/ports");
    if (!ports.ok()) continue;
    for (const auto& port : *ports) {
      for (const char* group : {"counters", "hw_counters"}) {
        std::string dir = fmt::format("{}/{}/ports/{}/{}", base, dev, port, group);
        auto names = reader.ListDir(dir);
        if (!names.ok()) continue;
        for (const auto& name : *names) {
          auto text = reader.ReadFile(dir + "/" + name, 256);
          if (!text.ok()) continue;
          auto v = ParseUint(*text);
          if (v.ok()) snap[fmt::format("{}:{}/{}/{}", dev, port, group, name)] = *v;
        }
      }
    }
  }
  return snap;
}

nlohmann::json IbCounterDeltas(const CounterSnapshot& start, const CounterSnapshot& now) {
  nlohmann::json ports = nlohmann::json::object();
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& [key, value] : now) {
    auto slash = key.find('/');
    std::string port = key.substr(0, slash);
    std::string counter = key.substr(key.rfind('/') + 1);
    auto it = start.find(key);
    nlohmann::json c = {{"now", value}};
    if (it != start.end()) {
      c["start"] = it->second;
      // Counters wrap or reset (port reset); a negative delta is reported as such.
      c["delta"] = static_cast<std::int64_t>(value - it->second);
      std::string lc = ToLower(counter);
      bool bad = lc.find("err") != std::string::npos || lc.find("discard") != std::string::npos ||
                 lc.find("downed") != std::string::npos ||
                 lc.find("recovery") != std::string::npos ||
                 lc.find("timeout") != std::string::npos || lc.find("out_of_") != std::string::npos;
      if (bad && value > it->second) {
        errors.push_back({{"port", port}, {"counter", counter}, {"delta", value - it->second}});
      }
    }
    ports[port][key.substr(slash + 1)] = std::move(c);
  }
  return {{"ports", ports}, {"error_deltas", errors}};
}

std::string FilterKernelLog(std::string_view kmsg, std::uint64_t since_usec) {
  static constexpr std::string_view kWords[] = {"mlx5", "infiniband", "ib_", "rdma", "xid",
                                                "nvrm", "link",       "aer", "pcie", "nvlink",
                                                "roce", "ib0",        "ib1", "hfi1"};
  // The same record parser as the kernel.log check (common/parse/kmsg.h): one reading of
  // "prio,seq,usec,flags;message" and its \xNN escapes for both.
  std::string out;
  for (const KmsgRecord& r : ParseKmsg(kmsg).records) {
    if (r.usec < 0 || static_cast<std::uint64_t>(r.usec) < since_usec) continue;
    std::string lc = ToLower(r.message);
    bool keep = ClassifyKernelRecord(r).has_value();
    for (auto w : kWords) keep = keep || lc.find(w) != std::string::npos;
    if (keep) {
      out += fmt::format("[{:>12.6f}] {}\n", r.usec / 1e6, Printable(r.message, r.message.size()));
    }
  }
  return out;
}

namespace {

void Account(CollectorOutcome* o, std::string_view rel, const Result<std::uint64_t>& r) {
  if (r.ok()) {
    o->bytes += *r;
    o->files.emplace_back(rel);
  } else {
    o->status = "error";
    if (!o->error.empty()) o->error += "; ";
    o->error += r.error().message;
  }
}

// A rank's Flight Recorder dump: where it will appear and whether its pipe was written to.
struct FrDump {
  int rank;
  std::string path;
  bool triggered = false;
};

// Writes "1\n" to one rank's dump pipe; its entry in details.pipes. `triggered` when written.
nlohmann::json TriggerDumpPipe(int rank, const std::string& pipe, bool& triggered) {
  // O_NONBLOCK: opening a FIFO for writing without a reader fails with ENXIO instead of
  // blocking forever (a rank whose watchdog is gone, or torch too old to create the pipe).
  int fd = open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return {{"rank", rank},
            {"pipe", pipe},
            {"status", "error"},
            {"error",
             errno == ENXIO ? "no reader on the pipe (ENXIO)" : std::string(std::strerror(errno))}};
  }
  ssize_t n = write(fd, "1\n", 2);
  int err = errno;
  close(fd);
  triggered = n == 2;
  return {{"rank", rank},
          {"pipe", pipe},
          {"status", n == 2 ? "triggered" : "error"},
          {"error", n == 2 ? "" : std::string(std::strerror(err))}};
}

// Every rank's dump path (its TORCH_FR_DUMP_TEMP_FILE prefix), and -- the job alive and the rank
// having a pipe -- its pipe triggered. Returns details.pipes.
nlohmann::json TriggerDumps(const CaptureContext& ctx, std::vector<FrDump>& wanted) {
  nlohmann::json pipes = nlohmann::json::array();
  for (const RankProc& r : ctx.ranks) {
    std::string pipe_prefix = nccl::FlightRecorderPipePrefix(r.env);
    std::string dump_prefix = nccl::FlightRecorderDumpPrefix(r.env);
    wanted.push_back({r.rank, dump_prefix + std::to_string(r.rank)});
    if (pipe_prefix.empty() || !ctx.job_alive) continue;
    std::string pipe = pipe_prefix + std::to_string(r.rank) + ".pipe";
    pipes.push_back(TriggerDumpPipe(r.rank, pipe, wanted.back().triggered));
  }
  return pipes;
}

// Waits up to `wait` for the dumps: a file counts when written after the job started and its
// size has been stable for two polls (torch writes it in one go, but not atomically). Only
// triggered ranks are waited for: a rank without a pipe reader will not dump for us. Returns
// which ranks' dumps are complete.
std::map<int, bool> WaitForDumps(const std::vector<FrDump>& wanted, bool any_triggered,
                                 std::chrono::milliseconds wait, fs::file_time_type start_wall_ft,
                                 fs::file_time_type trigger_time) {
  auto start = Clock::now();
  std::map<int, std::uintmax_t> last_size;
  std::map<int, bool> done;
  for (;;) {
    for (const FrDump& w : wanted) {
      if (done[w.rank]) continue;
      std::error_code ec;
      auto size = fs::file_size(w.path, ec);
      if (ec) continue;
      auto mtime = fs::last_write_time(w.path, ec);
      if (ec || mtime < start_wall_ft) continue;
      bool fresh_enough = !any_triggered || mtime >= trigger_time ||
                          Clock::now() - start > std::chrono::milliseconds(500);
      if (size > 0 && fresh_enough && last_size[w.rank] == size) done[w.rank] = true;
      last_size[w.rank] = size;
    }
    bool all = std::all_of(wanted.begin(), wanted.end(),
                           [&](const FrDump& w) { return done[w.rank] || !w.triggered; });
    if (all || Clock::now() - start >= wait) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  return done;
}

// Copies each dump that exists into fr/fr_rank_<rank>.pkl; returns details.dumps.
nlohmann::json CopyDumps(const std::vector<FrDump>& wanted, std::map<int, bool>& done,
                         Bundle& bundle, CollectorOutcome& o) {
  nlohmann::json dumps = nlohmann::json::array();
  for (const FrDump& w : wanted) {
    std::error_code ec;
    if (!fs::exists(w.path, ec)) {
      dumps.push_back({{"rank", w.rank}, {"path", w.path}, {"status", "missing"}});
      continue;
    }
    std::string rel = fmt::format("fr/fr_rank_{}.pkl", w.rank);
    auto r = bundle.CopyFile(rel, w.path);
    Account(&o, rel, r);
    dumps.push_back({{"rank", w.rank},
                     {"path", w.path},
                     {"status", r.ok() ? "collected" : "error"},
                     {"complete", done[w.rank]}});
  }
  return dumps;
}

// Flight Recorder: write to every rank's dump pipe (torch's DumpPipe reads it in the watchdog's
// heartbeat loop and dumps at once), then pick up the dump files as they appear.
CollectorOutcome CollectFlightRecorder(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  if (ctx.ranks.empty()) {
    o.status = "skipped";
    o.error = "no rank process (with RANK in its environment) found";
  }
  std::vector<FrDump> wanted;
  auto trigger_time = fs::file_time_type::clock::now();
  nlohmann::json pipes = TriggerDumps(ctx, wanted);
  o.details["pipes"] = pipes;
  bool any_triggered = false;
  for (auto& p : pipes) any_triggered = any_triggered || p["status"] == "triggered";
  auto wait = any_triggered ? ctx.fr_wait : std::chrono::milliseconds(0);
  auto start_wall_ft =
      fs::file_time_type::clock::now() - (std::chrono::system_clock::now() - ctx.start_wall);
  std::map<int, bool> done = WaitForDumps(wanted, any_triggered, wait, start_wall_ft, trigger_time);
  o.details["dumps"] = CopyDumps(wanted, done, bundle, o);
  if (o.status == "ok" && !ctx.ranks.empty() && o.files.empty()) {
    o.status = "error";
    o.error = any_triggered
                  ? "pipes triggered but no dump was written before the deadline"
                  : "no Flight Recorder pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE) and no dump";
  }
  return o;
}

CollectorOutcome CollectStacks(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  std::vector<pid_t> pids;
  for (const auto& r : ctx.ranks) pids.push_back(r.pid);
  if (pids.empty()) pids = ctx.descendants;
  if (pids.empty()) {
    o.status = "skipped";
    o.error = "no live job process";
    return o;
  }
  // py-spy by the path found on the job's PATH: the helper runs with safe-launch's own PATH.
  std::string pyspy;
  for (const std::string& dir : Split(Lookup(ctx.job_env, "PATH").value_or("/usr/bin:/bin"), ':')) {
    if (pyspy.empty() && !dir.empty() && access((dir + "/py-spy").c_str(), X_OK) == 0)
      pyspy = dir + "/py-spy";
  }
  const bool have_pyspy = !pyspy.empty();
  o.details["method"] = have_pyspy && ctx.run_helper ? "py-spy" : "proc";
  if (have_pyspy) o.details["py_spy"] = pyspy;
  for (pid_t pid : pids) {
    std::string text;
    if (have_pyspy && ctx.run_helper) {
      auto r = ctx.run_helper({pyspy, "dump", "--native", "--pid", std::to_string(pid)},
                              std::chrono::milliseconds(3000));
      if (r.ok())
        text = fmt::format("# py-spy dump --native --pid {} (exit {}{})\n{}", pid, r->exit_status,
                           r->timed_out ? ", timed out" : "", r->output);
    }
    // Kernel view of every thread: state, what it waits on, and (root only) the kernel stack.
    std::string proc = fmt::format("# /proc/{}/task/*/{{stat,wchan,stack}}\n", pid);
    auto tasks = ctx.fs->ListDir(fmt::format("/proc/{}/task", pid));
    if (tasks.ok()) {
      for (const auto& tid : *tasks) {
        std::string base = fmt::format("/proc/{}/task/{}", pid, tid);
        auto stat = ctx.fs->ReadFile(base + "/stat", 4096);
        auto wchan = ctx.fs->ReadFile(base + "/wchan", 256);
        auto stack = ctx.fs->ReadFile(base + "/stack", 16384);
        proc +=
            fmt::format("## tid {}\nstat: {}wchan: {}\n{}\n", tid,
                        stat.ok() ? *stat : "(unreadable)\n", wchan.ok() ? *wchan : "(unreadable)",
                        stack.ok() ? *stack : "(kernel stack unreadable)");
      }
    } else {
      proc += "(process gone)\n";
    }
    text += "\n" + proc;
    std::string rel = fmt::format("stacks/pid_{}.txt", pid);
    for (const auto& r : ctx.ranks) {
      if (r.pid == pid) rel = fmt::format("stacks/rank_{}_pid_{}.txt", r.rank, pid);
    }
    Account(&o, rel, bundle.WriteFile(rel, text));
  }
  return o;
}

// A rank asked for its Python stacks: its file and the size before the signal.
struct AskedRank {
  const RankProc* rank;
  std::string path;
  off_t size_before = 0;
};

// Why a rank is not signalled ("" when it may be): an unregistered real-time signal kills a
// process, so only a rank whose sitecustomize recorded it (its file) and that catches the
// signal now (SigCgt; exec resets handlers) is asked.
std::string WhyNotAsk(const CaptureContext& ctx, const RankProc& r, int sig,
                      const std::string& path, off_t* size) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_uid != ctx.job_uid && st.st_uid != ::geteuid())) {
    return "no registration file " + path +
           " (not a Python process, SAFE_LAUNCH_PYTHON_STACKS=0, or the job replaced "
           "PYTHONPATH or ran python -S/-I)";
  }
  auto status = ctx.fs->ReadFile(fmt::format("/proc/{}/status", r.pid), 16384);
  if (!status.ok() || !CatchesSignal(*status, sig)) {
    return fmt::format(
        "signal {} is not caught by pid {} now (its handler is gone): not sent, "
        "it would kill the rank",
        sig, r.pid);
  }
  *size = st.st_size;
  return "";
}

// What faulthandler appended since `size_before`, behind the file's header line; read without
// following a link.
Result<std::string> ReadNewStacks(const AskedRank& a) {
  int fd = ::open(a.path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return MakeError(fmt::format("cannot open: {}", std::strerror(errno)), a.path);
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || data.size() > (8u << 20)) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const std::string header = data.substr(0, data.find('\n') + 1);
  const std::size_t from = std::min<std::size_t>(data.size(), std::max<off_t>(a.size_before, 0));
  return header + data.substr(std::max(from, header.size()));
}

// faulthandler writes from the signal handler at once; a rank is done when its file grew and
// kept its size for one poll. Returns the indexes of the ranks done within `wait`.
std::set<std::size_t> WaitForStacks(const std::vector<AskedRank>& asked,
                                    std::chrono::milliseconds wait) {
  std::map<std::size_t, off_t> last;
  std::set<std::size_t> done;
  const auto until = Clock::now() + wait;
  while (done.size() < asked.size() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (std::size_t i = 0; i < asked.size(); ++i) {
      struct stat st {};
      if (done.count(i) || ::lstat(asked[i].path.c_str(), &st) != 0) continue;
      if (st.st_size > asked[i].size_before && last.count(i) && last[i] == st.st_size)
        done.insert(i);
      last[i] = st.st_size;
    }
  }
  return done;
}

// Python stacks of every rank through faulthandler (safe-launch's sitecustomize registered it on
// SAFE_LAUNCH_PYSTACKS_SIGNAL): signal each registered rank, wait for its file to grow and settle.
CollectorOutcome CollectPythonStacks(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  if (!ctx.job_alive || ctx.ranks.empty()) {
    o.status = "skipped";
    o.error = ctx.job_alive ? "no rank process (with RANK in its environment) found"
                            : "the job has ended: no rank to ask";
    return o;
  }
  nlohmann::json ranks = nlohmann::json::array();
  std::vector<AskedRank> asked;
  for (const RankProc& r : ctx.ranks) {
    const auto dir = Lookup(r.env, "SAFE_LAUNCH_PYSTACKS_DIR");
    const auto sig = ParseInt(Lookup(r.env, "SAFE_LAUNCH_PYSTACKS_SIGNAL").value_or(""));
    if (!dir || dir->empty() || !sig.ok() || *sig < SIGRTMIN || *sig > SIGRTMAX) {
      ranks.push_back({{"rank", r.rank},
                       {"pid", r.pid},
                       {"status", "not_enabled"},
                       {"error",
                        "no SAFE_LAUNCH_PYSTACKS_DIR/SIGNAL in its environment "
                        "(--no-python-stacks or SAFE_LAUNCH_PYTHON_STACKS=0)"}});
      continue;
    }
    AskedRank a{&r, fmt::format("{}/pid_{}.txt", *dir, r.pid)};
    if (std::string why = WhyNotAsk(ctx, r, static_cast<int>(*sig), a.path, &a.size_before);
        !why.empty()) {
      ranks.push_back(
          {{"rank", r.rank}, {"pid", r.pid}, {"status", "not_signalled"}, {"error", why}});
      continue;
    }
    if (::kill(r.pid, static_cast<int>(*sig)) != 0) {
      ranks.push_back({{"rank", r.rank},
                       {"pid", r.pid},
                       {"status", "error"},
                       {"error", fmt::format("kill: {}", std::strerror(errno))}});
      continue;
    }
    asked.push_back(std::move(a));
  }
  const std::set<std::size_t> done = WaitForStacks(asked, ctx.pystacks_wait);
  for (std::size_t i = 0; i < asked.size(); ++i) {
    const RankProc& r = *asked[i].rank;
    const std::string rel = fmt::format("stacks/rank_{}_pid_{}.py.txt", r.rank, r.pid);
    nlohmann::json j = {{"rank", r.rank}, {"pid", r.pid}, {"status", "ok"}};
    if (!done.count(i)) {
      j["status"] = "error";
      j["error"] =
          "signalled, but no stacks were written in time (the rank may be stuck "
          "holding its output file, or it exited)";
    }
    auto text = ReadNewStacks(asked[i]);
    if (text.ok() && done.count(i)) {
      Account(&o, rel, bundle.WriteFile(rel, *text));
      j["file"] = rel;
    }
    ranks.push_back(std::move(j));
  }
  o.details["ranks"] = ranks;
  if (asked.empty()) {
    o.status = "skipped";
    o.error = "no rank registered for Python stacks (see details.ranks)";
  } else if (o.files.size() < asked.size() && o.status == "ok") {
    o.status = "error";
    o.error = fmt::format("{} of {} signalled ranks wrote no stacks", asked.size() - o.files.size(),
                          asked.size());
  }
  return o;
}

CollectorOutcome CollectRas(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  std::string errors;
  int ok = 0;
  for (bool json : {false, true}) {
    auto r = QueryRasStatus(ctx.ras, json, std::chrono::milliseconds(1800));
    std::string rel = json ? "ras/verbose_status.json" : "ras/verbose_status.txt";
    if (r.ok()) {
      ++ok;
      Account(&o, rel, bundle.WriteFile(rel, r->body));
      o.details["server_protocol"] = r->server_protocol;
    } else {
      errors += (errors.empty() ? "" : "; ") + std::string(json ? "json: " : "text: ") +
                r.error().Describe();
    }
  }
  if (ok == 0) {
    o.status = "error";
    o.error = errors;
  } else if (!errors.empty()) {
    o.error = errors;
  }
  o.details["note"] = "RAS can report OK during a real hang; evidence, not a verdict";
  return o;
}

CollectorOutcome CollectIbCounters(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  auto now = ReadIbCounters(*ctx.fs);
  if (now.empty()) {
    o.status = "skipped";
    o.error = "no readable /sys/class/infiniband/*/ports/*/counters";
    return o;
  }
  auto j = IbCounterDeltas(ctx.ib_start, now);
  o.details["error_deltas"] = j["error_deltas"];
  Account(&o, "node/ib_counters.json", bundle.WriteFile("node/ib_counters.json", JsonText(j)));
  return o;
}

CollectorOutcome CollectKernelLog(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  auto kmsg = ReadFileBounded(*ctx.fs, "/dev/kmsg", ctx.kmsg_max_bytes);
  if (!kmsg.ok()) {
    o.status = "error";
    o.error = kmsg.error().Describe() +
              " (in containers /dev/kmsg is often hidden; "
              "run dmesg on the host)";
    return o;
  }
  // A cut ends inside a record: keep whole records only.
  if (kmsg->truncated) kmsg->text.resize(kmsg->text.rfind('\n') + 1);
  std::string text = FilterKernelLog(kmsg->text, ctx.start_monotonic_usec);
  if (ctx.evidence && ctx.matcher) {
    std::lock_guard lock(*ctx.evidence_mu);
    ctx.evidence->AddText(*ctx.matcher, text, "kernel.log");
  }
  if (kmsg->truncated) {
    // /dev/kmsg is read from its oldest record: what was cut is the newest, this job's included.
    o.details["truncated"] = true;
    o.details["bytes_read"] = kmsg->text.size();
    text += fmt::format(
        "[safe-launch] /dev/kmsg held more than the {} bytes read from its oldest record on: "
        "later records, possibly this job's, are not in this file; read them on the node "
        "(`dmesg -T | tail -n 2000`, `journalctl -k`)\n",
        kmsg->text.size());
  }
  Account(&o, "node/kernel.log", bundle.WriteFile("node/kernel.log", text));
  return o;
}

CollectorOutcome CollectNvidiaSmi(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  bool found = false;
  for (const std::string& dir : Split(Lookup(ctx.job_env, "PATH").value_or("/usr/bin:/bin"), ':')) {
    found = found || access((dir + "/nvidia-smi").c_str(), X_OK) == 0;
  }
  if (!found || !ctx.run_helper) {
    o.status = "skipped";
    o.error = "nvidia-smi not installed";
    return o;
  }
  auto r = ctx.run_helper({"nvidia-smi", "-q"}, std::chrono::milliseconds(5000));
  if (!r.ok()) {
    o.status = "error";
    o.error = r.error().Describe();
    return o;
  }
  if (r->timed_out) {
    o.status = "error";
    o.error = "nvidia-smi -q did not finish in 5 s (a wedged GPU driver is itself evidence)";
  }
  Account(&o, "node/nvidia-smi-q.txt", bundle.WriteFile("node/nvidia-smi-q.txt", r->output));
  return o;
}

CollectorOutcome CollectOutput(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  auto join = [](const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  };
  Account(&o, "output/stdout.tail", bundle.WriteFile("output/stdout.tail", join(ctx.stdout_tail)));
  Account(&o, "output/stderr.tail", bundle.WriteFile("output/stderr.tail", join(ctx.stderr_tail)));
  // torch >= 2.4 prefixes rank output with "[rankN]:"; older jobs' lines stay in the stream files.
  std::map<std::string, std::string> per_rank;
  for (const auto* tail : {&ctx.stdout_tail, &ctx.stderr_tail}) {
    for (const auto& l : *tail) {
      if (!StartsWith(l, "[rank")) continue;
      auto close = l.find("]:");
      if (close == std::string::npos) continue;
      per_rank[l.substr(5, close - 5)] += l + "\n";
    }
  }
  for (const auto& [rank, text] : per_rank) {
    std::string rel = "output/rank_" + rank + ".tail";
    Account(&o, rel, bundle.WriteFile(rel, text));
  }
  return o;
}

}  // namespace

std::string ExpandNcclDebugFile(std::string_view pattern, std::string_view host, pid_t pid) {
  const std::string_view short_host = host.substr(0, host.find('.'));
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == '%') {
      out += '%';
    } else if (c == 'h') {
      out += short_host;
    } else if (c == 'p') {
      out += std::to_string(pid);
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

namespace {

// lstat-level checks on a candidate (the same again on the open fd, see ReadNcclDebugFile).
bool AcceptableDebugFile(const struct stat& st, const std::set<uid_t>& uids,
                         std::chrono::system_clock::time_point since) {
  const auto since_s = std::chrono::system_clock::to_time_t(since) - 1;
  return S_ISREG(st.st_mode) && uids.count(st.st_uid) && st.st_mtim.tv_sec >= since_s;
}

// Reads the last `max_bytes` of `path` without following a link, re-checking owner, type and
// age on the open file (it may have been swapped since NcclDebugFiles looked).
Result<std::string> ReadNcclDebugFile(const std::string& path, const std::set<uid_t>& uids,
                                      std::chrono::system_clock::time_point since,
                                      std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return MakeError(fmt::format("cannot open: {}", std::strerror(errno)), path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !AcceptableDebugFile(st, uids, since)) {
    ::close(fd);
    return MakeError("changed since it was listed (no longer this job's file)", path);
  }
  const off_t start = st.st_size > static_cast<off_t>(max_bytes) ? st.st_size - max_bytes : 0;
  std::string data;
  char buf[1 << 16];
  for (off_t off = start;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || data.size() >= max_bytes) break;
    data.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  ::close(fd);
  if (data.size() > max_bytes) data.erase(0, data.size() - max_bytes);
  return data;
}

}  // namespace

std::vector<std::string> NcclDebugFiles(const CaptureContext& ctx, const std::set<uid_t>& uids) {
  std::set<std::string> candidates;
  // Each rank opened its own file: its pid, its value.
  for (const auto& r : ctx.ranks) {
    if (auto f = nccl::DebugFile(r.env))
      candidates.insert(ExpandNcclDebugFile(*f, ctx.host, r.pid));
  }
  // The job's own value: whichever of our descendants ran NCCL.
  if (auto f = nccl::DebugFile(ctx.job_env)) {
    std::vector<pid_t> pids = ctx.descendants;
    if (ctx.job_pid > 0) pids.push_back(ctx.job_pid);
    for (pid_t pid : pids) candidates.insert(ExpandNcclDebugFile(*f, ctx.host, pid));
  }
  if (!ctx.run_dir.empty()) {
    std::error_code ec;
    for (auto it = fs::directory_iterator(ctx.run_dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (StartsWith(it->path().filename().string(), "nccl"))
        candidates.insert(it->path().string());
    }
  }
  std::vector<std::string> out;
  for (const auto& c : candidates) {
    struct stat st {};
    if (::lstat(c.c_str(), &st) == 0 && AcceptableDebugFile(st, uids, ctx.start_wall))
      out.push_back(c);
  }
  return out;
}

namespace {

CollectorOutcome CollectNcclDebug(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  std::set<uid_t> uids = {ctx.job_uid};
  for (const auto& r : ctx.ranks) {
    struct stat st {};
    if (::stat(fmt::format("/proc/{}", r.pid).c_str(), &st) == 0) uids.insert(st.st_uid);
  }
  const auto files = NcclDebugFiles(ctx, uids);
  if (files.empty()) {
    o.status = "skipped";
    o.error = "no NCCL debug file (set NCCL_DEBUG=INFO NCCL_DEBUG_FILE=<run dir>/nccl.%h.%p.log)";
    return o;
  }
  for (const auto& f : files) {
    std::string rel = "nccl/" + fs::path(f).filename().string();
    auto text = ReadNcclDebugFile(f, uids, ctx.start_wall, 32u << 20);
    if (!text.ok()) {
      Account(&o, rel, Result<std::uint64_t>(text.error()));
      continue;
    }
    auto r = bundle.WriteFile(rel, *text);
    Account(&o, rel, r);
    if (r.ok() && ctx.evidence && ctx.matcher) {
      std::lock_guard lock(*ctx.evidence_mu);
      ctx.evidence->AddText(*ctx.matcher, *text, rel);
    }
  }
  return o;
}

CollectorOutcome CollectRunFiles(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  if (ctx.run_dir.empty()) {
    o.status = "skipped";
    o.error = "no run directory";
    return o;
  }
  // The preflight report and environment plan written by `run` (names fixed by the launcher).
  std::error_code ec;
  for (auto it = fs::directory_iterator(ctx.run_dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    bool wanted = (StartsWith(name, "preflight") || StartsWith(name, "env") ||
                   StartsWith(name, "plan") || name == "status.json") &&
                  it->is_regular_file(ec);
    if (!wanted) continue;
    std::string rel = "run/" + name;
    Account(&o, rel, bundle.CopyFile(rel, it->path().string(), 8u << 20));
  }
  if (o.files.empty()) {
    o.status = "skipped";
    o.error = "no preflight report or environment plan in the run directory";
  }
  return o;
}

CollectorOutcome CollectHost(const CaptureContext& ctx, Bundle& bundle) {
  CollectorOutcome o;
  nlohmann::json j;
  j["host"] = ctx.host;
  utsname u{};
  if (uname(&u) == 0)
    j["uname"] = fmt::format("{} {} {} {}", u.sysname, u.release, u.version, u.machine);
  j["safe_launch_version"] = SAFE_LAUNCH_VERSION;
  j["job_argv"] = ctx.redactor->RedactArgv(ctx.job_argv);
  j["job_pid"] = ctx.job_pid;
  j["job_alive"] = ctx.job_alive;
  for (const char* f : {"/proc/driver/nvidia/version", "/proc/version"}) {
    if (auto t = ctx.fs->ReadFile(f, 4096); t.ok()) j["versions"][f] = std::string(Trim(*t));
  }
  nlohmann::json procs = nlohmann::json::array();
  for (pid_t pid : ctx.descendants) {
    nlohmann::json p = {{"pid", pid}};
    if (auto c = ctx.fs->ReadFile(fmt::format("/proc/{}/cmdline", pid), 1 << 20); c.ok()) {
      p["cmdline"] = ctx.redactor->RedactArgv(ParseCmdline(*c));
    }
    for (const auto& r : ctx.ranks) {
      if (r.pid == pid) p["rank"] = r.rank, p["local_rank"] = r.local_rank;
    }
    procs.push_back(std::move(p));
  }
  j["processes"] = procs;
  Account(&o, "node/host.json", bundle.WriteFile("node/host.json", JsonText(j)));
  if (!ctx.ranks.empty()) {
    pid_t pid = ctx.ranks.front().pid;
    if (auto l = ctx.fs->ReadFile(fmt::format("/proc/{}/limits", pid), 65536); l.ok()) {
      Account(&o, "node/limits.txt", bundle.WriteFile("node/limits.txt", *l));
    }
    std::string env;
    for (const auto& [k, v] : ctx.ranks.front().env) env += k + "=" + v + "\n";
    Account(&o, "node/rank_environment.txt", bundle.WriteFile("node/rank_environment.txt", env));
  } else {
    std::string env;
    for (const auto& [k, v] : ctx.job_env) env += k + "=" + v + "\n";
    Account(&o, "node/job_environment.txt", bundle.WriteFile("node/job_environment.txt", env));
  }
  return o;
}

constexpr Collector kCollectors[] = {
    {"flight_recorder", "Flight Recorder dumps via TORCH_NCCL_DEBUG_INFO_PIPE_FILE pipes",
     std::chrono::milliseconds(8000), CollectFlightRecorder},
    {"stacks", "stacks of every rank (py-spy dump, /proc/<pid>/task/*/{stat,wchan,stack})",
     std::chrono::milliseconds(8000), CollectStacks},
    {"python_stacks",
     "every rank's Python stacks, all threads (faulthandler on SAFE_LAUNCH_PYSTACKS_SIGNAL)",
     std::chrono::milliseconds(5000), CollectPythonStacks},
    {"nccl_ras", "NCCL RAS VERBOSE STATUS (text and JSON)", std::chrono::milliseconds(4500),
     CollectRas},
    {"ib_counters", "IB port counters, now vs job start", std::chrono::milliseconds(3000),
     CollectIbCounters},
    {"kernel_log", "kernel log since job start (mlx5/IB/Xid/link)", std::chrono::milliseconds(3000),
     CollectKernelLog},
    {"nvidia_smi", "nvidia-smi -q", std::chrono::milliseconds(6000), CollectNvidiaSmi},
    {"rank_output", "last lines of the job's output, per rank when prefixed",
     std::chrono::milliseconds(2000), CollectOutput},
    {"nccl_debug", "NCCL debug files (NCCL_DEBUG_FILE, run dir nccl*)",
     std::chrono::milliseconds(4000), CollectNcclDebug},
    {"run_files", "preflight report and environment plan from the run directory",
     std::chrono::milliseconds(2000), CollectRunFiles},
    {"host", "host, versions, limits, command lines, environment (redacted)",
     std::chrono::milliseconds(2000), CollectHost},
};

}  // namespace

std::span<const Collector> Collectors() { return kCollectors; }

namespace {

// One collector's result, filled by its thread.
struct Slot {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  CollectorOutcome outcome;
  double duration_s = 0;
};

// Throws std::system_error when no thread can be started.
void StartCollectorThread(std::shared_ptr<Slot> slot, std::shared_ptr<const CaptureContext> ctx,
                          std::shared_ptr<Bundle> bundle, CollectorFn fn, Clock::time_point start) {
  std::thread([slot, ctx, bundle, fn, start] {
    CollectorOutcome out;
    try {
      out = fn(*ctx, *bundle);
    } catch (const std::exception& e) {
      out.status = "error";
      out.error = std::string("internal error: ") + e.what();
    }
    std::lock_guard lock(slot->mu);
    slot->outcome = std::move(out);
    slot->duration_s = std::chrono::duration<double>(Clock::now() - start).count();
    slot->done = true;
    slot->cv.notify_all();
  }).detach();
}

}  // namespace

nlohmann::json RunCollectors(std::span<const Collector> collectors,
                             std::shared_ptr<const CaptureContext> ctx,
                             std::shared_ptr<Bundle> bundle) {
  std::vector<std::shared_ptr<Slot>> slots;
  const auto start = Clock::now();
  for (const Collector& c : collectors) {
    auto slot = std::make_shared<Slot>();
    slots.push_back(slot);
    // Detached: a collector stuck past its deadline must not hold the capture; everything it uses
    // is shared_ptr-owned, and the closed bundle refuses its late writes. A thread that cannot
    // start (ulimit -u, the cgroup's pids.max: the job may have used them all) costs only this
    // collector: the capture, the stop and the sweep go on.
    try {
      StartCollectorThread(slot, ctx, bundle, c.fn, start);
    } catch (const std::system_error& e) {
      std::lock_guard lock(slot->mu);
      slot->outcome.status = "error";
      slot->outcome.error = std::string("cannot start a thread for this collector (") + e.what() +
                            "): the node is out of processes; check ulimit -u and pids.max";
      slot->done = true;
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < collectors.size(); ++i) {
    Slot& s = *slots[i];
    std::unique_lock lock(s.mu);
    s.cv.wait_until(lock, start + collectors[i].deadline, [&s] { return s.done; });
    nlohmann::json j = {{"id", collectors[i].id},
                        {"what", collectors[i].what},
                        {"deadline_s", collectors[i].deadline.count() / 1000.0}};
    if (!s.done) {
      j["status"] = "timeout";
      j["duration_s"] = std::chrono::duration<double>(Clock::now() - start).count();
      j["bytes"] = 0;
      j["files"] = nlohmann::json::array();
      j["error"] =
          fmt::format("did not finish within {} ms; abandoned", collectors[i].deadline.count());
    } else {
      j["status"] = s.outcome.status;
      j["duration_s"] = s.duration_s;
      j["bytes"] = s.outcome.bytes;
      j["files"] = s.outcome.files;
      j["error"] = s.outcome.error;
      j["details"] = s.outcome.details;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace sl::hang
