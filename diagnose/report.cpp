#include "diagnose/report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

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

// Two causes this close are worth telling apart before acting on the first.
constexpr double kClose = 0.15;

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
    j["confidence"] = std::round(c.confidence * 100) / 100;
    j["level"] = c.category == "unknown" ? "none" : ConfidenceLevel(c.confidence);
    j["entity"] = EntityJson(c.entity);
    nlohmann::json ev = nlohmann::json::array();
    for (const EvidenceLine& e : c.evidence) ev.push_back(LineJson(e));
    j["evidence"] = std::move(ev);
    j["fix"] = c.fix;
    j["why"] = c.why;
    j["decide"] = c.decide;
    j["rules"] = c.rules;
    causes.push_back(std::move(j));
  }
  return causes;
}

nlohmann::json DiagnosisJson(const Diagnosis& d, const ReadSummary& read, bool explain) {
  nlohmann::json j;
  j["schema"] = "safe-launch.diagnosis/1";
  j["named"] = d.named();
  j["causes"] = CausesJson(d.causes);
  nlohmann::json sym = nlohmann::json::array();
  for (const Symptom& s : d.symptoms) {
    sym.push_back({{"category", s.category}, {"count", s.count}, {"first", LineJson(s.first)}});
  }
  j["symptoms"] = std::move(sym);
  j["input"] = {{"inputs", read.inputs},       {"files", read.files},
                {"bytes", read.bytes},         {"lines", read.lines},
                {"cut_lines", read.cut_lines}, {"replaced_bytes", read.replaced_bytes},
                {"recognised", d.recognised},  {"skipped", read.skipped},
                {"binary_files", read.binary}};
  if (explain) {
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
    j["rules_fired"] = std::move(fired);
  }
  return j;
}

namespace {

void CauseText(const Cause& c, std::size_t n, std::string* out) {
  if (c.category == "unknown") {
    *out += "No cause named: unknown.\n";
    if (!c.why.empty()) *out += "  " + c.why + "\n";
  } else {
    *out += fmt::format("{}. {}  confidence {:.2f} ({})", n, c.category, c.confidence,
                        ConfidenceLevel(c.confidence));
    if (std::string e = EntityText(c.entity); !e.empty()) *out += "  [" + e + "]";
    *out += "\n";
    if (!c.why.empty()) *out += "   why: " + c.why + "\n";
  }
  if (!c.evidence.empty()) *out += "   evidence:\n";
  for (const EvidenceLine& e : c.evidence) {
    *out += fmt::format("     {}:{}  {}\n", e.file, e.line, e.text.substr(0, 200));
  }
  if (!c.fix.empty()) *out += "   fix: " + c.fix + "\n";
  if (c.category == "unknown" && !c.decide.empty()) *out += "   to decide: " + c.decide + "\n";
}

}  // namespace

std::string DiagnosisText(const Diagnosis& d, const ReadSummary& read, bool explain) {
  std::string out =
      fmt::format("safe-launch diagnose: {} file(s), {} line(s), {} recognised{}\n\n", read.files,
                  read.lines, d.recognised,
                  read.cut_lines ? fmt::format(", {} over-long line(s) cut", read.cut_lines) : "");
  for (std::size_t i = 0; i < d.causes.size() && i < 5; ++i) {
    CauseText(d.causes[i], i + 1, &out);
    out += "\n";
  }
  if (d.named() && d.causes.size() > 1 &&
      d.causes[0].confidence - d.causes[1].confidence < kClose) {
    out += fmt::format("{} and {} are close; what decides: {} / {}\n\n", d.causes[0].category,
                       d.causes[1].category, d.causes[0].decide, d.causes[1].decide);
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
    out += "\nrules fired:\n";
    if (d.fired.empty()) out += "  none\n";
    for (const Firing& f : d.fired) {
      out += fmt::format("  {} -> {} ({:.2f})\n", f.rule, f.category, f.confidence);
      for (const auto& [name, lines] : f.conditions) {
        out += fmt::format("    {}:", name);
        for (const EvidenceLine& e : lines) out += fmt::format(" {}:{}", e.file, e.line);
        out += "\n";
      }
    }
  }
  return out;
}

}  // namespace sl::diagnose
