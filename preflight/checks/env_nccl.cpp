// env.nccl: lint of NCCL_*, TORCH_NCCL_*, TORCH_FR_* in the job's environment against the variable
// registry (nccl/registry.h) and the node's facts. NCCL silently ignores unknown names and falls
// back to defaults on unparsable values, so each of those is a finding here.
#include "nccl/conflicts.h"
#include "nccl/registry.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

Finding Make(std::string entity, Outcome o, std::string message, std::string next = {}) {
  return MakeFinding("env.nccl", std::move(entity), o, std::move(message), std::move(next));
}

}  // namespace

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

}  // namespace sl::preflight
