#include "diagnose/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <span>
#include <unordered_map>

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

// A number of the table: std::from_chars where it takes the whole text (correctly rounded, as
// strtod is, without strtod's copy and locale), else ParseDouble's reading and errors.
Result<double> TableNumber(std::string_view text, std::string_view what) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size()) return v;
  return ParseDouble(text, what);
}

// Reads the table a row at a time without copying it: every diagnose reads the whole table
// (about 11000 rows), and splitting it into strings was most of a small log's CPU time.
class TableReader {
 public:
  explicit TableReader(Model* m) : m_(m) {}

  Status Row(std::span<const std::string_view> cols) {
    if (cols[0] == "meta" && cols.size() == 3) {
      m_->meta[std::string(cols[1])] = std::string(cols[2]);
      if (cols[1] == "temperature") {
        auto t = TableNumber(cols[2], "temperature");
        if (!t.ok()) return t.error();
        m_->temperature = *t;
      }
      return OkStatus();
    }
    if (cols[0] == "class" && cols.size() == 3) {
      auto b = TableNumber(cols[2], "intercept");
      if (!b.ok()) return b.error();
      if (!m_->weights.empty()) return MakeError("a class after the weights");
      m_->categories.emplace_back(cols[1]);
      m_->intercepts.push_back(*b);
      return OkStatus();
    }
    if (cols[0] == "weight" && cols.size() == 4) {
      const int k = Index(cols[2]);
      if (k < 0) return MakeError("weight for an undeclared class '" + std::string(cols[2]) + "'");
      auto w = TableNumber(cols[3], "weight");
      if (!w.ok()) return w.error();
      // A feature's rows come one after another: its row is looked up once.
      if (row_ == nullptr || cols[1] != feature_) {
        feature_ = cols[1];
        row_ = &m_->weights[std::string(feature_)];
      }
      row_->resize(m_->categories.size(), 0.0);
      (*row_)[static_cast<std::size_t>(k)] = *w;
      return OkStatus();
    }
    return MakeError("expected 'meta KEY VALUE', 'class NAME B' or 'weight FEATURE CLASS W'");
  }

 private:
  // Model::Index, from a map made at the first weight (no class may follow it).
  int Index(std::string_view category) {
    if (index_.empty()) {
      for (std::size_t i = 0; i < m_->categories.size(); ++i) {
        index_.emplace(m_->categories[i], static_cast<int>(i));  // a repeated name: the first
      }
    }
    auto it = index_.find(category);
    return it == index_.end() ? -1 : it->second;
  }

  Model* m_;
  std::unordered_map<std::string_view, int> index_;
  std::string_view feature_;
  std::vector<double>* row_ = nullptr;
};

}  // namespace

Result<Model> ParseModel(std::string_view text) {
  Model m;
  TableReader reader(&m);
  std::size_t n = 0;
  std::string_view cols[5];
  for (std::size_t start = 0; start < text.size();) {
    // The lines as SplitLines cuts them: at '\n', without a '\r' before it.
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++n;
    if (line.empty() || line[0] == '#') continue;
    // The columns as Split(line, '\t', false) cuts them; a fifth is too many for any row.
    std::size_t count = 0;
    for (std::size_t at = 0; count < std::size(cols);) {
      const std::size_t tab = line.find('\t', at);
      cols[count++] =
          line.substr(at, tab == std::string_view::npos ? std::string_view::npos : tab - at);
      if (tab == std::string_view::npos) break;
      at = tab + 1;
    }
    if (Status s = reader.Row(std::span<const std::string_view>(cols, count)); !s.ok()) {
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
