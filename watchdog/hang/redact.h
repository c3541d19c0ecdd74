#pragma once
// Secrets never leave the node: every byte safe-launch writes about the job (bundle, status.json,
// output tails, manifests) passes through a Redactor. Four rules, applied in order: (1) every
// known secret value (values of secret-named variables in the job's environment, values given
// after secret-named flags) is replaced wherever it occurs; (2) NAME=VALUE, NAME: VALUE and
// "NAME": "VALUE" with a secret-looking NAME, where an HTTP auth scheme as VALUE ("Authorization:
// Bearer T") keeps the scheme and loses the next word; (3) --secret-flag VALUE and
// --secret-flag=VALUE; (4) shapes that are secrets without a name: well-known token prefixes
// (ghp_/gho_/ghu_/ghs_/ghr_/github_pat_, glpat-, hf_, sk-, xox[abprse]-, AKIA/ASIA key ids), a
// word after "Bearer ", and the password of URL user-info (scheme://user:PASSWORD@host).
// The replacement is "<redacted>". Matching is by class, not by a list of known names: the
// pattern table (RedactionPatterns) holds one row per class with an example, and each row has
// its test: secret names (parts with TOKEN/KEY suffix, SECRET/PASSWORD/CRED/AUTH/COOKIE inside,
// a PASS suffix, PAT, a trailing PWD), NAME=VALUE with or without spaces around '=', JSON keys,
// --flags, HTTP auth schemes, URL user-info (scheme://user:PASSWORD@ and scheme://KEY@), token
// prefixes, JWTs, PEM private-key blocks (multi-line), netrc "password P".
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"

namespace sl::hang {

inline constexpr std::string_view kRedacted = "<redacted>";

/// True for names that look like they hold a secret: a '_'/'-'-separated part ends with TOKEN,
/// SECRET, PASSWORD, PASSWD, KEY, CREDENTIAL(S) or is AUTH/AUTHORIZATION/COOKIE/PASS, or the last
/// of several parts is PWD (HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, --api-key, --token,
/// DB_PASS, MYSQL_PWD; not PWD itself, the working directory). Parts rather than raw substrings so
/// that --max-tokens or TOKENIZERS_PARALLELISM are not taken for secrets.
bool IsSecretName(std::string_view name);

/// One class of secret the Redactor matches: a stable id, an example line holding a secret, and
/// the secret itself (which must not survive Redact(example)).
struct RedactionPattern {
  std::string_view id;
  std::string_view example;
  std::string_view secret;
};

/// The table of classes, one row per pattern.
std::span<const RedactionPattern> RedactionPatterns();

class Redactor {
 public:
  Redactor() = default;
  /// Learns the values of secret-named variables in `env`.
  explicit Redactor(const Environment& env);
  /// Adds one value to scrub everywhere (values shorter than 4 bytes are ignored: redacting "1"
  /// would destroy the bundle and such values are not secrets worth the name).
  void AddSecret(std::string_view value);
  /// Learns values after secret-named flags in `argv` ("--api-key X", "--token=X").
  void LearnArgv(const std::vector<std::string>& argv);
  /// The text with every secret replaced. Thread-safe. A whole JSON document (an object or an
  /// array that parses) is redacted string by string, so that it stays valid JSON with the
  /// bytes outside the redacted strings unchanged; any other text as text.
  std::string Redact(std::string_view text) const;
  /// argv with secret values replaced (and learned).
  std::vector<std::string> RedactArgv(const std::vector<std::string>& argv);

 private:
  std::string RedactText(std::string_view text) const;
  std::string RedactJsonDocument(std::string_view text) const;

  mutable std::mutex mu_;
  std::set<std::string, std::greater<>> secrets_;  // longest-first is not needed: exact values
  std::set<std::string, std::greater<>> escaped_secrets_;  // those that JSON escapes, escaped
};

}  // namespace sl::hang
