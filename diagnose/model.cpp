#include "diagnose/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/strings.h"

namespace sl::diagnose {

// Generated from diagnose/model/weights.tsv by diagnose/model/embed.cmake.
extern const char kEmbeddedModel[];

int Model::Index(std::string_view category) const {
  for (std::size_t i = 0; i < categories.size(); ++i) {
    if (categories[i] == category) return static_cast<int>(i);
  }
  return -1;
}

const std::vector<double>* Model::Weights(std::string_view feature) const {
  auto it = weights.find(std::string(feature));
  return it == weights.end() ? nullptr : &it->second;
}

std::vector<double> Model::Probabilities(
    const std::vector<std::pair<std::string, double>>& features) const {
  std::vector<double> score(intercepts);
  for (const auto& [id, value] : features) {
    if (const auto* w = Weights(id)) {
      for (std::size_t k = 0; k < score.size(); ++k) score[k] += (*w)[k] * value;
    }
  }
  if (score.empty()) return score;
  const double t = temperature > 0 ? temperature : 1;
  const double top = *std::max_element(score.begin(), score.end());
  double sum = 0;
  for (double& s : score) {
    s = std::exp((s - top) / t);
    sum += s;
  }
  for (double& s : score) s /= sum;
  return score;
}

namespace {

Status ParseRow(const std::vector<std::string>& cols, Model* m) {
  if (cols[0] == "meta" && cols.size() == 3) {
    m->meta[cols[1]] = cols[2];
    if (cols[1] == "temperature") {
      auto t = ParseDouble(cols[2], "temperature");
      if (!t.ok()) return t.error();
      m->temperature = *t;
    }
    return OkStatus();
  }
  if (cols[0] == "class" && cols.size() == 3) {
    auto b = ParseDouble(cols[2], "intercept");
    if (!b.ok()) return b.error();
    if (!m->weights.empty()) return MakeError("a class after the weights");
    m->categories.push_back(cols[1]);
    m->intercepts.push_back(*b);
    return OkStatus();
  }
  if (cols[0] == "weight" && cols.size() == 4) {
    const int k = m->Index(cols[2]);
    if (k < 0) return MakeError("weight for an undeclared class '" + cols[2] + "'");
    auto w = ParseDouble(cols[3], "weight");
    if (!w.ok()) return w.error();
    auto& row = m->weights[cols[1]];
    row.resize(m->categories.size(), 0.0);
    row[static_cast<std::size_t>(k)] = *w;
    return OkStatus();
  }
  return MakeError("expected 'meta KEY VALUE', 'class NAME B' or 'weight FEATURE CLASS W'");
}

}  // namespace

Result<Model> ParseModel(std::string_view text) {
  Model m;
  std::size_t n = 0;
  for (const std::string& line : SplitLines(text)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cols = Split(line, '\t', false);
    if (Status s = ParseRow(cols, &m); !s.ok()) {
      return MakeError(s.error().message, fmt::format("weights.tsv:{}", n));
    }
  }
  if (m.categories.empty()) return MakeError("no class", "weights.tsv");
  return m;
}

std::string_view FittedModelText() { return kEmbeddedModel; }

const Model& FittedModel() {
  // A table that does not parse is a build defect the model tests catch; at run time it leaves
  // an empty model, and the engine then ranks by the rules alone.
  static const Model model = [] {
    auto m = ParseModel(FittedModelText());
    return m.ok() ? std::move(*m) : Model{};
  }();
  return model;
}

}  // namespace sl::diagnose
