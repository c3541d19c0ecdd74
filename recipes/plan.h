#pragma once
// Resolution: (recipe, environment, facts, versions) -> Plan. Pure: no file or process access.
// The plan is what `safe-launch env` prints and what `run` applies to the job's environment.
//
// Typical use (launcher, `run`):
//   sl::recipes::ResolveOptions opts;  opts.run_dir = run_dir;  opts.recipe = flag_recipe;
//   opts.versions = sl::recipes::DetectVersions({}, env).value_or({});
//   auto plan = sl::recipes::ResolveForNode(opts, env, facts);       // Result<Plan>
//   if (!plan) -> usage error (exit_code::kUsage), print plan.error().Describe()
//   Environment job_env = sl::recipes::ApplyPlan(*plan, env);
//   preflight_opts.thresholds = plan->thresholds;  preflight_opts.waive += plan->waive;
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/node_facts.h"
#include "common/result.h"
#include "common/thresholds.h"
#include "nccl/conf_file.h"
#include "nccl/conflicts.h"
#include "nccl/version.h"
#include "recipes/computes.h"
#include "recipes/recipe.h"

namespace sl::recipes {

enum class Source {
  kUser,      ///< already in the environment: kept as is, never overridden
  kRecipe,    ///< a literal from a recipe file (origin = "file:line")
  kComputed,  ///< computed from the node's facts (origin = recipe line that asked for it)
  kConfFile,  ///< in an NCCL configuration file (origin = "/etc/nccl.conf:3"): kept, and not
              ///< exported, since NCCL reads the file itself (nccl/conf_file.h)
};
std::string_view SourceName(Source s);  ///< "user", "recipe", "computed", "nccl.conf"

struct PlanEntry {
  std::string name;  ///< as exported (already renamed for the detected torch version)
  std::string value;
  Source source = Source::kRecipe;
  std::string origin{};  ///< "environment", "recipes/default.toml:12"
  std::string reason{};  ///< why this value (for computed: the facts used)
  /// For kUser/kConfFile entries: what the recipe would have set ("" when the recipe has no
  /// opinion).
  std::string recipe_value{};
};

using nccl::Conflict;
using nccl::Version;
using nccl::Versions;

/// A variable deliberately not set, and why (e.g. NCCL_IB_GID_INDEX with NCCL >= 2.21).
struct PlanNote {
  std::string name;
  std::string message;
};

struct Plan {
  std::string recipe;       ///< name
  std::string recipe_path;  ///< file shown in origins
  std::string recipe_why;   ///< why this recipe was chosen
  std::string recipe_file;  ///< the file read; "" = the copy built into the binary
  /// Where recipe names were looked for, in order; the built-in copy comes after them.
  struct SearchedDir {
    std::string kind;  ///< RecipeDir::kind
    std::string path;
    bool present = false;  ///< the directory exists
  };
  std::vector<SearchedDir> recipe_search;
  Versions versions;
  std::string run_dir;
  std::vector<PlanEntry> entries;  ///< in export order
  std::vector<Conflict> conflicts;
  std::vector<PlanNote> notes;
  Thresholds thresholds;  ///< for PreflightOptions.thresholds
  std::vector<std::string> thresholds_set;
  std::vector<std::string> waive;  ///< for PreflightOptions.waive
  SlurmSettings slurm;             ///< the recipe's [slurm]: remediation's defaults

  const PlanEntry* Find(std::string_view name) const;
};

struct ResolveOptions {
  std::string recipe;    ///< name or path; "" = chosen from the facts
  std::string run_dir;   ///< absolute; where NCCL debug files and Flight Recorder dumps go
  Versions versions;     ///< from DetectVersions or flags
  nccl::ConfFiles conf;  ///< what NCCL will read from its configuration files (ReadConfFiles)
};

/// Pure resolution of one loaded recipe. Errors: a computed value the node cannot provide when
/// the recipe requires it (documented fallbacks are notes, not errors).
Result<Plan> Resolve(const Recipe& recipe, const Environment& env, const NodeFacts& facts,
                     const Versions& versions, const std::string& run_dir,
                     const nccl::ConfFiles& conf = {});

/// Loads (or chooses) the recipe, then Resolve().
Result<Plan> ResolveForNode(const ResolveOptions& options, const Environment& env,
                            const NodeFacts& facts);

/// `export NAME='value'` lines, safe to eval in sh/bash (single quotes; ' written as '\'').
/// Conflicts and notes appear as '#' comment lines.
std::string PlanToShell(const Plan& plan);
/// The whole plan as JSON (schema in doc/manual.md).
nlohmann::json PlanToJson(const Plan& plan);
/// Human table: name, value, source, origin, reason; then conflicts and notes.
std::string PlanToText(const Plan& plan);
/// What Python stacks on demand add to the job's environment (doc/manual.md "Python stacks";
/// watchdog/hang/python/sitecustomize.py reads these names).
struct PythonStacks {
  std::string site_dir;    ///< the directory holding safe-launch's sitecustomize.py
  std::string stacks_dir;  ///< where each Python process of the job writes pid_<pid>.txt
  int signal = 0;          ///< the real-time signal it registers faulthandler on
};
/// Adds PYTHONPATH (`site_dir` first, then the job's own PYTHONPATH from `env`, kept whole),
/// SAFE_LAUNCH_PYSTACKS_DIR and SAFE_LAUNCH_PYSTACKS_SIGNAL, origin "safe-launch (hang capture)".
void AddPythonStacks(Plan* plan, const Environment& env, const PythonStacks& stacks);

/// `env` with every plan entry set (user entries are already there, unchanged).
Environment ApplyPlan(const Plan& plan, Environment env);
/// Single-quotes a value for sh.
std::string ShellQuote(std::string_view value);

}  // namespace sl::recipes
