// Per-task mode on a shared node (mpirun -np N, srun --ntasks-per-node=N, with --per-task): local
// rank 0 does the node's duties (preflight, the warm-up among the nodes) and writes its verdict
// into the job directory; the node's other tasks wait for it, bounded, and start their rank only
// when it passed, or exit with its status.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/exit_codes.h"
#include "common/file_reader.h"
#include "common/file_writer.h"
#include "common/json_text.h"
#include "common/log.h"
#include "common/spawn.h"
#include "launcher/bw_record.h"
#include "launcher/config.h"
#include "launcher/run_phases.h"

namespace sl::launcher {
namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A verdict older than this before the waiting task started is a previous launch's (an id
// reused): the node's tasks start within seconds of each other.
constexpr double kStaleMs = 60000;
// Beyond the warm-up's own timeout: local rank 0's preflight, environment plan and start-up.
constexpr double kLeaderSlackS = 120;

std::string SafeName(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return s;
}

std::string Why(int rc) {
  if (rc == exit_code::kOk) return "passed";
  if (rc == exit_code::kPreflightFailed) return "preflight failed on this node";
  if (rc == exit_code::kWarmupFailed) return "warm-up failed";
  if (rc == exit_code::kUsage) return "usage error";
  if (rc > exit_code::kSignalBase) return "stopped by a signal before the job started";
  return "exit status " + std::to_string(rc);
}

nlohmann::json ReadVerdict(const std::string& path) {
  // Our own warm-up's verdict, but in a shared job directory: read it as any input.
  auto read = ReadUserFile(path, InputKind::kManifest);
  if (!read.ok() || read->empty()) return nullptr;
  try {
    return nlohmann::json::parse(*read);
  } catch (const std::exception&) {
    return nullptr;  // not written yet (the writer renames a whole file: a torn read is not one)
  }
}

}  // namespace

std::string NodeVerdictPath(const RunConfig& config, const RunContext& ctx) {
  if (!config.SharesNode()) return "";
  const std::string node = config.topology ? std::to_string(config.topology->node_rank) : "";
  const std::string job_dir = std::filesystem::path(ctx.run_dir).parent_path().string();
  return job_dir + "/node" + node + "_" + SafeName(ctx.host) + "." + SafeName(config.job_key) +
         ".verdict.json";
}

void PublishNodeVerdict(const RunConfig& config, const RunContext& ctx, const std::string& path,
                        std::optional<int> rc) {
  if (path.empty() || !config.NodeLeader()) return;
  nlohmann::json v = {{"schema", 1},
                      {"state", rc ? "done" : "running"},
                      {"pid", ::getpid()},
                      {"rank", config.tasks.rank},
                      {"local_rank", config.tasks.local_rank},
                      {"job", config.job_key},
                      {"run_dir", ctx.run_dir},
                      {"written_unix_ms", NowMs()}};
  if (rc) {
    v["exit_status"] = *rc;
    v["reason"] = Why(*rc);
    for (const char* k : {"preflight", "warmup"})
      if (ctx.status_extra.contains(k)) v[k] = ctx.status_extra[k];
  }
  if (auto s = WriteFileAtomic(path, JsonText(v) + "\n", kPrivateFile); !s.ok())
    log::Warn("the node's other tasks will not see this verdict: {}", s.error().Describe());
}

std::optional<int> WaitForNodeVerdict(const RunConfig& config, RunContext& ctx,
                                      const std::string& path) {
  const double started = NowMs();
  const double limit_s = config.warmup.timeout_s + kLeaderSlackS;
  log::Info(
      "per-task: local rank 0 does this node's preflight and warm-up; rank {} waits for its "
      "verdict ({}, up to {:.0f} s)",
      config.tasks.rank, path, limit_s);
  ctx.status_extra["preflight"] = {{"verdict", "by local rank 0"}, {"action", "wait"}};
  auto fail = [&](const std::string& why, int rc) {
    log::Error("{}: the job was NOT started (exit {})", why, rc);
    ctx.status_extra["node_verdict"] = {{"file", path}, {"verdict", "none"}, {"reason", why}};
    return rc;
  };
  while (true) {
    (void)TakeStopSignal();
    if (StopSignalSeen()) return std::nullopt;  // the caller writes status.json, exits 128+S
    nlohmann::json v = ReadVerdict(path);
    if (v.is_object() && v.value("written_unix_ms", 0.0) >= started - kStaleMs) {
      if (v.value("state", "") == "done") {
        const int rc = v.value("exit_status", exit_code::kInternal);
        ctx.status_extra["node_verdict"] = v;
        ctx.status_extra["node_verdict"]["file"] = path;
        if (v.contains("warmup")) ctx.status_extra["warmup"] = v["warmup"];
        if (rc == exit_code::kOk) {
          log::Info("local rank 0 (rank {}) passed the node's checks: starting rank {}",
                    v.value("rank", ""), config.tasks.rank);
          return exit_code::kOk;
        }
        return fail(fmt::format("local rank 0 (rank {}, {}): {}", v.value("rank", ""),
                                v.value("run_dir", ""), v.value("reason", Why(rc))),
                    rc);
      }
      const int pid = v.value("pid", 0);
      if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH)
        return fail(fmt::format("local rank 0 (pid {}) ended without a verdict", pid),
                    exit_code::kWarmupFailed);
    }
    if (NowMs() - started > limit_s * 1000)
      return fail(fmt::format("no verdict from local rank 0 in {:.0f} s ({})", limit_s, path),
                  exit_code::kWarmupFailed);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace sl::launcher
