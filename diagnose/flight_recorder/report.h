#pragma once
// From an FrAnalysis to causes in the diagnosis vocabulary (common/cause.h, doc/causes.md,
// doc/manual.md "Flight Recorder"), and their text, JSON (safe-launch.diagnosis/1) and HTML forms.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "diagnose/flight_recorder/analysis.h"

namespace sl::diagnose::fr {

struct EvidenceItem {
  std::string file;
  std::int64_t line = 0;  ///< the entry's index in the dump's entries list (-1: the file)
  std::string text;
};

/// One cause, as `safe-launch diagnose` reports causes.
struct Cause {
  std::string category;  ///< e.g. "straggler_or_slow_rank"
  double confidence = 0;
  std::string entity;   ///< "node gpu07 (ranks 56-63)", "rank 5"
  std::string message;  ///< one sentence: what the dumps show
  std::vector<EvidenceItem> evidence;
  std::string fix;
  /// The finding's stable id as the engine's claims name it ("" = "fr.<category>"); the
  /// diagnosis maps it to its category by this code (diagnose/job_facts.cpp
  /// FlightRecorderCategories).
  std::string rule;
};

/// The causes the analysis supports, best first; empty when every group is healthy.
std::vector<Cause> FlightRecorderCauses(const FrAnalysis& a);

/// "ALLREDUCE #5 in PG 0 (default_pg)".
std::string CollectiveName(const FrAnalysis& a, const PgFinding& f);

/// One line per entry: "entries[12] PG 0 #5 nccl:all_reduce scheduled in [[1024]] Float".
std::string DescribeEntry(const FrAnalysis& a, const RankDump& d, std::uint32_t index);

/// {"schema": "safe-launch.diagnosis/1", "causes": [...], "flight_recorder": {...}}.
nlohmann::json DiagnosisJson(const FrAnalysis& a, const std::vector<Cause>& causes);

/// The terminal report: verdict and fix first, then groups, missing ranks, unreadable files.
std::string DiagnosisText(const FrAnalysis& a, const std::vector<Cause>& causes);

/// The page's inline CSS (the job page of `diagnose RUN_ROOT` uses it too).
std::string_view PageStyle();
/// `s` with & < > " escaped.
std::string EscapeHtml(std::string_view s);
/// The rank x collective grid of the deciding group and its per-node table ("" when every
/// collective completed).
std::string GridHtml(const FrAnalysis& a);

/// diagnosis.html: one self-contained page (inline CSS, no script, no network).
std::string DiagnosisHtml(const FrAnalysis& a, const std::vector<Cause>& causes);

}  // namespace sl::diagnose::fr
