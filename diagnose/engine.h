#pragma once
// The evidence -> cause engine. Recognised lines are evidence of three kinds (catalog rows say
// which): causes a person can fix, symptoms a cause produced (a watchdog timeout, "NCCL error")
// and facts (the NCCL version, the bootstrap interface, a transport line without /GDRDMA).
// A table of rules (kRules) combines evidence into conditions and rules that hold; the rows,
// conditions, rules and other sources' claims are the features of the fitted model
// (diagnose/model.h), whose softmax ranks every cause with a probability: a differential. Only
// inputs without any failure evidence give `unknown`, with what evidence would decide. Pure: the
// same Evidence comes from the supervisor (the bundle summary) or from files (`safe-launch
// diagnose`).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/cause.h"
#include "diagnose/evidence.h"
#include "diagnose/model.h"

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

/// One feature of the evidence, as the model sees it.
struct Feature {
  /// "row:<catalog id>", "cause:<category>" / "symptom:<category>" (any row of that kind and
  /// category), "cond:<condition>", "rule:<rule id>", "<source>:<rule>" (a claim: preflight,
  /// warmup, ib_counters, flight_recorder, stacks), "claim:<category>", "engine:<category>" (the
  /// rules' combined confidence), "struct:<name>" (the shape of the evidence).
  std::string id;
  double value = 1;
  std::string source;  ///< the row's provenance, the condition's meaning, the rule's reasoning
  std::vector<EvidenceLine> lines;  ///< the lines it holds on (a few)
  std::vector<double> weights;      ///< the model's weight per cause of the differential
};

/// A feature's share of a cause's score: weight times value.
struct Push {
  std::string feature;
  double contribution = 0;
};

/// One ranked cause.
struct Cause {
  std::string category;    ///< from common/cause.h; "unknown" when there is no failure evidence
  double probability = 0;  ///< the model's (sums to 1 over the differential)
  Entity entity;
  std::vector<EvidenceLine> evidence;
  std::vector<Push> pushed;        ///< the features that raised its score, strongest first
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
  /// The differential, best first (probabilities sum to 1); one "unknown" entry when there is
  /// no failure evidence at all.
  std::vector<Cause> causes;
  std::vector<Symptom> symptoms;
  std::vector<Firing> fired;
  std::vector<Feature> features;  ///< what the model scored
  std::vector<double> priors;     ///< the model's intercept per cause, parallel to causes
  std::string separate;           ///< what would tell the first two causes apart
  /// True when evidence of a cause (a cause row, a rule, another source's claim) was seen, not
  /// symptoms only.
  bool decided = false;
  std::size_t recognised = 0;  ///< lines the catalog recognised
  /// True when a cause (not `unknown`) leads and evidence of a cause backs the differential.
  bool named() const { return decided && !causes.empty() && causes.front().category != "unknown"; }
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

/// One category of the vocabulary (common/cause.h, doc/causes.md).
using CategoryInfo = sl::CauseInfo;

std::span<const Rule> Rules();
std::span<const NamedCondition> Conditions();
std::span<const CategoryInfo> Categories();
/// nullptr when `name` is not a cause category (a symptom category such as collective_timeout).
const CategoryInfo* FindCategory(std::string_view name);

/// Decides: the differential of the fitted `model` (FittedModel() when null) over the features
/// of the catalog's rows, the rules and `claims` of other sources.
Diagnosis Diagnose(const Evidence& evidence, std::span<const CauseClaim> claims = {},
                   const Model* model = nullptr);

/// The features alone (what `diagnose --features` prints and the fit reads).
std::vector<Feature> ExtractFeatures(const Evidence& evidence,
                                     std::span<const CauseClaim> claims = {});

/// A pseudo-observation of the vocabulary's own knowledge: the features a rule, a cause row or
/// a claim code gives by itself, labelled with the category it names. The fit adds them to the
/// train split with a small weight, so that a row or rule the corpus lacks still points at its
/// category.
struct PriorExample {
  std::string id;  ///< "rule:...", "row:...", "preflight:...", ...
  std::string category;
  std::vector<std::pair<std::string, double>> features;
  /// The example's weight in the fit, relative to a log's; below 0: its source's confidence
  /// (the features' engine:<category> value). An alternative of a differential (kAlternatives
  /// in engine.cpp) carries its own.
  double weight = -1;
};
/// The pseudo-observations: every rule, cause row and claim code labelled with its category,
/// then the alternatives an expert gives the same evidence (weaker, labelled with the other
/// causes it leaves open), so that the fit spreads probability where the text cannot decide.
std::vector<PriorExample> PriorExamples();

/// One cause an expert leaves open for a rule's, a row's or a symptom category's evidence.
struct Alternative {
  std::string_view of;        ///< "rule:ID", "row:ID" or "symptom:CATEGORY"
  std::string_view category;  ///< the cause left open
  double weight = 0;          ///< its pseudo-observation's weight
};
std::span<const Alternative> Alternatives();

/// What would tell causes `a` and `b` apart: the pairwise table's text, else both decide texts.
std::string Separator(std::string_view a, std::string_view b);

}  // namespace sl::diagnose
