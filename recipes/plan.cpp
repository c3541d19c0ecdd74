// Resolution: (recipe, environment, facts, versions) -> Plan, and the plan's renderings. Pure.
#include "recipes/plan.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/strings.h"
#include "nccl/gid.h"
#include "nccl/name_filter.h"
#include "nccl/ports.h"
#include "nccl/ras.h"
#include "nccl/registry.h"
#include "nccl/socket.h"
#include "recipes/computes.h"

namespace sl::recipes {

using nccl::AppliesTo;
using nccl::FindVariable;
using nccl::IsLintedName;
using nccl::NameFor;
using nccl::ValidateValue;
using nccl::Variables;
using nccl::VarSpec;

namespace {

std::string VersionText(const std::optional<Version>& v) { return v ? v->ToString() : "unknown"; }

std::string ExpandRunDir(const std::string& value, const std::string& run_dir) {
  std::string out = value;
  const std::string token = "{run_dir}";
  for (auto pos = out.find(token); pos != std::string::npos; pos = out.find(token, pos)) {
    out.replace(pos, token.size(), run_dir);
    pos += run_dir.size();
  }
  return out;
}

// All names one variable goes by (itself, its old or new name).
std::vector<std::string> AliasesOf(std::string_view name) {
  std::vector<std::string> out{std::string(name)};
  const VarSpec* spec = FindVariable(name);
  if (spec && !spec->replaced_by.empty()) out.emplace_back(spec->replaced_by);
  for (const VarSpec& s : Variables()) {
    if (s.replaced_by == name) out.emplace_back(s.name);
  }
  return out;
}

bool ValidShellName(std::string_view n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// A comment line must stay one line whatever a user value contains.
std::string CommentSafe(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += '?';
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kUser:
      return "user";
    case Source::kRecipe:
      return "recipe";
    case Source::kComputed:
      return "computed";
    case Source::kConfFile:
      return "nccl.conf";
  }
  return "?";
}

const PlanEntry* Plan::Find(std::string_view name) const {
  for (const auto& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

namespace {

/// What the hang capture needs in the job's environment whatever the recipe says: the heartbeat
/// file and Flight Recorder on, dumped to the run directory and triggerable through its pipe
/// (watchdog/hang reads these names back from the job's environment). The shipped default recipe
/// sets the same values with their reasons; these rows fill in what a custom recipe leaves out,
/// so env-plan.json and `safe-launch env` show everything the job gets.
const EnvSetting kCaptureSettings[] = {
    {"SAFE_LAUNCH_HEARTBEAT", "{run_dir}/heartbeat", "",
     "touch this file from the training loop: once touched, stall detection follows its mtime "
     "instead of the job's output"},
    {"TORCH_FR_BUFFER_SIZE", "2000", "", "Flight Recorder on (the hang capture collects it)"},
    {"TORCH_FR_DUMP_TEMP_FILE", "{run_dir}/fr_rank_", "",
     "Flight Recorder dumps land in the run directory"},
    {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "{run_dir}/frpipe_", "",
     "the hang capture writes to <run_dir>/frpipe_<rank>.pipe to dump Flight Recorder on demand"},
    {"TORCH_NCCL_DUMP_ON_TIMEOUT", "1", "", "dump Flight Recorder when the watchdog times out"},
};
constexpr const char* kCaptureOrigin = "safe-launch (hang capture)";

/// The inputs every setting is resolved against.
struct ResolveInput {
  const Recipe& recipe;
  const Environment& env;
  const NodeFacts& facts;
  const Versions& versions;
  const std::string& run_dir;
  const nccl::ConfFiles& conf;
};

const nccl::ConfValue* FindConf(const nccl::ConfFiles& conf, std::string_view name) {
  for (const auto& v : conf.values) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

/// The recipe's value for a setting (literal or computed), validated against the registry.
/// nullopt value = the node cannot provide it (reason says why).
Result<Computed> RecipeValue(const EnvSetting& s, const std::string& name, const VarSpec* spec,
                             const ResolveInput& in) {
  Computed c;
  if (!s.compute.empty()) {
    const ComputeSpec* compute = FindCompute(s.compute);
    if (compute == nullptr) {  // recipe.cpp rejects unknown names; a hand-made setting may not
      return MakeError("unknown compute '" + s.compute + "' for " + s.name, s.origin,
                       "use one of the names in doc/manual.md \"Recipes\"");
    }
    c = compute->compute({s, in.env, in.facts, in.versions});
    if (!s.why.empty()) c.reason = s.why + ": " + c.reason;
  } else {
    if (s.literal.find("{run_dir}") != std::string::npos && in.run_dir.empty()) {
      return MakeError(s.name + " uses {run_dir} but no run directory was given", s.origin,
                       "pass --run-dir DIR");
    }
    c.value = ExpandRunDir(s.literal, in.run_dir);
    c.reason = s.why.empty() && spec ? std::string(spec->meaning) : s.why;
    std::string why;
    if (auto v = nccl::ValueForOldName(name, *c.value, in.versions, &why)) {
      c.value = std::move(v);
      c.reason += why;
    }
  }
  if (c.value && spec != nullptr) {
    if (auto st = ValidateValue(*spec, *c.value); !st.ok()) {
      Error e = st.error();
      e.where = s.origin;
      e.message = name + "=" + *c.value + ": " + e.message;
      return e;
    }
  }
  return c;
}

/// The user's value under any spelling of the setting's name, as a kept entry: from the
/// environment, else from an NCCL configuration file (which NCCL reads itself, under the
/// environment: exporting the recipe's value would silently override the admin's).
std::optional<PlanEntry> UserEntry(const EnvSetting& s, const std::string& name,
                                   const std::optional<std::string>& value,
                                   const ResolveInput& in) {
  auto recipe_note = [&](const std::string& kept) {
    if (!value) return std::string();
    return *value == kept ? std::string(" (same as the recipe)")
                          : " (" + in.recipe.path + " would set " + *value + ")";
  };
  const auto aliases = AliasesOf(s.name);
  for (const auto& a : aliases) {
    auto v = Lookup(in.env, a);
    if (!v) continue;
    PlanEntry u{a,
                *v,
                Source::kUser,
                "environment",
                "set by you; kept" + recipe_note(*v),
                value.value_or("")};
    if (const auto* c = FindConf(in.conf, a); c && c->value != *v) {
      u.reason += "; overrides " + c->origin + " (" + c->value + ")";
    }
    if (u.name != name) {
      u.reason += "; note: torch " + VersionText(in.versions.torch) + " reads " + name;
    }
    return u;
  }
  for (const auto& a : aliases) {
    const nccl::ConfValue* c = FindConf(in.conf, a);
    if (c == nullptr) continue;
    return PlanEntry{
        a,
        c->value,
        Source::kConfFile,
        c->origin,
        "set in " + c->origin + "; kept (NCCL reads the file itself)" + recipe_note(c->value),
        value.value_or("")};
  }
  return std::nullopt;
}

/// One setting into the plan: an entry (the user's, or the recipe's), a note, or an error.
Status ResolveSetting(const EnvSetting& s, const ResolveInput& in, Plan* plan) {
  const std::string name = NameFor(s.name, in.versions);
  const VarSpec* spec = FindVariable(name);
  if (spec != nullptr) {
    const auto& owner_version = spec->owner == "torch" ? in.versions.torch : in.versions.nccl;
    if (!AppliesTo(*spec, owner_version)) {
      plan->notes.push_back(
          {name, std::string(spec->owner) + " " + VersionText(owner_version) + " does not read it" +
                     (spec->since ? " (added in " + spec->since->ToString() + ")" : std::string()) +
                     "; not set"});
      return OkStatus();
    }
  }
  // Compute what the recipe wants, even when the user's value wins (shown in --explain).
  auto c = RecipeValue(s, name, spec, in);
  if (!c.ok()) return c.error();
  if (auto u = UserEntry(s, name, c->value, in)) {
    plan->entries.push_back(std::move(*u));
    return OkStatus();
  }
  if (!c->value) {
    if (s.required) {
      return MakeError(name + " cannot be computed on this node: " + c->reason, s.origin,
                       "fix the node (see safe-launch preflight), or use a recipe that does "
                       "not require it");
    }
    plan->notes.push_back({name, c->reason});
    return OkStatus();
  }
  PlanEntry entry;
  entry.name = name;
  entry.origin = s.origin;
  entry.source = s.compute.empty() ? Source::kRecipe : Source::kComputed;
  entry.value = *c->value;
  entry.reason = c->reason;
  plan->entries.push_back(std::move(entry));
  return OkStatus();
}

/// Every other NCCL/torch variable the user (or an NCCL configuration file) set travels
/// unchanged; listed so the plan is the whole picture.
void AddOtherUserValues(const Environment& env, const nccl::ConfFiles& conf,
                        const std::set<std::string>& handled, Plan* plan) {
  for (const auto& c : conf.values) {
    if (handled.count(c.name) || Lookup(env, c.name)) continue;
    plan->entries.push_back({c.name, c.value, Source::kConfFile, c.origin,
                             "set in " + c.origin + "; kept (NCCL reads the file itself)", ""});
  }
  for (const auto& [k, v] : env) {
    if (!IsLintedName(k) || handled.count(k)) continue;
    PlanEntry u;
    u.name = k;
    u.value = v;
    u.source = Source::kUser;
    u.origin = "environment";
    const VarSpec* spec = FindVariable(k);
    u.reason = spec ? "set by you; kept (" + std::string(spec->meaning) + ")"
                    : "set by you; kept (not a known NCCL/torch variable)";
    plan->entries.push_back(std::move(u));
  }
}

}  // namespace

Result<Plan> Resolve(const Recipe& recipe, const Environment& env, const NodeFacts& facts,
                     const Versions& versions, const std::string& run_dir,
                     const nccl::ConfFiles& conf) {
  Plan plan;
  plan.recipe = recipe.name;
  plan.recipe_path = recipe.path;
  plan.versions = versions;
  plan.run_dir = run_dir;
  plan.thresholds = recipe.thresholds;
  plan.thresholds_set = recipe.thresholds_set;
  plan.waive = recipe.waive;
  plan.slurm = recipe.slurm;
  const ResolveInput in{recipe, env, facts, versions, run_dir, conf};
  std::set<std::string> handled;
  auto resolve = [&](const EnvSetting& s) -> Status {
    for (const auto& a : AliasesOf(s.name)) handled.insert(a);
    return ResolveSetting(s, in, &plan);
  };
  for (const EnvSetting& s : recipe.env) {
    if (auto st = resolve(s); !st.ok()) return st.error();
  }
  if (!run_dir.empty()) {
    for (EnvSetting s : kCaptureSettings) {
      if (handled.count(s.name)) continue;
      s.origin = kCaptureOrigin;
      if (auto st = resolve(s); !st.ok()) return st.error();
    }
  }
  AddOtherUserValues(env, conf, handled, &plan);
  for (const Error& e : conf.problems)
    plan.notes.push_back({e.where, e.message + " (fix: " + e.fix + ")"});
  // Judge what NCCL will use: the environment over the configuration files.
  plan.conflicts = nccl::FactConflicts(nccl::EffectiveEnvironment(conf, env), facts);
  return plan;
}

Result<Plan> ResolveForNode(const ResolveOptions& options, const Environment& env,
                            const NodeFacts& facts) {
  std::string why;
  const std::vector<RecipeDir> search = RecipeSearchPath(env, SelfLayout());
  Result<Recipe> recipe = options.recipe.empty() ? ChooseRecipeFrom(facts, search, &why)
                                                 : LoadRecipeFrom(options.recipe, search);
  if (!recipe.ok()) return recipe.error();
  if (!options.recipe.empty()) why = "named with --recipe";
  auto plan = Resolve(*recipe, env, facts, options.versions, options.run_dir, options.conf);
  if (!plan.ok()) return plan;
  plan->recipe_why = why;
  plan->recipe_file = recipe->file;
  for (const RecipeDir& d : search) {
    std::error_code ec;
    const bool there = std::filesystem::is_directory(d.path, ec);
    plan->recipe_search.push_back({std::string(d.kind), d.path, there});
  }
  return plan;
}

std::string ShellQuote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string PlanToShell(const Plan& plan) {
  std::string out = "# safe-launch env: recipe " + CommentSafe(plan.recipe) + " (" +
                    CommentSafe(plan.recipe_path) + "), NCCL " + VersionText(plan.versions.nccl) +
                    ", torch " + VersionText(plan.versions.torch) + "\n";
  for (const auto& c : plan.conflicts) {
    out += "# " + std::string(c.warning_only ? "warning" : "conflict") + ": " +
           CommentSafe(c.name) + ": " + CommentSafe(c.message) + " (fix: " + CommentSafe(c.fix) +
           ")\n";
  }
  for (const auto& e : plan.entries) {
    if (e.source == Source::kConfFile) {
      out += "# " + CommentSafe(e.name) + " from " + CommentSafe(e.origin) +
             " (NCCL reads that file itself; not exported)\n";
      continue;
    }
    if (!ValidShellName(e.name)) {
      out += "# skipped a variable whose name is not a valid shell name: " + CommentSafe(e.name) +
             "\n";
      continue;
    }
    out += "export " + e.name + "=" + ShellQuote(e.value) + "\n";
  }
  return out;
}

nlohmann::json PlanToJson(const Plan& plan) {
  nlohmann::json j;
  j["recipe"] = plan.recipe;
  j["recipe_path"] = plan.recipe_path;
  j["recipe_why"] = plan.recipe_why;
  j["recipe_file"] = plan.recipe_file;
  j["recipe_search"] = nlohmann::json::array();
  for (const auto& d : plan.recipe_search) {
    j["recipe_search"].push_back({{"kind", d.kind}, {"path", d.path}, {"present", d.present}});
  }
  j["run_dir"] = plan.run_dir;
  auto ver = [](const std::optional<Version>& v) {
    return v ? nlohmann::json(v->ToString()) : nlohmann::json(nullptr);
  };
  j["versions"] = {{"nccl", ver(plan.versions.nccl)},
                   {"nccl_source", plan.versions.nccl_source},
                   {"torch", ver(plan.versions.torch)},
                   {"torch_source", plan.versions.torch_source}};
  j["entries"] = nlohmann::json::array();
  for (const auto& e : plan.entries) {
    nlohmann::json x = {{"name", e.name},
                        {"value", e.value},
                        {"source", SourceName(e.source)},
                        {"origin", e.origin},
                        {"reason", e.reason}};
    if (e.source != Source::kRecipe && e.source != Source::kComputed && !e.recipe_value.empty()) {
      x["recipe_value"] = e.recipe_value;
    }
    j["entries"].push_back(std::move(x));
  }
  j["conflicts"] = nlohmann::json::array();
  for (const auto& c : plan.conflicts) {
    j["conflicts"].push_back({{"name", c.name},
                              {"value", c.value},
                              {"message", c.message},
                              {"fix", c.fix},
                              {"severity", c.warning_only ? "warn" : "fail"}});
  }
  j["notes"] = nlohmann::json::array();
  for (const auto& n : plan.notes) j["notes"].push_back({{"name", n.name}, {"message", n.message}});
  const Thresholds& t = plan.thresholds;
  j["thresholds"] = {
      {"min_ib_mtu", t.min_ib_mtu},
      {"min_roce_mtu", t.min_roce_mtu},
      {"expected_mtu", t.expected_mtu ? nlohmann::json(*t.expected_mtu) : nlohmann::json(nullptr)},
      {"min_rate_gbps", t.min_rate_gbps},
      {"min_memlock", t.min_memlock},
      {"min_nofile", t.min_nofile},
      {"min_shm", t.min_shm},
      {"min_rmem_max", t.min_rmem_max},
      {"min_wmem_max", t.min_wmem_max},
      {"min_tcp_rmem_max", t.min_tcp_rmem_max},
      {"min_tcp_wmem_max", t.min_tcp_wmem_max},
      {"min_local_ports", t.min_local_ports}};
  j["thresholds_set"] = plan.thresholds_set;
  j["waive"] = plan.waive;
  return j;
}

std::string PlanToText(const Plan& plan) {
  std::ostringstream o;
  o << "recipe   " << plan.recipe << " (" << plan.recipe_path << ")";
  if (!plan.recipe_why.empty()) o << ": " << plan.recipe_why;
  o << "\nfile     " << (plan.recipe_file.empty() ? "built into the binary" : plan.recipe_file);
  if (!plan.recipe_search.empty()) {
    o << "\nsearched ";
    for (const auto& d : plan.recipe_search) {
      o << d.kind << " " << d.path << (d.present ? "" : " (absent)") << ", then ";
    }
    o << "built-in (compiled from recipes/*.toml)";
  }
  o << "\nNCCL     " << VersionText(plan.versions.nccl) << "  [" << plan.versions.nccl_source
    << "]\ntorch    " << VersionText(plan.versions.torch) << "  [" << plan.versions.torch_source
    << "]\nrun dir  " << (plan.run_dir.empty() ? "-" : plan.run_dir) << "\n\n";
  for (const auto& e : plan.entries) {
    o << e.name << "=" << CommentSafe(e.value) << "\n    " << SourceName(e.source)
      << std::string(10 - SourceName(e.source).size(), ' ') << e.origin << "\n";
    if (!e.reason.empty()) o << "    why       " << CommentSafe(e.reason) << "\n";
  }
  if (!plan.notes.empty()) {
    o << "\nnot set:\n";
    for (const auto& n : plan.notes) o << "  " << n.name << ": " << n.message << "\n";
  }
  if (!plan.conflicts.empty()) {
    o << "\nconflicts with this node (your values are kept):\n";
    for (const auto& c : plan.conflicts) {
      o << "  " << (c.warning_only ? "warn " : "FAIL ") << c.name << "=" << CommentSafe(c.value)
        << ": " << CommentSafe(c.message) << "\n       fix: " << CommentSafe(c.fix) << "\n";
    }
  }
  if (!plan.thresholds_set.empty() || !plan.waive.empty()) {
    o << "\npreflight: ";
    if (!plan.thresholds_set.empty()) o << "thresholds " << Join(plan.thresholds_set, ", ");
    if (!plan.waive.empty()) {
      o << (plan.thresholds_set.empty() ? "" : "; ") << "waived " << Join(plan.waive, ", ");
    }
    o << "\n";
  }
  return o.str();
}

void AddPythonStacks(Plan* plan, const Environment& env, const PythonStacks& stacks) {
  const std::string own = Lookup(env, "PYTHONPATH").value_or("");
  std::erase_if(plan->entries, [](const PlanEntry& e) {
    return e.name == "PYTHONPATH" || e.name == "SAFE_LAUNCH_PYSTACKS_DIR" ||
           e.name == "SAFE_LAUNCH_PYSTACKS_SIGNAL";
  });
  plan->entries.push_back(
      {"PYTHONPATH", own.empty() ? stacks.site_dir : stacks.site_dir + ":" + own, Source::kComputed,
       kCaptureOrigin,
       "safe-launch's sitecustomize first (Python stacks on signal " +
           std::to_string(stacks.signal) +
           " for the hang capture; it then imports the job's own "
           "sitecustomize), then " +
           (own.empty() ? std::string("nothing: PYTHONPATH was unset") : "your PYTHONPATH, kept"),
       ""});
  plan->entries.push_back({"SAFE_LAUNCH_PYSTACKS_DIR", stacks.stacks_dir, Source::kComputed,
                           kCaptureOrigin,
                           "each Python process of the job writes its stacks to pid_<pid>.txt "
                           "here when signalled",
                           ""});
  plan->entries.push_back({"SAFE_LAUNCH_PYSTACKS_SIGNAL", std::to_string(stacks.signal),
                           Source::kComputed, kCaptureOrigin,
                           "the real-time signal the hang capture sends to registered ranks "
                           "(not SIGUSR1/2, which frameworks use)",
                           ""});
}

Environment ApplyPlan(const Plan& plan, Environment env) {
  for (const auto& e : plan.entries) {
    if (e.source != Source::kConfFile) env[e.name] = e.value;
  }
  return env;
}

}  // namespace sl::recipes
