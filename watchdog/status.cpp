#include "watchdog/status.h"

#include "common/json_text.h"
#include "watchdog/run_dir.h"

namespace sl::watchdog {

std::unique_ptr<hang::Redactor> MakeJobRedactor(const Environment& env,
                                                const std::vector<std::string>& argv) {
  auto r = std::make_unique<hang::Redactor>(env);
  r->LearnArgv(argv);
  return r;
}

namespace {

// Every string of the document redacted on its own (not the dumped text: a replacement there
// could cut through JSON's escapes).
void RedactStrings(nlohmann::json& j, const hang::Redactor& redactor) {
  if (j.is_string()) {
    j = redactor.Redact(j.get_ref<const std::string&>());
  } else if (j.is_structured()) {
    for (auto& v : j) RedactStrings(v, redactor);
  }
}

}  // namespace

Status WriteStatusFile(const std::string& run_dir, const nlohmann::json& status,
                       hang::Redactor& redactor) {
  nlohmann::json j = status;
  if (auto it = j.find("command"); it != j.end() && it->is_array()) {
    std::vector<std::string> argv;
    for (const auto& a : *it) {
      if (a.is_string()) argv.push_back(a.get<std::string>());
    }
    // Learns the values after secret flags, so that they go wherever else they appear too.
    *it = redactor.RedactArgv(argv);
  }
  RedactStrings(j, redactor);
  return WriteRunFile(run_dir, "status.json", JsonText(j) + "\n");
}

Status WriteTailFile(const std::string& run_dir, const std::string& name,
                     const std::vector<std::string>& lines, const hang::Redactor& redactor) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return WriteRunFile(run_dir, name, redactor.Redact(text));
}

}  // namespace sl::watchdog
