#pragma once
// The fitted diagnosis model: a multinomial logistic regression over the engine's features
// (catalog rows that matched, conditions and rules that held, other sources' claims), fitted
// offline on the corpus's train split by tools/fit_diagnosis.py and checked in as
// diagnose/model/weights.tsv, which the build embeds. Nothing is learned at run time: scoring
// is a weighted sum per category and a softmax.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl::diagnose {

/// The table: per category an intercept (the prior), per (feature, category) a weight, one
/// temperature for calibration, and the fingerprint of the inputs it was fitted on.
struct Model {
  std::vector<std::string> categories;
  std::vector<double> intercepts;                      ///< parallel to categories
  std::map<std::string, std::vector<double>> weights;  ///< feature -> one weight per category
  double temperature = 1;
  std::map<std::string, std::string> meta;  ///< fingerprint, C, train_logs, corpus, ...

  /// The index of `category`, -1 when the model has no such class.
  int Index(std::string_view category) const;
  /// The weights of `feature` (one per category), nullptr when the model never saw it.
  const std::vector<double>* Weights(std::string_view feature) const;
  /// Probabilities per category (softmax of the scores divided by the temperature) of a feature
  /// vector given as (id, value) pairs; features the model lacks weigh nothing.
  std::vector<double> Probabilities(
      const std::vector<std::pair<std::string, double>>& features) const;
};

/// Parses the table's text: "meta KEY VALUE", "class CATEGORY INTERCEPT", "weight FEATURE
/// CATEGORY W", tab-separated, '#' comments. Errors name the line.
Result<Model> ParseModel(std::string_view text);

/// The table embedded at build time (diagnose/model/weights.tsv), parsed once.
const Model& FittedModel();

/// The embedded table's text, as checked in.
std::string_view FittedModelText();

}  // namespace sl::diagnose
