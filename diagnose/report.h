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
  std::uint64_t binary = 0;  ///< binary files (dumps, cores) not read as logs: one count
};

/// "node n1, rank 3, port mlx5_0, GPU 2, peer n2": the entity's non-empty parts, or "".
std::string EntityText(const Entity& e);

/// "high" (>= 0.75), "medium" (>= 0.5) or "low".
std::string_view ConfidenceLevel(double confidence);

/// {"schema": "safe-launch.diagnosis/1", "causes": [...best first], "symptoms", "input", ...};
/// with `explain`, "rules_fired" too.
nlohmann::json DiagnosisJson(const Diagnosis& d, const ReadSummary& read, bool explain);

/// Ranked causes with confidence, entity, evidence file:line, what decides between close ones,
/// and the fix; with `explain`, every rule that fired and the lines of each condition.
std::string DiagnosisText(const Diagnosis& d, const ReadSummary& read, bool explain);

/// The causes as a JSON array, best first (DiagnosisJson's "causes", summary.json's too).
nlohmann::json CausesJson(const std::vector<Cause>& causes);

}  // namespace sl::diagnose
