#pragma once
// Recipes: TOML files (recipes/*.toml shipped in the binary, or any file by path) that say which
// environment a kind of node gets, which preflight thresholds apply and which checks are waived.
// Format: doc/manual.md "Environment and recipes". Parsing is pure (text in, Recipe out).
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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

struct Recipe {
  std::string name;  ///< file stem: "infiniband"
  std::string path;  ///< as shown in messages: "recipes/infiniband.toml" or the user path
  std::string description;
  std::vector<std::string> chain;  ///< this recipe, then what it extends, ... (names)
  Match match;
  std::vector<EnvSetting> env;  ///< merged over the chain: a child's entry replaces the parent's
  Thresholds thresholds;        ///< defaults overridden by [thresholds] along the chain
  std::vector<std::string> thresholds_set;  ///< "min_roce_mtu (recipes/roce.toml:20)" for explain
  std::vector<std::string> waive;           ///< check ids, union over the chain
};

/// Names of the shipped recipes ("default", "infiniband", "roce", "socket-only", ...).
std::vector<std::string> BuiltinRecipeNames();
/// Text of a shipped recipe, or nullptr.
const std::string* BuiltinRecipeText(std::string_view name);

/// Loads a recipe by name (shipped, or <dir>/<name>.toml for dirs in $SAFE_LAUNCH_RECIPE_PATH,
/// ':'-separated, searched first) or by path (contains '/' or ends in ".toml"), following
/// `extends`. Errors: malformed TOML (file:line:column), unknown key or variable ("did you
/// mean"), out-of-range value (variable and range), unknown compute name, extends cycle.
Result<Recipe> LoadRecipe(std::string_view name_or_path, const Environment& env = {});

/// Parses one recipe text (no file access except through `load_parent` for `extends`).
using ParentLoader = std::function<Result<Recipe>(std::string_view name)>;
Result<Recipe> ParseRecipe(std::string_view text, std::string_view path,
                           const ParentLoader& load_parent);

/// Picks the shipped (or $SAFE_LAUNCH_RECIPE_PATH) recipe whose [match] fits the facts best;
/// falls back to "default". `why` receives one line explaining the choice.
Result<Recipe> ChooseRecipe(const NodeFacts& facts, const Environment& env, std::string* why);

/// Whether `m` holds for these facts (active ports' link layer, device names, GPU models).
bool MatchesFacts(const Match& m, const NodeFacts& facts);

}  // namespace sl::recipes
