#pragma once
// Computed recipe values (`NAME = { compute = "<name>" }`): the kComputes[] table in
// computes.cpp maps each name to the function that works the value out from the node's facts.
// Adding one = a function and a row there, a test in tests/unit/recipes/computes_test.cpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/node_facts.h"
#include "nccl/version.h"
#include "recipes/recipe.h"

namespace sl::recipes {

/// What a compute function produced: a value with its reason, or a note why nothing is set.
struct Computed {
  std::optional<std::string> value;
  std::string reason;  ///< for a value: why; without: the note
};

/// What a compute function reads.
struct ComputeInput {
  const EnvSetting& setting;  ///< the recipe line (link_layer, why)
  const Environment& env;
  const NodeFacts& facts;
  const nccl::Versions& versions;
};

struct ComputeSpec {
  std::string_view name;  ///< "ib_hca", as written in a recipe
  Computed (*compute)(const ComputeInput& in);
};

/// The row for a compute name; nullptr when there is none.
const ComputeSpec* FindCompute(std::string_view name);
/// Every compute name, in table order (for "did you mean" and the manual).
std::vector<std::string> ComputeNames();

/// The job-unique RAS port: nccl::kRasPort + hash(SLURM_JOB_ID, SLURM_STEP_ID) % 1000
/// (nccl::kRasPort itself without a job).
int RasPortFor(const Environment& env);

}  // namespace sl::recipes
