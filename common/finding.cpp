#include "common/finding.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace sl {

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kWarn:
      return "warn";
    case Outcome::kFail:
      return "fail";
    case Outcome::kSkip:
      return "skip";
    case Outcome::kError:
      return "error";
  }
  return "error";
}

bool ParseOutcome(std::string_view name, Outcome* out) {
  for (Outcome o :
       {Outcome::kPass, Outcome::kWarn, Outcome::kFail, Outcome::kSkip, Outcome::kError}) {
    if (OutcomeName(o) == name) {
      *out = o;
      return true;
    }
  }
  return false;
}

int Severity(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return 0;
    case Outcome::kSkip:
      return 1;
    case Outcome::kWarn:
      return 2;
    case Outcome::kError:
      return 3;
    case Outcome::kFail:
      return 4;
  }
  return 3;
}

Finding MakeFinding(std::string check_id, std::string entity, Outcome outcome, std::string message,
                    std::string next_step) {
  Finding f;
  f.check_id = std::move(check_id);
  f.entity = std::move(entity);
  f.outcome = outcome;
  f.message = std::move(message);
  f.next_step = std::move(next_step);
  return f;
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = nlohmann::json{{"check", f.check_id},  {"code", f.code},
                     {"entity", f.entity},   {"outcome", OutcomeName(f.outcome)},
                     {"message", f.message}, {"next_step", f.next_step},
                     {"waived", f.waived}};
  auto ev = nlohmann::json::array();
  for (const auto& e : f.evidence) ev.push_back({{"source", e.source}, {"value", e.value}});
  j["evidence"] = std::move(ev);
}

void from_json(const nlohmann::json& j, Finding& f) {
  f.check_id = j.value("check", "");
  f.code = j.value("code", "");
  f.entity = j.value("entity", "");
  if (!ParseOutcome(j.value("outcome", "error"), &f.outcome)) f.outcome = Outcome::kError;
  f.message = j.value("message", "");
  f.next_step = j.value("next_step", "");
  f.waived = j.value("waived", false);
  f.evidence.clear();
  if (j.contains("evidence") && j["evidence"].is_array()) {
    for (const auto& e : j["evidence"]) {
      f.evidence.push_back({e.value("source", ""), e.value("value", "")});
    }
  }
}

Outcome Worst(const std::vector<Finding>& findings) {
  Outcome worst = Outcome::kPass;
  for (const auto& f : findings) {
    if (!f.waived && Severity(f.outcome) > Severity(worst)) worst = f.outcome;
  }
  return worst;
}

bool IdSelects(std::string_view pattern, std::string_view id) {
  if (pattern == id) return true;
  std::string prefix(pattern);
  if (!EndsWith(prefix, ".")) prefix += ".";
  return StartsWith(id, prefix);
}

}  // namespace sl
