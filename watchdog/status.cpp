#include "watchdog/status.h"

#include "watchdog/run_dir.h"

namespace sl::watchdog {

std::unique_ptr<hang::Redactor> MakeJobRedactor(const Environment& env,
                                                const std::vector<std::string>& argv) {
  auto r = std::make_unique<hang::Redactor>(env);
  r->LearnArgv(argv);
  return r;
}

Status WriteStatusFile(const std::string& run_dir, const nlohmann::json& status,
                       hang::Redactor& redactor) {
  nlohmann::json j = status;
  if (auto it = j.find("command"); it != j.end() && it->is_array()) {
    std::vector<std::string> argv;
    for (const auto& a : *it) {
      if (a.is_string()) argv.push_back(a.get<std::string>());
    }
    *it = redactor.RedactArgv(argv);
  }
  // The text as a whole too: the command is spread over lines (rule 3's "--flag VALUE" cannot
  // see it) but its values are learned above; the rest (stop reason, events) is scanned here.
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return WriteRunFile(run_dir, "status.json", redactor.Redact(text));
}

Status WriteTailFile(const std::string& run_dir, const std::string& name,
                     const std::vector<std::string>& lines, const hang::Redactor& redactor) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return WriteRunFile(run_dir, name, redactor.Redact(text));
}

}  // namespace sl::watchdog
