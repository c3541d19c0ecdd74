#include "launcher/slurm_health.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>

#include "common/spawn.h"
#include "common/strings.h"
#include "preflight/finding_codes.h"

namespace sl::launcher {
namespace {

// slurmd runs Prolog/Epilog/HealthCheckProgram with an environment of its own that has no PATH.
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Kernel-log conditions that drain after a job: they happened while the job ran (the window
// starts at the job's start) and the next job on the node would hit them again.
constexpr std::string_view kEpilogDrainCodes[] = {
    "kernel.log/xid",
    "kernel.log/gpu_fell_off_bus",
    "kernel.log/link_flap",
    "kernel.log/mlx5_cmd_failure",
    "kernel.log/aer_uncorrected",
};

// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence.
std::string CutUtf8(std::string s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  s.resize(end);
  return s;
}

Environment ScontrolEnv(const Environment& env) {
  Environment out = env;
  if (!Lookup(out, "PATH")) out["PATH"] = kDefaultPath;
  return out;
}

// Runs scontrol with `args`; its stdout+stderr, or an error naming the command and what went
// wrong (not found, killed at the deadline, non-zero exit).
Result<std::string> Scontrol(const std::vector<std::string>& args, const Environment& env,
                             int timeout_ms) {
  SpawnSpec spec;
  spec.argv = {"scontrol"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = ScontrolEnv(env);
  const std::string what = Join(spec.argv, " ");
  auto r = RunChild(spec, std::chrono::milliseconds(timeout_ms), /*capture_stderr=*/true, 64 << 10);
  if (!r.ok()) return r.error();
  if (r->exec_errno != 0) {
    return MakeError("cannot run scontrol: " + std::string(std::strerror(r->exec_errno)) +
                         " (PATH " + *Lookup(spec.env, "PATH") + ")",
                     what);
  }
  if (r->timed_out) {
    return MakeError("scontrol did not answer within " + std::to_string(timeout_ms / 1000) +
                         " s (slurmctld unreachable?): killed",
                     what);
  }
  if (r->stopped) return MakeError("stopped by a signal", what);
  if (r->exit_status != 0) {
    return MakeError("exited " + std::to_string(r->exit_status) + ": " +
                         std::string(Trim(Printable(r->output, 300))),
                     what);
  }
  return r->output;
}

}  // namespace

std::string DrainReason(std::string_view check_id, std::string_view message, int more) {
  std::string text = "safe-launch: " + std::string(check_id) + ": " + std::string(message);
  std::string clean;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    // Quotes and backslashes would end or escape scontrol's reason="..." argument; control
    // bytes and newlines break sinfo's one-line-per-node output.
    const bool bad = c == '"' || c == '\'' || c == '\\' || c == '`' || u < 0x20 || u == 0x7f;
    const char out = bad ? ' ' : c;
    if (out == ' ' && !clean.empty() && clean.back() == ' ') continue;
    clean.push_back(out);
  }
  while (!clean.empty() && clean.back() == ' ') clean.pop_back();
  const std::string suffix = more > 0 ? " (+" + std::to_string(more) + " more)" : "";
  if (clean.size() + suffix.size() <= kDrainReasonMaxBytes) return clean + suffix;
  return CutUtf8(clean, kDrainReasonMaxBytes - suffix.size() - 3) + "..." + suffix;
}

std::string ReasonText(const Finding& f) {
  // Node paths start with '/'; anything else in a finding's evidence is a variable's name.
  const bool from_env = std::any_of(f.evidence.begin(), f.evidence.end(),
                                    [](const Evidence& e) { return !StartsWith(e.source, "/"); });
  std::string message = f.message;
  if (from_env) {
    const preflight::FindingCode* row = preflight::FindFindingCode(f.code);
    message = row ? std::string(row->message) : "see `safe-launch preflight -v` on the node";
  }
  // The entity (mlx5_3:1, gpu2, NCCL_IB_HCA) says where; the message often names it already.
  const bool named = f.entity.empty() || f.entity == "node" ||
                     (!from_env && message.find(f.entity) != std::string::npos);
  return named ? message : f.entity + ": " + message;
}

SlurmNode ParseSlurmNode(std::string_view text) {
  SlurmNode node;
  text = Trim(text);
  for (const auto& tok : Split(text, ' ')) {
    if (StartsWith(tok, "State=")) node.state = tok.substr(6);
  }
  auto at = text.find(" Reason=");
  if (at != std::string_view::npos) {
    std::string_view reason = Trim(text.substr(at + 8));
    // Slurm appends " [user@time]" to the reason it keeps.
    if (!reason.empty() && reason.back() == ']') {
      auto open = reason.rfind(" [");
      if (open != std::string_view::npos) reason = Trim(reason.substr(0, open));
    }
    if (reason != "(null)" && reason != "none") node.reason = std::string(reason);
  }
  for (const char* flag : {"DRAIN", "DOWN", "FAIL"}) {
    if (node.state.find(flag) != std::string::npos) node.out_of_service = true;
  }
  return node;
}

std::optional<std::int64_t> ParseJobStartTime(std::string_view text) {
  for (const auto& tok : Split(text, ' ')) {
    if (!StartsWith(tok, "StartTime=")) continue;
    std::tm tm{};
    const std::string value = tok.substr(10);
    const char* end = strptime(value.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr || *end != '\0') return std::nullopt;
    tm.tm_isdst = -1;  // scontrol prints local time
    const std::time_t t = std::mktime(&tm);
    if (t == static_cast<std::time_t>(-1)) return std::nullopt;
    return static_cast<std::int64_t>(t);
  }
  return std::nullopt;
}

bool DrainsNode(const Finding& finding, bool epilog) {
  if (finding.waived) return false;
  if (finding.outcome == Outcome::kFail) return true;
  if (!epilog || finding.outcome != Outcome::kWarn) return false;
  return std::find(std::begin(kEpilogDrainCodes), std::end(kEpilogDrainCodes), finding.code) !=
         std::end(kEpilogDrainCodes);
}

DrainOutcome DrainNode(const std::string& node, const std::string& reason, const Environment& env,
                       int timeout_ms) {
  DrainOutcome out;
  out.reason = reason;
  auto shown = Scontrol({"-o", "show", "node", node}, env, timeout_ms);
  if (!shown.ok()) {
    out.error = shown.error().Describe();
    return out;
  }
  SlurmNode current = ParseSlurmNode(*shown);
  if (current.state.empty()) {
    out.error = "scontrol shows no state for node '" + node + "': " + Printable(*shown, 200);
    return out;
  }
  if (current.out_of_service) {
    // A human's (or Slurm's) reason says more than ours about why the node is out.
    out.already_out = true;
    out.existing_reason = current.state + (current.reason.empty() ? "" : ": " + current.reason);
    return out;
  }
  auto updated =
      Scontrol({"update", "nodename=" + node, "state=drain", "reason=" + reason}, env, timeout_ms);
  if (!updated.ok()) {
    out.error = updated.error().Describe();
    return out;
  }
  out.drained = true;
  return out;
}

Result<std::string> RunScontrol(const std::vector<std::string>& args, const Environment& env,
                                int timeout_ms) {
  return Scontrol(args, env, timeout_ms);
}

Result<std::string> ShowJob(const std::string& job_id, const Environment& env, int timeout_ms) {
  return Scontrol({"-o", "show", "job", job_id}, env, timeout_ms);
}

}  // namespace sl::launcher
