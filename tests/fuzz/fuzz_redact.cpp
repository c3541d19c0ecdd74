// libFuzzer target: the Redactor (watchdog/hang/redact.cpp) on arbitrary job output.
// Input: a first line that is a secret to learn, then the text. Properties checked:
//   * a learned secret (alphanumeric, so it cannot span a "<redacted>" marker) never survives
//     outside the markers;
//   * a well-known token shape appended after a space never survives, whatever came before
//     (a rule-2 value that runs into it consumes it whole, never half of it);
//   * argv redaction keeps the argument count;
//   * a JSON document (the text as a string value, and under a secret-looking key) is still
//     valid JSON after redaction (bundle manifests and summaries are redacted as text).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "watchdog/hang/redact.h"

namespace {

std::string WithoutMarkers(std::string s) {
  const std::string_view m = sl::hang::kRedacted;
  for (std::size_t p = 0; (p = s.find(m, p)) != std::string::npos;) s.replace(p, m.size(), "\x01");
  return s;
}

bool Alnum(std::string_view s) {
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nl = in.find('\n');
  std::string_view secret = nl == std::string_view::npos ? std::string_view() : in.substr(0, nl);
  std::string_view text = nl == std::string_view::npos ? in : in.substr(nl + 1);

  sl::hang::Redactor r;
  const bool learned = Alnum(secret) && secret.size() >= 4;
  if (learned) r.AddSecret(secret);
  std::string out = r.Redact(text);
  if (learned && WithoutMarkers(out).find(secret) != std::string::npos) std::abort();

  const std::string token = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
  std::string with_token = r.Redact(std::string(text) + " " + token + " ");
  if (with_token.find(token) != std::string::npos) std::abort();

  std::vector<std::string> argv;
  for (std::size_t p = 0; p <= text.size() && argv.size() < 64;) {
    auto q = text.find(' ', p);
    if (q == std::string_view::npos) q = text.size();
    argv.emplace_back(text.substr(p, q - p));
    p = q + 1;
  }
  if (r.RedactArgv(argv).size() != argv.size()) std::abort();

  nlohmann::json doc = {{"text", std::string(text)},
                        {"API_TOKEN", std::string(text)},
                        {"PASSWORD", static_cast<int>(size)}};
  const std::string dumped = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!nlohmann::json::accept(r.Redact(dumped))) std::abort();
  return 0;
}
