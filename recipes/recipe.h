#pragma once
// Recipes: TOML files (recipes/*.toml shipped in the binary, or any file by path) that say which
// environment a kind of node gets, which preflight thresholds apply and which checks are waived.
// Format: doc/manual.md "Environment and recipes". Parsing is pure (text in, Recipe out).
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/install_layout.h"
#include "common/node_facts.h"
#include "common/result.h"
#include "common/thresholds.h"

namespace sl::recipes {

/// One [env] entry. Either a literal (with "{run_dir}" expanded at resolution) or computed from
/// the node's facts ({ compute = "ib_hca" | "socket_ifname" | "roce_gid_index" | "ras_addr" }).
struct EnvSetting {
  std::string name;
  std::string literal;     ///< the value as written (numbers/bools turned into text)
  std::string compute;     ///< "" for a literal
  std::string why;         ///< optional `why = "..."` of a computed entry
  bool required = false;   ///< computed: the node must provide it (else the fallback is a note)
  std::string link_layer;  ///< computed ib_hca/roce_gid_index: only ports of this link layer
  std::string origin;      ///< "recipes/infiniband.toml:14"
};

/// [match]: all given keys must hold for the recipe to be chosen automatically.
struct Match {
  std::vector<std::string> link_layer;  ///< "InfiniBand", "Ethernet", "none" (no active port)
  std::vector<std::string> device;      ///< IB device name prefixes, e.g. "mlx5_"
  std::vector<std::string> gpu_model;   ///< substrings of GpuInfo::model, e.g. "H200"
  int priority = 0;                     ///< higher wins among matching recipes
  bool empty() const { return link_layer.empty() && device.empty() && gpu_model.empty(); }
};

/// [slurm]: what safe-launch does about a node the diagnosis names (launcher/remediation.h).
struct SlurmSettings {
  std::string on_node_fault;              ///< "report" | "drain" | "requeue"; "" = unset
  std::optional<double> fault_threshold;  ///< 0..1
  std::optional<int> max_requeues;        ///< 0..100
  std::string origin;                     ///< "recipes/site.toml:12" of on_node_fault
};

struct Recipe {
  std::string name;  ///< file stem: "infiniband"
  std::string path;  ///< as shown in messages: "recipes/infiniband.toml" or the user path
  std::string file;  ///< the file it was read from; "" for the copy built into the binary
  std::string description;
  std::vector<std::string> chain;  ///< this recipe, then what it extends, ... (names)
  Match match;
  std::vector<EnvSetting> env;  ///< merged over the chain: a child's entry replaces the parent's
  Thresholds thresholds;        ///< defaults overridden by [thresholds] along the chain
  std::vector<std::string> thresholds_set;  ///< "min_roce_mtu (recipes/roce.toml:20)" for explain
  std::vector<std::string> waive;           ///< check ids, union over the chain
  SlurmSettings slurm;                      ///< a child's keys replace its parent's
};

/// Names of the shipped recipes ("default", "infiniband", "roce", "socket-only", ...).
std::vector<std::string> BuiltinRecipeNames();
/// Text of a shipped recipe, or nullptr.
const std::string* BuiltinRecipeText(std::string_view name);

/// RecipeDir::kind of each place a recipe name is looked for (doc/manual.md "Choosing a recipe").
inline constexpr std::string_view kUserRecipes = "SAFE_LAUNCH_RECIPE_PATH";
inline constexpr std::string_view kSiteRecipes = "site";
inline constexpr std::string_view kShippedRecipes = "shipped";

/// A directory searched for <name>.toml.
struct RecipeDir {
  std::string path;
  std::string_view kind;  ///< kUserRecipes, kSiteRecipes or kShippedRecipes
};

/// Where recipe names are looked for, first to last: the directories of
/// $SAFE_LAUNCH_RECIPE_PATH (':'-separated), the site's <sysconf_dir>/recipes.d, the shipped
/// <data_dir>/recipes. The copy built into the binary comes after all of them. Pure.
std::vector<RecipeDir> RecipeSearchPath(const Environment& env, const InstallLayout& layout);

/// Loads a recipe by name (<dir>/<name>.toml in RecipeSearchPath(env, SelfLayout()), else the
/// built-in copy) or by path (contains '/' or ends in ".toml"), following `extends`. Errors:
/// malformed TOML (file:line:column), unknown key or variable ("did you mean"), out-of-range
/// value (variable and range), unknown compute name, extends cycle.
Result<Recipe> LoadRecipe(std::string_view name_or_path, const Environment& env = {});
/// LoadRecipe with an explicit search path.
Result<Recipe> LoadRecipeFrom(std::string_view name_or_path, const std::vector<RecipeDir>& search);

/// Parses one recipe text (no file access except through `load_parent` for `extends`).
using ParentLoader = std::function<Result<Recipe>(std::string_view name)>;
Result<Recipe> ParseRecipe(std::string_view text, std::string_view path,
                           const ParentLoader& load_parent);

/// Picks the recipe (built-in, or *.toml in RecipeSearchPath(env, SelfLayout())) whose [match]
/// fits the facts best; falls back to "default". `why` receives one line explaining the choice.
Result<Recipe> ChooseRecipe(const NodeFacts& facts, const Environment& env, std::string* why);
/// ChooseRecipe with an explicit search path.
Result<Recipe> ChooseRecipeFrom(const NodeFacts& facts, const std::vector<RecipeDir>& search,
                                std::string* why);

/// Whether `m` holds for these facts (active ports' link layer, device names, GPU models).
bool MatchesFacts(const Match& m, const NodeFacts& facts);

}  // namespace sl::recipes
