// Recipe parsing (toml++) and choice. toml++ throws on malformed input; the throw is caught here so
// nothing leaves this module but Result values.
#include "recipes/recipe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "common/strings.h"
#include "nccl/registry.h"
#include "recipes/computes.h"

namespace sl::recipes {

using nccl::FindVariable;
using nccl::IsLintedName;
using nccl::SuggestVariable;
using nccl::ValidateValue;
using nccl::VarSpec;

// Generated from recipes/*.toml by recipes/embed.cmake (builtin_recipes.cpp in the build dir).
const std::vector<std::pair<std::string, std::string>>& EmbeddedRecipes();

namespace {

const std::vector<std::string> kTopKeys = {"description", "extends", "match", "env",
                                           "thresholds",  "waive",   "slurm"};
const std::vector<std::string> kSlurmKeys = {"on_node_fault", "fault_threshold", "max_requeues"};
const std::vector<std::string> kMatchKeys = {"link_layer", "device", "gpu_model", "priority"};
const std::vector<std::string> kComputeKeys = {"value", "compute", "why", "required", "link_layer"};
const std::vector<std::string> kThresholdKeys = {
    "min_ib_mtu",         "min_roce_mtu",      "expected_mtu",     "min_rate_gbps",
    "min_memlock",        "min_nofile",        "min_shm",          "min_rmem_max",
    "min_wmem_max",       "min_tcp_rmem_max",  "min_tcp_wmem_max", "min_local_ports",
    "min_busbw_fraction", "busbw_judge_bytes", "max_busbw_drop"};

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string m = ClosestMatch(word, candidates);
  if (m.empty()) {
    std::string all;
    for (const auto& c : candidates) all += (all.empty() ? "" : ", ") + c;
    return "valid: " + all;
  }
  return "did you mean '" + m + "'?";
}

std::string At(std::string_view path, const toml::source_region& r) {
  return std::string(path) + ":" + std::to_string(r.begin.line);
}

// "64 MiB", "1GiB", "4194304", "unlimited" (-> 0 meaning unlimited for memlock only).
Result<std::uint64_t> ParseSize(std::string_view text, const std::string& where) {
  std::string_view s = Trim(text);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) {
    return MakeError("'" + std::string(text) + "' is not a size", where,
                     "write a number of bytes or e.g. \"64 MiB\", \"1 GiB\"");
  }
  auto num = ParseDouble(s.substr(0, i), where);
  if (!num.ok()) return num.error();
  std::string unit = ToLower(Trim(s.substr(i)));
  double mult = 1;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kib" || unit == "kb")
    mult = 1024.0;
  else if (unit == "m" || unit == "mib" || unit == "mb")
    mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib" || unit == "gb")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib" || unit == "tb")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else {
    return MakeError("unknown size unit '" + unit + "'", where, "use B, KiB, MiB, GiB or TiB");
  }
  // Converting a double at or above 2^64 to an integer is undefined (x86 gives 0, which would
  // make any min_* threshold pass): refuse it instead.
  const double bytes = *num * mult;
  if (!std::isfinite(bytes) || bytes >= 18446744073709551616.0) {
    return MakeError("'" + std::string(text) + "' is too large", where,
                     "a size must be below 16 EiB (2^64 bytes)");
  }
  return static_cast<std::uint64_t>(bytes);
}

std::vector<std::string> StringList(const toml::node& n) {
  std::vector<std::string> out;
  if (auto s = n.value<std::string>()) {
    out.push_back(*s);
  } else if (auto* arr = n.as_array()) {
    for (const auto& e : *arr) {
      if (auto s2 = e.value<std::string>()) out.push_back(*s2);
    }
  }
  return out;
}

bool IsStringList(const toml::node& n) {
  if (n.is_string()) return true;
  auto* arr = n.as_array();
  if (arr == nullptr) return false;
  for (const auto& e : *arr) {
    if (!e.is_string()) return false;
  }
  return true;
}

Status ParseThresholds(const toml::table& t, std::string_view path, Recipe* r) {
  for (auto&& [key, value] : t) {
    // A plain reference: lambdas cannot capture structured bindings before clang 16 (fuzz build).
    const toml::node& node = value;
    const std::string k(key.str());
    const std::string where = At(path, key.source());
    if (std::find(kThresholdKeys.begin(), kThresholdKeys.end(), k) == kThresholdKeys.end()) {
      return MakeError("unknown threshold '" + k + "'", where, DidYouMean(k, kThresholdKeys));
    }
    auto integer = [&](std::int64_t lo, std::int64_t hi) -> Result<std::int64_t> {
      auto v = node.value<std::int64_t>();
      if (!v) return MakeError("[thresholds] " + k + " must be an integer", where);
      if (*v < lo || *v > hi) {
        return MakeError("[thresholds] " + k + " = " + std::to_string(*v) +
                             " is outside the accepted range " + std::to_string(lo) + ".." +
                             std::to_string(hi),
                         where);
      }
      return *v;
    };
    auto size = [&]() -> Result<std::uint64_t> {
      if (auto v = node.value<std::int64_t>()) {
        if (*v < 0) return MakeError("[thresholds] " + k + " must not be negative", where);
        return static_cast<std::uint64_t>(*v);
      }
      if (auto s = node.value<std::string>()) {
        if (k == "min_memlock" && ToLower(*s) == "unlimited") return std::uint64_t{0};
        return ParseSize(*s, where);
      }
      return MakeError("[thresholds] " + k + " must be a number of bytes or a size string", where);
    };
    Thresholds& th = r->thresholds;
    if (k == "min_ib_mtu" || k == "min_roce_mtu" || k == "expected_mtu") {
      auto v = integer(256, 65536);
      if (!v.ok()) return v.error();
      if (k == "min_ib_mtu") th.min_ib_mtu = static_cast<int>(*v);
      if (k == "min_roce_mtu") th.min_roce_mtu = static_cast<int>(*v);
      if (k == "expected_mtu") th.expected_mtu = static_cast<int>(*v);
    } else if (k == "min_local_ports") {
      auto v = integer(1, 65535);
      if (!v.ok()) return v.error();
      th.min_local_ports = static_cast<int>(*v);
    } else if (k == "min_rate_gbps") {
      auto v = node.value<double>();
      if (!v || *v < 0 || *v > 100000) {
        return MakeError("[thresholds] min_rate_gbps must be a number in 0..100000", where);
      }
      th.min_rate_gbps = *v;
    } else if (k == "min_busbw_fraction" || k == "max_busbw_drop") {
      auto v = node.value<double>();
      if (!v || !(*v >= 0 && *v <= 1))
        return MakeError("[thresholds] " + k + " must be a fraction in 0..1", where);
      (k == "min_busbw_fraction" ? th.min_busbw_fraction : th.max_busbw_drop) = *v;
    } else if (k == "min_nofile") {
      auto v = integer(0, std::int64_t{1} << 40);
      if (!v.ok()) return v.error();
      th.min_nofile = static_cast<std::uint64_t>(*v);
    } else {
      auto v = size();
      if (!v.ok()) return v.error();
      if (k == "min_memlock") th.min_memlock = *v;
      if (k == "min_shm") th.min_shm = *v;
      if (k == "min_rmem_max") th.min_rmem_max = *v;
      if (k == "min_wmem_max") th.min_wmem_max = *v;
      if (k == "min_tcp_rmem_max") th.min_tcp_rmem_max = *v;
      if (k == "min_tcp_wmem_max") th.min_tcp_wmem_max = *v;
      if (k == "busbw_judge_bytes") th.busbw_judge_bytes = *v;
    }
    r->thresholds_set.push_back(k + " (" + where + ")");
  }
  return OkStatus();
}

/// A TOML scalar as the text it is exported as: strings as is, integers in decimal, booleans
/// as NCCL's 1/0; nullopt for anything else.
std::optional<std::string> ScalarText(const toml::node_view<const toml::node>& n) {
  if (auto str = n.value<std::string>(); str && n.is_string()) return *str;
  if (auto i = n.value<std::int64_t>(); i && n.is_integer()) return std::to_string(*i);
  if (auto b = n.value<bool>(); b && n.is_boolean()) return std::string(*b ? "1" : "0");
  return std::nullopt;
}

/// `NAME = { value = ... | compute = "...", why, required, link_layer }` into `s`.
Status ParseEnvTable(const toml::table& tbl, std::string_view path, const std::string& where,
                     EnvSetting* s) {
  const std::string& name = s->name;
  for (auto&& [k2, n2] : tbl) {
    std::string kk(k2.str());
    if (std::find(kComputeKeys.begin(), kComputeKeys.end(), kk) == kComputeKeys.end()) {
      return MakeError("unknown key '" + kk + "' in the value of " + name, At(path, k2.source()),
                       DidYouMean(kk, kComputeKeys));
    }
  }
  s->why = tbl["why"].value_or(std::string());
  auto compute = tbl["compute"].value<std::string>();
  if (auto lit = tbl["value"]; lit && !compute) {
    auto text = ScalarText(lit);
    if (!text) return MakeError(name + ": value must be a string, an integer or a boolean", where);
    s->literal = *text;
  } else if (!compute) {
    return MakeError(name + " = { ... } needs value = ... or compute = \"<name>\"", where,
                     DidYouMean("", ComputeNames()));
  }
  if (compute) {
    if (FindCompute(*compute) == nullptr) {
      return MakeError("unknown compute '" + *compute + "' for " + name, where,
                       DidYouMean(*compute, ComputeNames()));
    }
    s->compute = *compute;
  }
  s->required = tbl["required"].value_or(false);
  s->link_layer = tbl["link_layer"].value_or(std::string());
  if (!s->link_layer.empty() && s->link_layer != "InfiniBand" && s->link_layer != "Ethernet") {
    return MakeError("link_layer '" + s->link_layer + "' is not InfiniBand or Ethernet", where,
                     DidYouMean(s->link_layer, {"InfiniBand", "Ethernet"}));
  }
  return OkStatus();
}

/// The name must be registered (NCCL_*/TORCH_* names) and not an old alias.
Status CheckEnvName(const std::string& name, const VarSpec* spec, const std::string& where) {
  if (spec == nullptr && IsLintedName(name)) {
    std::string near = SuggestVariable(name);
    return MakeError("unknown variable '" + name + "'", where,
                     near.empty() ? "check the spelling against doc/manual.md (registry)"
                                  : "did you mean '" + near + "'?");
  }
  if (spec != nullptr && !spec->replaced_by.empty()) {
    return MakeError("'" + name + "' is the old name of " + std::string(spec->replaced_by), where,
                     "write " + std::string(spec->replaced_by) +
                         "; safe-launch exports whichever name the detected version reads");
  }
  return OkStatus();
}

Status ParseEnv(const toml::table& t, std::string_view path, Recipe* r) {
  for (auto&& [key, node] : t) {
    const std::string name(key.str());
    const std::string where = At(path, key.source());
    const VarSpec* spec = FindVariable(name);
    if (auto st = CheckEnvName(name, spec, where); !st.ok()) return st;
    EnvSetting s;
    s.name = name;
    s.origin = where;
    if (auto* tbl = node.as_table()) {
      if (auto st = ParseEnvTable(*tbl, path, where, &s); !st.ok()) return st;
    } else if (auto text = ScalarText(toml::node_view<const toml::node>(node))) {
      s.literal = *text;
    } else {
      return MakeError(name + " must be a string, an integer, a boolean or { compute = ... }",
                       where);
    }
    if (s.compute.empty() && spec != nullptr && s.literal.find("{run_dir}") == std::string::npos) {
      if (auto st = ValidateValue(*spec, s.literal); !st.ok()) {
        Error e = st.error();
        e.where = where;
        e.message = name + "=" + s.literal + ": " + e.message;
        return e;
      }
    }
    // A child recipe's entry replaces the parent's, keeping the parent's position.
    auto it = std::find_if(r->env.begin(), r->env.end(),
                           [&](const EnvSetting& e) { return e.name == name; });
    if (it != r->env.end()) {
      *it = s;
    } else {
      r->env.push_back(s);
    }
  }
  return OkStatus();
}

// A recipe is a small text file; anything else named as one is refused before it is read: a FIFO
// would block the open (and every node's launch with it), a directory reads as an empty recipe,
// and /dev/zero or a huge log would be read to the end.
constexpr std::size_t kMaxRecipeBytes = 1u << 20;

// The text of a recipe file, or nullopt when `path` does not exist (the caller may look
// elsewhere); an error when it exists but is not a regular file of at most kMaxRecipeBytes.
Result<std::optional<std::string>> ReadRecipeFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) return std::optional<std::string>();
    return MakeError(std::string("cannot open recipe file: ") + std::strerror(err), path,
                     "check the path and its permissions");
  }
  struct stat st {};
  std::string text;
  std::optional<Error> problem;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = MakeError(
        S_ISDIR(st.st_mode) ? "recipe path is a directory" : "recipe path is not a regular file",
        path, "give the path of a .toml file");
  } else if (static_cast<std::uint64_t>(st.st_size) > kMaxRecipeBytes) {
    problem = MakeError("recipe file is larger than 1 MiB", path, "a recipe is a small TOML file");
  } else {
    char buf[16384];
    while (text.size() <= kMaxRecipeBytes) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = MakeError(std::string("cannot read recipe file: ") + std::strerror(errno), path);
        break;
      }
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    // The file grew between fstat and read (a log being written): still bounded.
    if (!problem && text.size() > kMaxRecipeBytes) {
      problem =
          MakeError("recipe file is larger than 1 MiB", path, "a recipe is a small TOML file");
    }
  }
  ::close(fd);
  if (problem) return *problem;
  return std::optional<std::string>(std::move(text));
}

bool LooksLikePath(std::string_view s) {
  return s.find('/') != std::string_view::npos || EndsWith(s, ".toml");
}

std::string StemOf(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (EndsWith(base, ".toml")) base.remove_suffix(5);
  return std::string(base);
}

using SearchPath = std::vector<RecipeDir>;

Result<Recipe> LoadChain(std::string_view name_or_path, const SearchPath& search,
                         std::vector<std::string>* stack);

// `extends = "base.toml"` in a recipe file names a file beside it, as an include does: relative
// to the recipe's folder, never to the directory safe-launch happens to be started from.
std::string ParentPath(std::string_view parent, const std::string& recipe_file) {
  if (!LooksLikePath(parent) || StartsWith(parent, "/") || recipe_file.empty()) {
    return std::string(parent);
  }
  std::filesystem::path dir = std::filesystem::path(recipe_file).parent_path();
  return (dir / std::string(parent)).lexically_normal().string();
}

// `recipe_file` is the file the text came from ("" for a built-in recipe).
Result<Recipe> LoadText(const std::string& text, const std::string& shown_path,
                        const std::string& recipe_file, const SearchPath& search,
                        std::vector<std::string>* stack) {
  ParentLoader loader = [&](std::string_view parent) {
    return LoadChain(ParentPath(parent, recipe_file), search, stack);
  };
  auto r = ParseRecipe(text, shown_path, loader);
  if (r.ok()) r->file = recipe_file;
  return r;
}

Result<Recipe> LoadChain(std::string_view name_or_path, const SearchPath& search,
                         std::vector<std::string>* stack) {
  std::string key(name_or_path);
  if (std::find(stack->begin(), stack->end(), key) != stack->end()) {
    std::string cycle;
    for (const auto& s : *stack) cycle += s + " -> ";
    return MakeError("recipes extend each other in a cycle: " + cycle + key, key,
                     "remove one of the extends lines");
  }
  if (stack->size() > 16) return MakeError("extends chain deeper than 16 recipes", key);
  stack->push_back(key);
  Result<Recipe> out = MakeError("unreached", key);
  if (LooksLikePath(name_or_path)) {
    auto text = ReadRecipeFile(key);
    if (!text.ok()) {
      out = text.error();
    } else if (!*text) {
      out = MakeError("cannot read recipe file: No such file or directory", key,
                      "check the path and its permissions");
    } else {
      out = LoadText(**text, key, key, search, stack);
    }
  } else {
    bool found = false;
    for (const RecipeDir& dir : search) {
      std::string p = dir.path + "/" + key + ".toml";
      auto text = ReadRecipeFile(p);
      if (!text.ok() || *text) {
        // A shipped recipe is named as in the source tree wherever it is installed (origins
        // stay "recipes/default.toml:12"); Recipe::file and `env --explain` give the real path.
        const std::string shown = dir.kind == kShippedRecipes ? "recipes/" + key + ".toml" : p;
        out = text.ok() ? LoadText(**text, shown, p, search, stack) : Result<Recipe>(text.error());
        found = true;
        break;
      }
    }
    if (!found) {
      if (const std::string* text = BuiltinRecipeText(key)) {
        out = LoadText(*text, "recipes/" + key + ".toml", "", search, stack);
      } else {
        out =
            MakeError("no recipe named '" + key + "'", key,
                      DidYouMean(key, BuiltinRecipeNames()) + " (or give a path to a .toml file)");
      }
    }
  }
  stack->pop_back();
  if (out.ok()) out->name = StemOf(key);
  return out;
}

}  // namespace

std::vector<std::string> BuiltinRecipeNames() {
  std::vector<std::string> names;
  for (const auto& [n, t] : EmbeddedRecipes()) names.push_back(n);
  return names;
}

const std::string* BuiltinRecipeText(std::string_view name) {
  for (const auto& [n, t] : EmbeddedRecipes()) {
    if (n == name) return &t;
  }
  return nullptr;
}

namespace {

/// `[match]`: where the recipe applies when none is named.
Status ParseMatch(const toml::table& t, std::string_view path, Recipe* r) {
  for (auto&& [key, node] : t) {
    std::string k(key.str());
    std::string where = At(path, key.source());
    if (std::find(kMatchKeys.begin(), kMatchKeys.end(), k) == kMatchKeys.end()) {
      return MakeError("unknown match key '" + k + "'", where, DidYouMean(k, kMatchKeys));
    }
    if (k == "priority") {
      auto p = node.value<std::int64_t>();
      if (!p) return MakeError("[match] priority must be an integer", where);
      r->match.priority = static_cast<int>(*p);
      continue;
    }
    if (!IsStringList(node)) {
      return MakeError("[match] " + k + " must be a string or a list of strings", where);
    }
    auto values = StringList(node);
    if (k == "link_layer") {
      for (const auto& v : values) {
        if (v != "InfiniBand" && v != "Ethernet" && v != "none") {
          return MakeError("[match] link_layer '" + v + "' is not InfiniBand, Ethernet or none",
                           where, DidYouMean(v, {"InfiniBand", "Ethernet", "none"}));
        }
      }
      r->match.link_layer = values;
    }
    if (k == "device") r->match.device = values;
    if (k == "gpu_model") r->match.gpu_model = values;
  }
  return OkStatus();
}

/// `[slurm]`: on_node_fault, fault_threshold, max_requeues (launcher/remediation.h).
Status ParseSlurm(const toml::table& t, std::string_view path, Recipe* r) {
  for (auto&& [key, node] : t) {
    const std::string k(key.str());
    const std::string where = At(path, key.source());
    if (k == "on_node_fault") {
      auto v = node.value<std::string>();
      if (!v || (*v != "report" && *v != "drain" && *v != "requeue"))
        return MakeError("[slurm] on_node_fault must be \"report\", \"drain\" or \"requeue\"",
                         where);
      r->slurm.on_node_fault = *v;
      r->slurm.origin = where;
    } else if (k == "fault_threshold") {
      auto v = node.value<double>();
      if (!v || !(*v >= 0 && *v <= 1))
        return MakeError("[slurm] fault_threshold must be a number in 0..1", where);
      r->slurm.fault_threshold = *v;
    } else if (k == "max_requeues") {
      auto v = node.value<std::int64_t>();
      if (!v || *v < 0 || *v > 100)
        return MakeError("[slurm] max_requeues must be an integer in 0..100", where);
      r->slurm.max_requeues = static_cast<int>(*v);
    } else {
      return MakeError("unknown key '" + k + "' in [slurm]", where, DidYouMean(k, kSlurmKeys));
    }
  }
  return OkStatus();
}

/// `waive = ["pci.acs", ...]`: ids only (checked against the registries by the launcher).
Status ParseWaive(const toml::node_view<toml::node>& w, std::string_view path, Recipe* r) {
  if (!w.is_array() || !IsStringList(*w.node())) {
    return MakeError("waive must be a list of check ids, e.g. [\"pci.acs\"]",
                     At(path, w.node()->source()));
  }
  for (const auto& id : StringList(*w.node())) {
    bool ok = !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
      return std::islower(static_cast<unsigned char>(c)) ||
             std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '_';
    });
    if (!ok) {
      return MakeError("waive: '" + id + "' is not a check id", At(path, w.node()->source()),
                       "use ids from `safe-launch preflight --list`, e.g. \"pci.acs\"");
    }
    if (std::find(r->waive.begin(), r->waive.end(), id) == r->waive.end()) r->waive.push_back(id);
  }
  return OkStatus();
}

/// The recipe `extends` names, loaded (with its own parents), [match] cleared.
Result<Recipe> ParentOf(const toml::table& root, std::string_view path,
                        const ParentLoader& load_parent) {
  auto ext = root["extends"];
  auto parent_name = ext.value<std::string>();
  if (!parent_name) {
    return MakeError("extends must be a recipe name or path (a string)",
                     At(path, ext.node()->source()));
  }
  if (!load_parent) return MakeError("extends is not supported here", std::string(path));
  auto parent = load_parent(*parent_name);
  if (!parent.ok()) {
    Error e = parent.error();
    e.message = "in recipe extended by " + std::string(path) + ": " + e.message;
    return e;
  }
  Recipe r = std::move(parent).value();
  r.match = Match{};  // [match] is never inherited: a child says where it applies
  return r;
}

/// `[name]` must be a table when present; nullptr when absent.
Result<const toml::table*> SectionTable(const toml::table& root, const char* name,
                                        std::string_view path) {
  auto n = root[name];
  if (!n) return static_cast<const toml::table*>(nullptr);
  const toml::table* t = n.as_table();
  if (t == nullptr) {
    return MakeError("[" + std::string(name) + "] must be a table", At(path, n.node()->source()));
  }
  return t;
}

}  // namespace

Result<Recipe> ParseRecipe(std::string_view text, std::string_view path,
                           const ParentLoader& load_parent) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return MakeError(
        "malformed TOML: " + std::string(e.description()),
        std::string(path) + ":" + std::to_string(b.line) + ":" + std::to_string(b.column),
        "fix the TOML syntax at that line and column");
  } catch (const std::exception& e) {
    return MakeError(std::string("cannot parse: ") + e.what(), std::string(path));
  }
  for (auto&& [key, node] : root) {
    std::string k(key.str());
    if (std::find(kTopKeys.begin(), kTopKeys.end(), k) == kTopKeys.end()) {
      return MakeError("unknown key '" + k + "'", At(path, key.source()), DidYouMean(k, kTopKeys));
    }
  }
  Recipe r;
  if (root["extends"]) {
    auto parent = ParentOf(root, path, load_parent);
    if (!parent.ok()) return parent.error();
    r = std::move(parent).value();
  }
  r.path = std::string(path);
  r.chain.insert(r.chain.begin(), StemOf(path));
  if (auto d = root["description"].value<std::string>()) r.description = *d;
  using Section = Status (*)(const toml::table&, std::string_view, Recipe*);
  const std::pair<const char*, Section> sections[] = {{"match", ParseMatch},
                                                      {"env", ParseEnv},
                                                      {"thresholds", ParseThresholds},
                                                      {"slurm", ParseSlurm}};
  for (const auto& [name, parse] : sections) {
    auto t = SectionTable(root, name, path);
    if (!t.ok()) return t.error();
    if (*t == nullptr) continue;
    if (auto st = parse(**t, path, &r); !st.ok()) return st.error();
  }
  if (auto w = root["waive"]) {
    if (auto st = ParseWaive(w, path, &r); !st.ok()) return st.error();
  }
  return r;
}

std::vector<RecipeDir> RecipeSearchPath(const Environment& env, const InstallLayout& layout) {
  std::vector<RecipeDir> out;
  if (auto p = Lookup(env, "SAFE_LAUNCH_RECIPE_PATH")) {
    for (const auto& dir : Split(*p, ':')) out.push_back({dir, kUserRecipes});
  }
  if (!layout.sysconf_dir.empty()) out.push_back({layout.sysconf_dir + "/recipes.d", kSiteRecipes});
  if (!layout.data_dir.empty()) out.push_back({layout.data_dir + "/recipes", kShippedRecipes});
  return out;
}

Result<Recipe> LoadRecipe(std::string_view name_or_path, const Environment& env) {
  return LoadRecipeFrom(name_or_path, RecipeSearchPath(env, SelfLayout()));
}

Result<Recipe> LoadRecipeFrom(std::string_view name_or_path, const std::vector<RecipeDir>& search) {
  std::vector<std::string> stack;
  return LoadChain(name_or_path, search, &stack);
}

bool MatchesFacts(const Match& m, const NodeFacts& facts) {
  if (!m.link_layer.empty()) {
    bool any = false;
    for (const auto& want : m.link_layer) {
      if (want == "none") {
        any = any || facts.ib_ports.empty();
        continue;
      }
      for (const auto& p : facts.ib_ports) any = any || p.link_layer == want;
    }
    if (!any) return false;
  }
  if (!m.device.empty()) {
    bool any = false;
    for (const auto& want : m.device) {
      for (const auto& p : facts.ib_ports) any = any || StartsWith(p.device, want);
    }
    if (!any) return false;
  }
  if (!m.gpu_model.empty()) {
    bool any = false;
    for (const auto& want : m.gpu_model) {
      for (const auto& g : facts.gpus) any = any || g.model.find(want) != std::string::npos;
    }
    if (!any) return false;
  }
  return true;
}

namespace {

// The [match] tables choose on the RDMA devices and their link layers. When those could not be
// read, "no port" is not known to be true: choosing socket-only would export NCCL_IB_DISABLE=1 and
// silently run the job over TCP. The plan refuses and names the flag that decides instead.
std::optional<Error> UnreadFabric(const NodeFacts& facts, const std::set<std::string>& names) {
  for (const IbProblem& p : IbProblems(facts)) {
    if (p.attribute != "devices" && p.attribute != "ports" && p.attribute != "link_layer") {
      continue;
    }
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return MakeError(
        "cannot choose a recipe: the RDMA fabric could not be read (" + p.message +
            "); the plan does not guess from facts it could not read",
        facts.HostPath(p.path),
        "make " + p.path + " readable, or name the recipe with --recipe NAME (" + list + ")");
  }
  return std::nullopt;
}

}  // namespace

Result<Recipe> ChooseRecipe(const NodeFacts& facts, const Environment& env, std::string* why) {
  return ChooseRecipeFrom(facts, RecipeSearchPath(env, SelfLayout()), why);
}

Result<Recipe> ChooseRecipeFrom(const NodeFacts& facts, const std::vector<RecipeDir>& search,
                                std::string* why) {
  std::set<std::string> names;
  for (const auto& n : BuiltinRecipeNames()) names.insert(n);
  for (const RecipeDir& dir : search) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path, ec)) {
      std::string file = entry.path().filename().string();
      if (EndsWith(file, ".toml")) names.insert(StemOf(file));
    }
  }
  if (auto refused = UnreadFabric(facts, names)) return *refused;
  std::optional<Recipe> best;
  for (const auto& n : names) {
    auto r = LoadRecipeFrom(n, search);
    if (!r.ok()) return r.error();
    if (r->match.empty() || !MatchesFacts(r->match, facts)) continue;
    if (!best || r->match.priority > best->match.priority) best = std::move(r).value();
  }
  if (best) {
    if (why) {
      std::string m;
      if (!best->match.link_layer.empty()) {
        m += "link_layer ";
        for (const auto& l : best->match.link_layer) m += l + " ";
      }
      if (!best->match.device.empty()) m += "device " + best->match.device.front() + "* ";
      if (!best->match.gpu_model.empty()) m += "gpu_model " + best->match.gpu_model.front() + " ";
      *why = "chosen from this node's facts ([match] " + std::string(Trim(m)) + ")";
    }
    return std::move(*best);
  }
  if (why) *why = "no recipe's [match] fits this node: using default";
  return LoadRecipeFrom("default", search);
}

}  // namespace sl::recipes
