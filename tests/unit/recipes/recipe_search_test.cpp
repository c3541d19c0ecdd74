// Where recipe names are looked for: $SAFE_LAUNCH_RECIPE_PATH, the site's recipes.d, the shipped
// directory of the installation, then the copy built into the binary.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/install_layout.h"
#include "recipes/recipe.h"
#include "tests/unit/common/test_facts.h"

using namespace sl;
using namespace sl::recipes;

namespace {

// An installation under a fresh prefix P (P/bin/safe-launch), with recipes written into it.
struct Installation {
  std::string root;
  InstallLayout layout;
  Installation() {
    char tmpl[] = "/tmp/sl-recipe-search-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    root = tmpl;
    layout = LayoutForBinary(root + "/usr/bin/safe-launch");
  }
  ~Installation() { std::filesystem::remove_all(root); }
  std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir);
    const std::string p = dir + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  std::string Site() const { return layout.sysconf_dir + "/recipes.d"; }
  std::string Shipped() const { return layout.data_dir + "/recipes"; }
};

std::string Value(const Recipe& r, const std::string& name) {
  for (const auto& e : r.env) {
    if (e.name == name) return e.literal;
  }
  return "";
}

}  // namespace

TEST_CASE("the search path is the user's directories, then the site's, then the shipped ones") {
  const InstallLayout l = LayoutForBinary("/usr/bin/safe-launch");
  auto dirs = RecipeSearchPath({{"SAFE_LAUNCH_RECIPE_PATH", "/a:/b"}}, l);
  REQUIRE(dirs.size() == 4);
  CHECK(dirs[0].path == "/a");
  CHECK(dirs[1].path == "/b");
  CHECK(dirs[1].kind == kUserRecipes);
  CHECK(dirs[2].path == "/etc/safe-launch/recipes.d");
  CHECK(dirs[2].kind == kSiteRecipes);
  CHECK(dirs[3].path == "/usr/share/safe-launch/recipes");
  CHECK(dirs[3].kind == kShippedRecipes);
  CHECK(RecipeSearchPath({}, InstallLayout{}).empty());
}

TEST_CASE("a shipped recipe is read from the installation, and named as in the source tree") {
  Installation inst;
  const std::string file =
      inst.Write(inst.Shipped(), "default.toml", "[env]\nNCCL_DEBUG = \"INFO\"\n");
  auto r = LoadRecipeFrom("default", RecipeSearchPath({}, inst.layout));
  INFO((r.ok() ? "" : r.error().Describe()));
  REQUIRE(r.ok());
  CHECK(r->file == file);
  CHECK(r->path == "recipes/default.toml");
  CHECK(Value(*r, "NCCL_DEBUG") == "INFO");
}

TEST_CASE("a site recipe overrides the shipped one of the same name") {
  Installation inst;
  inst.Write(inst.Shipped(), "infiniband.toml", "[env]\nNCCL_DEBUG = \"WARN\"\n");
  const std::string site =
      inst.Write(inst.Site(), "infiniband.toml", "[env]\nNCCL_IB_TIMEOUT = 23\n");
  auto r = LoadRecipeFrom("infiniband", RecipeSearchPath({}, inst.layout));
  REQUIRE(r.ok());
  CHECK(r->file == site);
  CHECK(r->path == site);
  CHECK(Value(*r, "NCCL_IB_TIMEOUT") == "23");
  CHECK(Value(*r, "NCCL_DEBUG").empty());
  // $SAFE_LAUNCH_RECIPE_PATH still comes before the site.
  const std::string mine =
      inst.Write(inst.root + "/mine", "infiniband.toml", "[env]\nNCCL_IB_TIMEOUT = 24\n");
  auto user = LoadRecipeFrom(
      "infiniband",
      RecipeSearchPath({{"SAFE_LAUNCH_RECIPE_PATH", inst.root + "/mine"}}, inst.layout));
  REQUIRE(user.ok());
  CHECK(user->file == mine);
}

TEST_CASE("a site recipe with a [match] takes part in the automatic choice") {
  Installation inst;
  inst.Write(inst.Site(), "site-ib.toml",
             "extends = \"infiniband\"\n[match]\nlink_layer = \"InfiniBand\"\npriority = 20\n");
  std::string why;
  auto r = ChooseRecipeFrom(testing::IbNode(), RecipeSearchPath({}, inst.layout), &why);
  INFO((r.ok() ? "" : r.error().Describe()));
  REQUIRE(r.ok());
  CHECK(r->name == "site-ib");
  CHECK(r->chain == std::vector<std::string>{"site-ib", "infiniband", "default"});
}

TEST_CASE("without an installed recipe directory the built-in copy is used") {
  Installation inst;
  auto r = LoadRecipeFrom("roce", RecipeSearchPath({}, inst.layout));
  REQUIRE(r.ok());
  CHECK(r->file.empty());
  CHECK(r->path == "recipes/roce.toml");
}
