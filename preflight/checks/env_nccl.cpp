// env.nccl: lint of NCCL_*, TORCH_NCCL_*, TORCH_FR_* in the job's environment against the variable
// registry (nccl/registry.h) and the node's facts. NCCL silently ignores unknown names and falls
// back to defaults on unparsable values, so each of those is a finding here.
#include <optional>
#include <string_view>

#include "nccl/conflicts.h"
#include "nccl/job_env.h"
#include "nccl/registry.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"env.nccl/unknown_variable", Outcome::kWarn, Outcome::kWarn,
     "a NCCL_/TORCH_ variable nobody reads", kFixInFinding},
    {"env.nccl/deprecated_name", Outcome::kWarn, Outcome::kWarn, "a deprecated variable name",
     kFixInFinding},
    {"env.nccl/invalid_value", Outcome::kFail, Outcome::kFail,
     "a value the variable does not accept", kFixInFinding},
    {"env.nccl/conflict", Outcome::kFail, Outcome::kWarn,
     "a variable conflicts with this node's facts", kFixInFinding},
    {"env.nccl/ok", Outcome::kPass, Outcome::kPass, "the check passed", ""},
};

Finding Make(std::string entity, Outcome o, std::string message, std::string next = {}) {
  return MakeFinding("env.nccl", std::move(entity), o, std::move(message), std::move(next));
}

// NCCL_DEBUG_FILE is opened by every rank with fopen("w"): in a system path a job running as root
// truncates a system file; in a shared temp directory other users can read the log, plant a
// link at the name, or leave files the hang collector must tell apart. The run directory (known
// here only through SAFE_LAUNCH_HEARTBEAT, a plan row) is the place for it.
std::optional<Finding> DebugFileFinding(const Environment& env) {
  auto file = nccl::DebugFile(env);
  if (!file) return std::nullopt;
  const std::string& f = *file;
  static constexpr std::string_view kSystem[] = {"/etc/",     "/usr/",     "/bin/",  "/sbin/",
                                                 "/lib",      "/boot/",    "/proc/", "/sys/",
                                                 "/var/lib/", "/var/log/", "/opt/"};
  static constexpr std::string_view kShared[] = {"/tmp/", "/var/tmp/", "/dev/shm/"};
  const std::string next =
      "unset it (safe-launch's plan then uses <run dir>/nccl.%h.%p.log) or point it into the run "
      "directory";
  auto starts = [&f](std::string_view p) { return f.compare(0, p.size(), p) == 0; };
  auto in_dev = starts("/dev/") && !starts("/dev/shm/");
  for (auto p : kSystem) {
    if (starts(p) || in_dev) {
      return Make("NCCL_DEBUG_FILE", Outcome::kWarn,
                  "the NCCL debug file is in a system path: every rank opens it for writing "
                  "(truncating it), and the hang capture will not collect it",
                  next)
          .With("NCCL_DEBUG_FILE", f);
    }
  }
  std::string where;
  for (auto p : kShared) {
    if (starts(p)) where = "in a directory other users share (" + std::string(p) + ")";
  }
  if (auto hb = Lookup(env, "SAFE_LAUNCH_HEARTBEAT"); where.empty() && hb && !hb->empty()) {
    const std::string run_dir = hb->substr(0, hb->rfind('/') + 1);
    if (!run_dir.empty() && !starts(run_dir)) where = "outside the run directory " + run_dir;
  }
  if (where.empty()) return std::nullopt;
  return Make("NCCL_DEBUG_FILE", Outcome::kWarn,
              "the NCCL debug file is " + where +
                  ": others may read it or plant files there; the hang capture takes only this "
                  "job's own files from it",
              next)
      .With("NCCL_DEBUG_FILE", f);
}

std::vector<Finding> CheckEnvNccl(const CheckContext& ctx) {
  std::vector<Finding> out;
  std::vector<std::string> valid;
  for (const auto& [name, value] : ctx.env) {
    if (!nccl::IsLintedName(name)) continue;
    const nccl::VarSpec* spec = nccl::FindVariable(name);
    if (spec == nullptr) {
      std::string near = nccl::SuggestVariable(name);
      out.push_back(
          Coded(Make(name, Outcome::kWarn,
                     "unknown variable: neither NCCL nor PyTorch reads it, so it has no effect" +
                         (near.empty() ? std::string() : "; did you mean " + near + "?"),
                     near.empty() ? "check the spelling, or unset it" : "rename it to " + near),
                "env.nccl/unknown_variable")
              .With(name, value));
      continue;
    }
    if (!spec->replaced_by.empty()) {
      out.push_back(
          Coded(Make(name, Outcome::kWarn,
                     "deprecated name: " + std::string(spec->owner) + " " +
                         (spec->renamed_in ? spec->renamed_in->ToString() : std::string("")) +
                         " and later read " + std::string(spec->replaced_by) +
                         " and warn about this one",
                     "use " + std::string(spec->replaced_by) + " (older versions read only " +
                         name + "; `safe-launch env` exports the name the detected version reads)"),
                "env.nccl/deprecated_name")
              .With(name, value));
    }
    if (auto st = nccl::ValidateValue(*spec, value); !st.ok()) {
      out.push_back(Coded(Make(name, Outcome::kFail,
                               "invalid value '" + value + "': " + st.error().message +
                                   "; the library silently falls back to its default",
                               st.error().fix),
                          "env.nccl/invalid_value")
                        .With(name, value));
      continue;
    }
    valid.push_back(name);
  }
  if (auto f = DebugFileFinding(ctx.env)) out.push_back(std::move(*f));
  for (const auto& c : nccl::FactConflicts(ctx.env, ctx.facts)) {
    out.push_back(Coded(Make(c.name, c.warning_only ? Outcome::kWarn : Outcome::kFail,
                             c.name + "=" + c.value + ": " + c.message, c.fix),
                        "env.nccl/conflict")
                      .With(c.name, c.value));
  }
  if (out.empty()) {
    std::string msg = valid.empty() ? "no NCCL/torch variables set"
                                    : std::to_string(valid.size()) +
                                          " NCCL/torch variable(s) set, all known and valid";
    Finding f = Coded(Make("node", Outcome::kPass, msg), "env.nccl/ok");
    for (const auto& n : valid) f.With(n, ctx.env.find(n)->second);
    out.push_back(f);
  }
  return out;
}

}  // namespace

extern const CheckInfo kEnvNcclCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kEnvNcclCheck = {
    "env.nccl", "NCCL/TORCH variables are known, valid and fit this node", CheckEnvNccl, kCodes};

}  // namespace sl::preflight
