#pragma once
// How a Diagnosis is shown: JSON (schema safe-launch.diagnosis/1, stable for scripts), text for
// a tired engineer, and the explanation of which rule fired on which lines.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "diagnose/engine.h"

namespace sl::diagnose {

/// What was read, for the report's header.
struct ReadSummary {
  std::vector<std::string> inputs;
  std::uint64_t files = 0, bytes = 0, lines = 0, cut_lines = 0, replaced_bytes = 0;
  std::vector<std::string> skipped;
  std::uint64_t binary = 0;           ///< binary files (dumps, cores) not read as logs: one count
  std::uint64_t duplicate_lines = 0;  ///< recognised lines already counted from another file
  std::uint64_t dumps = 0;            ///< Flight Recorder dumps the analysis read (its causes join)
};

/// "node n1, rank 3, port mlx5_0, GPU 2, peer n2": the entity's non-empty parts, or "".
std::string EntityText(const Entity& e);

/// "high" (>= 0.75), "medium" (>= 0.5) or "low", of a probability.
std::string_view ConfidenceLevel(double probability);

/// {"schema": "safe-launch.diagnosis/1", "causes": [...best first, each with "category" and
/// "probability"], "separate", "symptoms", "input", ...}; with `explain`, "rules_fired",
/// "features" (each with its weight per cause shown and its source) and "priors" too.
nlohmann::json DiagnosisJson(const Diagnosis& d, const ReadSummary& read, bool explain);

/// The differential: causes with probability, entity, evidence file:line and fix, and what
/// separates the first two; with `explain`, every feature with its weights and source, every
/// rule that fired and the lines of each condition.
std::string DiagnosisText(const Diagnosis& d, const ReadSummary& read, bool explain);

/// The causes as a JSON array, best first (DiagnosisJson's "causes", summary.json's too).
nlohmann::json CausesJson(const std::vector<Cause>& causes);

/// {"schema": "safe-launch.features/1", "features": {id: value}}: `diagnose --features --json`,
/// what tools/fit_diagnosis.py fits on.
nlohmann::json FeaturesOnlyJson(const std::vector<Feature>& features);

}  // namespace sl::diagnose
