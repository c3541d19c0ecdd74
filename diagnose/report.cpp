#include "diagnose/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>
#include <vector>

namespace sl::diagnose {

std::string_view ConfidenceLevel(double confidence) {
  if (confidence >= 0.75) return "high";
  if (confidence >= 0.5) return "medium";
  return "low";
}

namespace {

nlohmann::json LineJson(const EvidenceLine& e) {
  nlohmann::json j = {{"file", e.file}, {"line", e.line}, {"text", e.text}};
  if (!e.signature.empty()) j["signature"] = e.signature;
  return j;
}

nlohmann::json EntityJson(const Entity& e) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&j](const char* k, const std::string& v) {
    if (!v.empty()) j[k] = v;
  };
  put("node", e.node);
  put("rank", e.rank);
  put("port", e.port);
  put("gpu", e.gpu);
  put("peer", e.peer);
  return j;
}

// The causes the text shows with their evidence.
constexpr std::size_t kShownInText = 3;

}  // namespace

std::string EntityText(const Entity& e) {
  std::string out;
  auto put = [&out](const char* k, const std::string& v) {
    if (!v.empty()) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k, v);
  };
  put("node", e.node);
  put("rank", e.rank);
  put("port", e.port);
  put("GPU", e.gpu);
  put("peer", e.peer);
  return out;
}

nlohmann::json CausesJson(const std::vector<Cause>& all) {
  nlohmann::json causes = nlohmann::json::array();
  for (const Cause& c : all) {
    nlohmann::json j;
    j["category"] = c.category;
    j["probability"] = std::round(c.probability * 1000) / 1000;
    j["level"] = c.category == "unknown" ? "none" : ConfidenceLevel(c.probability);
    j["entity"] = EntityJson(c.entity);
    nlohmann::json ev = nlohmann::json::array();
    for (const EvidenceLine& e : c.evidence) ev.push_back(LineJson(e));
    j["evidence"] = std::move(ev);
    j["fix"] = c.fix;
    j["why"] = c.why;
    j["decide"] = c.decide;
    j["rules"] = c.rules;
    nlohmann::json pushed = nlohmann::json::array();
    for (const Push& p : c.pushed) {
      pushed.push_back(
          {{"feature", p.feature}, {"contribution", std::round(p.contribution * 1000) / 1000}});
    }
    j["pushed_by"] = std::move(pushed);
    causes.push_back(std::move(j));
  }
  return causes;
}

namespace {

nlohmann::json FeaturesJson(const Diagnosis& d) {
  nlohmann::json out = nlohmann::json::array();
  for (const Feature& f : d.features) {
    nlohmann::json w = nlohmann::json::object();
    for (std::size_t k = 0; k < f.weights.size() && k < d.causes.size(); ++k) {
      w[d.causes[k].category] = std::round(f.weights[k] * 1000) / 1000;
    }
    nlohmann::json lines = nlohmann::json::array();
    for (const EvidenceLine& e : f.lines) lines.push_back(LineJson(e));
    out.push_back({{"feature", f.id},
                   {"value", f.value},
                   {"source", f.source},
                   {"weights", std::move(w)},
                   {"lines", std::move(lines)}});
  }
  return out;
}

nlohmann::json FiredJson(const Diagnosis& d) {
  nlohmann::json fired = nlohmann::json::array();
  for (const Firing& f : d.fired) {
    nlohmann::json conds = nlohmann::json::object();
    for (const auto& [name, lines] : f.conditions) {
      nlohmann::json l = nlohmann::json::array();
      for (const EvidenceLine& e : lines) l.push_back(LineJson(e));
      conds[name] = std::move(l);
    }
    fired.push_back({{"rule", f.rule},
                     {"category", f.category},
                     {"confidence", f.confidence},
                     {"conditions", std::move(conds)}});
  }
  return fired;
}

}  // namespace

nlohmann::json DiagnosisJson(const Diagnosis& d, const ReadSummary& read, bool explain) {
  nlohmann::json j;
  j["schema"] = "safe-launch.diagnosis/1";
  j["named"] = d.named();
  j["decided"] = d.decided;
  j["causes"] = CausesJson(d.causes);
  j["separate"] = d.separate;
  nlohmann::json sym = nlohmann::json::array();
  for (const Symptom& s : d.symptoms) {
    sym.push_back({{"category", s.category}, {"count", s.count}, {"first", LineJson(s.first)}});
  }
  j["symptoms"] = std::move(sym);
  j["input"] = {{"inputs", read.inputs},       {"files", read.files},
                {"bytes", read.bytes},         {"lines", read.lines},
                {"cut_lines", read.cut_lines}, {"replaced_bytes", read.replaced_bytes},
                {"recognised", d.recognised},  {"skipped", read.skipped},
                {"binary_files", read.binary}, {"flight_recorder_dumps", read.dumps}};
  if (explain) {
    j["rules_fired"] = FiredJson(d);
    j["features"] = FeaturesJson(d);
    nlohmann::json priors = nlohmann::json::object();
    for (std::size_t k = 0; k < d.priors.size() && k < d.causes.size(); ++k) {
      priors[d.causes[k].category] = std::round(d.priors[k] * 1000) / 1000;
    }
    j["priors"] = std::move(priors);
  }
  return j;
}

nlohmann::json FeaturesOnlyJson(const std::vector<Feature>& features) {
  nlohmann::json values = nlohmann::json::object();
  for (const Feature& f : features) values[f.id] = f.value;
  return {{"schema", "safe-launch.features/1"}, {"features", std::move(values)}};
}

namespace {

// The (file, line) pairs of a cause's shown evidence: a cause that cites the very lines an earlier
// one did says so in one line instead of repeating them.
std::vector<std::pair<std::string, std::uint64_t>> ShownLines(const Cause& c) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (std::size_t i = 0; i < c.evidence.size() && i < 8; ++i) {
    out.emplace_back(c.evidence[i].file, c.evidence[i].line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void EvidenceText(const Cause& c, std::span<const Cause> earlier, std::string* out) {
  if (c.evidence.empty()) return;
  const auto mine = ShownLines(c);
  for (std::size_t k = 0; k < earlier.size(); ++k) {
    if (earlier[k].category != "unknown" && ShownLines(earlier[k]) == mine) {
      *out += fmt::format("   evidence: the same {} line(s) as cause {} ({})\n", mine.size(), k + 1,
                          earlier[k].category);
      return;
    }
  }
  *out += "   evidence:\n";
  for (std::size_t i = 0; i < c.evidence.size() && i < 8; ++i) {
    const EvidenceLine& e = c.evidence[i];
    *out += fmt::format("     {}:{}  {}\n", e.file, e.line, e.text.substr(0, 200));
  }
}

void CauseText(const Cause& c, std::size_t n, std::span<const Cause> earlier, std::string* out) {
  if (c.category == "unknown") {
    *out += "No failure evidence: unknown.\n";
    if (!c.why.empty()) *out += "  " + c.why + "\n";
  } else {
    *out += fmt::format("{}. {}  probability {:.2f} ({})", n, c.category, c.probability,
                        ConfidenceLevel(c.probability));
    if (std::string e = EntityText(c.entity); !e.empty()) *out += "  [" + e + "]";
    *out += "\n";
    if (!c.why.empty()) *out += "   why: " + c.why + "\n";
  }
  EvidenceText(c, earlier, out);
  if (!c.fix.empty()) *out += "   fix: " + c.fix + "\n";
  if (c.category == "unknown" && !c.decide.empty()) *out += "   to decide: " + c.decide + "\n";
}

// --explain: every feature the model scored, its weight for each cause shown, its source.
void FeaturesText(const Diagnosis& d, std::string* out) {
  if (d.features.empty() || d.priors.empty()) return;
  std::string head;
  for (const Cause& c : d.causes) head += (head.empty() ? "" : " | ") + c.category;
  *out += "\nfeatures (weight for: " + head + "):\n";
  auto weights = [](const std::vector<double>& w) {
    std::string s;
    for (double x : w) s += fmt::format(" {:+6.2f}", x);
    return s;
  };
  *out += fmt::format("  {:<56}{}  (priors)\n", "intercept", weights(d.priors));
  for (const Feature& f : d.features) {
    const std::string name = f.value == 1 ? f.id : fmt::format("{} = {:.2f}", f.id, f.value);
    *out += fmt::format("  {:<56}{}  {}\n", name, weights(f.weights), f.source.substr(0, 120));
  }
}

void FiredText(const Diagnosis& d, std::string* out) {
  *out += "\nrules fired:\n";
  if (d.fired.empty()) *out += "  none\n";
  for (const Firing& f : d.fired) {
    *out += fmt::format("  {} -> {} ({:.2f})\n", f.rule, f.category, f.confidence);
    for (const auto& [name, lines] : f.conditions) {
      *out += fmt::format("    {}:", name);
      for (const EvidenceLine& e : lines) *out += fmt::format(" {}:{}", e.file, e.line);
      *out += "\n";
    }
  }
}

}  // namespace

std::string DiagnosisText(const Diagnosis& d, const ReadSummary& read, bool explain) {
  std::string out = fmt::format(
      "safe-launch diagnose: {} file(s), {} line(s), {} recognised{}{}\n\n", read.files, read.lines,
      d.recognised, read.cut_lines ? fmt::format(", {} over-long line(s) cut", read.cut_lines) : "",
      read.dumps ? fmt::format("; {} Flight Recorder dump(s)", read.dumps) : "");
  if (d.causes.front().category != "unknown") {
    out += d.decided ? "Differential, most likely first:\n"
                     : "Only symptoms were found, no line names a cause; the likeliest causes:\n";
  }
  for (std::size_t i = 0; i < d.causes.size() && i < kShownInText + 1; ++i) {
    if (i == kShownInText && d.causes.front().category != "unknown") break;
    if (i == 1 && d.causes.front().category == "unknown") {
      out += "Without failure evidence, the model's base rates for such logs:\n";
    }
    CauseText(d.causes[i], i + 1, std::span<const Cause>(d.causes).first(i), &out);
    out += "\n";
  }
  if (!d.separate.empty()) {
    out += fmt::format("to tell {} from {}: {}\n\n", d.causes[0].category, d.causes[1].category,
                       d.separate);
  }
  if (!d.symptoms.empty()) {
    out += "symptoms (evidence, not causes):\n";
    for (const Symptom& s : d.symptoms) {
      out +=
          fmt::format("  {} x{}  first {}:{}\n", s.category, s.count, s.first.file, s.first.line);
    }
  }
  for (const std::string& s : read.skipped) out += "skipped: " + s + "\n";
  if (read.binary > 0) {
    out += fmt::format("not read as logs: {} binary file(s) (Flight Recorder dumps, cores)\n",
                       read.binary);
  }
  if (explain) {
    FeaturesText(d, &out);
    FiredText(d, &out);
  }
  return out;
}

}  // namespace sl::diagnose
