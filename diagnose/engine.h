#pragma once
// The evidence -> cause engine. Recognised lines are evidence of three kinds (catalog rows say
// which): causes a person can fix, symptoms a cause produced (a watchdog timeout, "NCCL error")
// and facts (the NCCL version, the bootstrap interface, a transport line without /GDRDMA).
// A table of rules (kRules) combines evidence into ranked causes with a confidence; symptoms
// alone name no cause, they give `unknown` and what evidence would decide. Pure: the same
// Evidence comes from the supervisor (the bundle summary) or from files (`safe-launch diagnose`).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/evidence.h"

namespace sl::diagnose {

/// A line that backs a cause, as cited: file, 1-based line, text.
struct EvidenceLine {
  std::string file;
  std::uint64_t line = 0;
  std::string text;
  std::string signature;  ///< catalog row id ("" for another source's line)
};

/// What a cause concerns; "" where unknown.
struct Entity {
  std::string node, rank, port, gpu, peer;
  bool empty() const { return node.empty() && rank.empty() && port.empty() && gpu.empty(); }
};

/// One ranked cause.
struct Cause {
  std::string category;  ///< from CATEGORIES.md; "unknown" when nothing decided
  double confidence = 0;
  Entity entity;
  std::vector<EvidenceLine> evidence;
  std::string why;                 ///< the rule's reasoning, one sentence per rule that named it
  std::string fix;                 ///< what to change
  std::string decide;              ///< what would tell it apart from the close hypotheses
  std::vector<std::string> rules;  ///< ids of the rules (or sources) that named it
};

/// A rule that fired, with the lines each of its conditions held on (for --explain).
struct Firing {
  std::string rule, category;
  double confidence = 0;
  std::vector<std::pair<std::string, std::vector<EvidenceLine>>> conditions;
};

/// A symptom seen: its category, how many lines, the first one.
struct Symptom {
  std::string category;
  std::size_t count = 0;
  EvidenceLine first;
};

/// A conclusion from another evidence source (the Flight Recorder analysis, preflight findings,
/// a run directory's warm-up report): it joins the catalog's rules on equal terms.
struct CauseClaim {
  std::string source;  ///< "flight_recorder", "preflight", "warmup"
  std::string rule;    ///< the source's own rule id, shown by --explain
  std::string category;
  double confidence = 0;
  Entity entity{};
  std::vector<EvidenceLine> evidence{};
  std::string why{};
};

struct Diagnosis {
  std::vector<Cause> causes;  ///< best first; one "unknown" entry when none was named
  std::vector<Symptom> symptoms;
  std::vector<Firing> fired;
  std::size_t recognised = 0;  ///< lines the catalog recognised
  /// True when a cause (not `unknown`) was named.
  bool named() const { return !causes.empty() && causes.front().category != "unknown"; }
};

/// A condition over the evidence: holds or not, and collects the lines it held on.
using Condition = bool (*)(const Evidence& evidence, std::vector<const Match*>* lines);

/// One row of the rule table: all of `when` hold and `unless` does not -> `category` with
/// `confidence`. Several rules naming one category combine (noisy-or).
struct Rule {
  std::string_view id;
  std::string_view category;
  double confidence;
  std::string_view when[3];  ///< condition names, "" = unused
  std::string_view unless;   ///< a condition name that vetoes the rule, "" = none
  std::string_view why;
};

/// A named condition of the rules.
struct NamedCondition {
  std::string_view name;
  Condition test;
  std::string_view means;  ///< what the condition looks for, for --explain
};

/// One category of the vocabulary (doc/causes.md) with its fix and what tells
/// it apart.
struct CategoryInfo {
  std::string_view name, fix, decide;
};

std::span<const Rule> Rules();
std::span<const NamedCondition> Conditions();
std::span<const CategoryInfo> Categories();
/// nullptr when `name` is not a cause category (a symptom category such as collective_timeout).
const CategoryInfo* FindCategory(std::string_view name);

/// Decides: ranked causes from the catalog's rows, the rules and `claims` of other sources.
Diagnosis Diagnose(const Evidence& evidence, std::span<const CauseClaim> claims = {});

}  // namespace sl::diagnose
