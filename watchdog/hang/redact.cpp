#include "watchdog/hang/redact.h"

#include <cctype>

#include "common/strings.h"

namespace sl::hang {

namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

bool EndsWithWord(std::string_view part) {
  static constexpr std::string_view kWords[] = {"TOKEN",       "SECRET", "PASSWORD",
                                                "PASSWD",      "KEY",    "CREDENTIAL",
                                                "CREDENTIALS", "APIKEY", "PASSPHRASE"};
  for (auto w : kWords) {
    if (EndsWith(part, w)) return true;
  }
  return part == "AUTH" || part == "AUTHORIZATION" || part == "COOKIE";
}

// Trivial values that secret-named variables often hold and that are not secrets themselves.
bool IsTrivialValue(std::string_view v) {
  return v.size() < 4 || v == "true" || v == "false" || v == "none" || v == "None" || v == "null";
}

}  // namespace

bool IsSecretName(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  if (name.empty()) return false;
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (char& c : upper) {
    if (c == '-' || c == '.') c = '_';
  }
  for (const std::string& part : Split(upper, '_')) {
    if (EndsWithWord(part)) return true;
  }
  return false;
}

Redactor::Redactor(const Environment& env) {
  for (const auto& [name, value] : env) {
    if (IsSecretName(name)) AddSecret(value);
  }
}

void Redactor::AddSecret(std::string_view value) {
  if (IsTrivialValue(value)) return;
  std::lock_guard lock(mu_);
  secrets_.insert(std::string(value));
}

void Redactor::LearnArgv(const std::vector<std::string>& argv) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (!StartsWith(a, "-")) {
      // NAME=VALUE words (env VAR=... cmd, or a shell line).
      auto eq = a.find('=');
      if (eq != std::string_view::npos && eq > 0 && IsSecretName(a.substr(0, eq))) {
        AddSecret(a.substr(eq + 1));
      }
      continue;
    }
    auto eq = a.find('=');
    std::string_view flag = eq == std::string_view::npos ? a : a.substr(0, eq);
    if (!IsSecretName(flag)) continue;
    if (eq != std::string_view::npos) {
      AddSecret(a.substr(eq + 1));
    } else if (i + 1 < argv.size()) {
      AddSecret(argv[i + 1]);
    }
  }
}

std::vector<std::string> Redactor::RedactArgv(const std::vector<std::string>& argv) {
  LearnArgv(argv);
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const auto& a : argv) out.push_back(Redact(a));
  return out;
}

std::string Redactor::Redact(std::string_view text) const {
  std::string out(text);
  {
    std::lock_guard lock(mu_);
    for (const std::string& s : secrets_) {
      std::size_t pos = 0;
      while ((pos = out.find(s, pos)) != std::string::npos) {
        out.replace(pos, s.size(), kRedacted);
        pos += kRedacted.size();
      }
    }
  }
  // Rules 2 and 3: scan for NAME=VALUE, "NAME": "VALUE", --flag VALUE with a secret-looking name.
  std::string result;
  result.reserve(out.size());
  std::size_t i = 0;
  const std::size_t n = out.size();
  auto value_end = [&out, n](std::size_t p, char quote) {
    if (quote) {
      while (p < n && out[p] != quote && out[p] != '\n') ++p;
      return p;
    }
    while (p < n && !std::isspace(static_cast<unsigned char>(out[p])) && out[p] != '\0' &&
           out[p] != '"' && out[p] != '\'' && out[p] != ',' && out[p] != ';')
      ++p;
    return p;
  };
  while (i < n) {
    if (!IsNameChar(out[i]) || (i > 0 && IsNameChar(out[i - 1]))) {
      result += out[i++];
      continue;
    }
    std::size_t start = i;
    while (i < n && IsNameChar(out[i])) ++i;
    std::string_view name(out.data() + start, i - start);
    result.append(name);
    if (!IsSecretName(name) || i >= n) continue;
    std::size_t p = i;
    // "NAME": "VALUE" (JSON) -- skip the closing quote, colon and spaces.
    if (p < n && (out[p] == '"' || out[p] == '\'')) ++p;
    bool json = p < n && out[p] == ':';
    bool assign = p < n && out[p] == '=';
    bool flag = StartsWith(name, "-") && p < n && (out[p] == ' ' || out[p] == '\0');
    if (!json && !assign && !flag) continue;
    ++p;
    while (json && p < n && out[p] == ' ') ++p;
    char quote = 0;
    if (p < n && (out[p] == '"' || out[p] == '\'')) quote = out[p++];
    std::size_t e = value_end(p, quote);
    if (e == p) continue;
    std::string_view value(out.data() + p, e - p);
    if (value == kRedacted ||
        (json && !quote && (value == "true" || value == "false" || value == "null"))) {
      continue;
    }
    result.append(out, i, p - i);
    result.append(kRedacted);
    i = e;
  }
  return result;
}

}  // namespace sl::hang
