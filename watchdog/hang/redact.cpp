#include "watchdog/hang/redact.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <optional>
#include <utility>

#include "common/json_text.h"
#include "common/strings.h"

namespace sl::hang {

namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// The name classes (one row per class; redact.h lists them): a '_'/'-'/'.'-separated part of a
// name is secret when it ends with, contains or is one of these words.
enum class Match { kSuffix, kContains, kExact };
struct NameClass {
  std::string_view word;
  Match how;
};
constexpr NameClass kNameClasses[] = {
    {"TOKEN", Match::kSuffix},         // HF_TOKEN, GITLABTOKEN; not TOKENIZERS_, --max-tokens
    {"SECRET", Match::kContains},      // AWS_SECRET_ACCESS_KEY, CLIENT_SECRETS
    {"PASS", Match::kSuffix},          // SSHPASS, DB_PASS, PGPASS
    {"PASSWORD", Match::kContains},    // DB_PASSWORD, PASSWORDFILE
    {"PASSWD", Match::kContains},      // MYSQL_PASSWD
    {"PASSPHRASE", Match::kContains},  // GPG_PASSPHRASE
    {"KEY", Match::kSuffix},           // WANDB_API_KEY, APIKEY, --api-key
    {"CRED", Match::kContains},        // *_CREDS, *_CREDENTIALS, CREDFILE
    {"AUTH", Match::kContains},        // AUTH, OAUTH_, AUTHORIZATION, BASICAUTH; not AUTHOR
    {"PAT", Match::kExact},            // GH_PAT, GITLAB_PAT; not PATH
    {"COOKIE", Match::kContains},      // SESSION_COOKIE
};
// Words that hold a class's word without being a secret.
constexpr std::string_view kNotSecret[] = {"BYPASS", "COMPASS", "AUTHOR", "AUTHORS"};

bool EndsWithWord(std::string_view part) {
  for (std::string_view w : kNotSecret) {
    if (part == w) return false;
  }
  for (const NameClass& c : kNameClasses) {
    switch (c.how) {
      case Match::kSuffix:
        if (EndsWith(part, c.word)) return true;
        break;
      case Match::kContains:
        if (part.find(c.word) != std::string_view::npos) return true;
        break;
      case Match::kExact:
        if (part == c.word) return true;
        break;
    }
  }
  return false;
}

// End of a value starting at out[p]. Quoted: at the closing quote (a backslash escapes the next
// character, as in JSON and shell double quotes) or the end of the line. Unquoted: at
// whitespace, a quote, ',', ';', a backslash (JSON's \" inside a string) or a closing brace.
std::size_t ValueEnd(std::string_view out, std::size_t p, char quote) {
  const std::size_t n = out.size();
  if (quote) {
    while (p < n && out[p] != quote && out[p] != '\n') p += (out[p] == '\\' && p + 1 < n) ? 2 : 1;
    return std::min(p, n);
  }
  while (p < n && !std::isspace(static_cast<unsigned char>(out[p])) &&
         !std::strchr("\"',;\\}]", out[p]) && out[p] != '\0')
    ++p;
  return p;
}

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// HTTP authentication schemes: after "Authorization: Bearer" the secret is the next word.
bool IsAuthScheme(std::string_view word) {
  for (std::string_view s : {"Bearer", "Basic", "Token", "Digest", "Bot", "ApiKey"}) {
    if (IEquals(word, s)) return true;
  }
  return false;
}

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Characters of a bearer token or an API key: base64url, base64 and JWT's '.'.
bool IsTokenChar(char c) {
  return IsAlnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' ||
         c == '=';
}

// Well-known credential shapes: a fixed prefix and a body of at least `min_body` characters
// from `body`. The body minimum keeps identifiers (hf_hub_download, sk-learn) out.
struct TokenShape {
  std::string_view prefix;
  std::size_t min_body;
  bool (*body)(char);
  std::size_t max_body = 0;  ///< 0: any length
};
bool AlnumBody(char c) { return IsAlnum(c); }
bool UpperDigitBody(char c) {
  return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
}
bool DashBody(char c) { return IsAlnum(c) || c == '-' || c == '_'; }
constexpr TokenShape kTokenShapes[] = {
    {"ghp_", 20, AlnumBody},
    {"gho_", 20, AlnumBody},
    {"ghu_", 20, AlnumBody},
    {"ghs_", 20, AlnumBody},
    {"ghr_", 20, AlnumBody},
    {"github_pat_", 20, DashBody},
    {"glpat-", 20, DashBody},
    {"hf_", 20, AlnumBody},
    {"sk-", 20, DashBody},
    {"xoxa-", 10, DashBody},
    {"xoxb-", 10, DashBody},
    {"xoxp-", 10, DashBody},
    {"xoxr-", 10, DashBody},
    {"xoxs-", 10, DashBody},
    {"xoxe-", 10, DashBody},
    {"AKIA", 16, UpperDigitBody, 16},
    {"ASIA", 16, UpperDigitBody, 16},
    {"sk_live_", 16, AlnumBody},  // Stripe secret and restricted keys
    {"sk_test_", 16, AlnumBody},
    {"rk_live_", 16, AlnumBody},
    {"rk_test_", 16, AlnumBody},
    {"whsec_", 16, AlnumBody},
    {"npm_", 30, AlnumBody},
    {"pypi-", 50, DashBody},
};

bool Base64UrlChar(char c) { return IsAlnum(c) || c == '-' || c == '_'; }

// A JWT: three base64url parts joined by '.', the first two JSON objects ("eyJ" is base64 of
// '{"'); the signature may be empty (alg none). Its length at text[i], 0 when none.
std::size_t JwtAt(std::string_view text, std::size_t i) {
  if (i >= text.size() || text[i] != 'e') return 0;
  std::size_t e = i;
  for (int part = 0; part < 3; ++part) {
    const std::size_t b = e;
    if (part < 2 && text.compare(e, 3, "eyJ") != 0) return 0;
    while (e < text.size() && Base64UrlChar(text[e])) ++e;
    if (part < 2 && e - b < 10) return 0;
    if (part < 2) {
      if (e >= text.size() || text[e] != '.') return 0;
      ++e;
    }
  }
  return e - i;
}

// The first bytes of the shapes' prefixes: most positions of a text start none, and are passed
// over at one table look-up instead of a compare per shape.
const std::array<bool, 256>& ShapeFirstBytes() {
  static const std::array<bool, 256> first = [] {
    std::array<bool, 256> f{};
    for (const TokenShape& t : kTokenShapes) f[static_cast<unsigned char>(t.prefix[0])] = true;
    return f;
  }();
  return first;
}

// Length of a token shape starting at text[i] (at a word boundary), 0 when none.
std::size_t ShapeAt(std::string_view text, std::size_t i) {
  if (i >= text.size() || !ShapeFirstBytes()[static_cast<unsigned char>(text[i])]) return 0;
  for (const TokenShape& t : kTokenShapes) {
    if (text.compare(i, t.prefix.size(), t.prefix) != 0) continue;
    std::size_t e = i + t.prefix.size();
    while (e < text.size() && t.body(text[e])) ++e;
    // AWS key ids are exactly 16 after the prefix; others may be longer.
    const std::size_t body = e - i - t.prefix.size();
    if (body < t.min_body || (t.max_body && body > t.max_body)) continue;
    if (e < text.size() && (IsAlnum(text[e]) || text[e] == '_')) continue;  // inside a word
    return e - i;
  }
  return 0;
}

// RFC 3986 userinfo characters other than ':' (unreserved, pct-encoded, sub-delims).
bool IsUserChar(char c) {
  return IsAlnum(c) || (c != '\0' && std::strchr("-._~%!$&()*+,;=", c) != nullptr);
}

// scheme://user:password@host: the length of "password" at text[i] (just after "user:"), 0 when
// text[i..] is not followed by '@' before the end of the authority.
std::size_t UserInfoPasswordAt(std::string_view text, std::size_t i) {
  std::size_t e = i;
  while (e < text.size()) {
    char c = text[e];
    if (c == '@') return e - i;
    if (c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '<' || c == '>' ||
        c == '\\' || std::isspace(static_cast<unsigned char>(c)) || c == '\0') {
      return 0;
    }
    ++e;
  }
  return 0;
}

// Rule 4, on text the other rules have seen: token shapes (ghp_..., hf_..., sk-..., xoxb-...,
// AKIA...), "Bearer TOKEN" anywhere, and the password in URL user-info.
std::string RedactShapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const bool boundary = i == 0 || !(IsAlnum(text[i - 1]) || text[i - 1] == '_' ||
                                      text[i - 1] == '-' || text[i - 1] == '.');
    if (boundary) {
      if (std::size_t len = std::max(ShapeAt(text, i), JwtAt(text, i))) {
        out.append(kRedacted);
        i += len;
        continue;
      }
      // "Bearer TOKEN" (any case), also without a secret-named header before it.
      if (n - i > 7 && IEquals(text.substr(i, 6), "bearer") && text[i + 6] == ' ') {
        std::size_t p = i + 6;
        while (p < n && text[p] == ' ') ++p;
        std::size_t e = p;
        while (e < n && IsTokenChar(text[e])) ++e;
        if (e - p >= 8 && text.compare(p, kRedacted.size(), kRedacted) != 0) {
          out.append(text, i, p - i);
          out.append(kRedacted);
          i = e;
          continue;
        }
      }
    }
    if (text[i] == ':' && text.compare(i, 3, "://") == 0) {
      // user:password@ right after the scheme: keep the user, drop the password.
      std::size_t colon = i + 3;
      while (colon < n && IsUserChar(text[colon])) ++colon;
      // scheme://KEY@host (a DSN, a token as the user): the user-info alone is the secret.
      if (colon < n && text[colon] == '@' && colon > i + 3 &&
          text.compare(i + 3, kRedacted.size(), kRedacted) != 0) {
        out.append("://");
        out.append(kRedacted);
        i = colon;
        continue;
      }
      if (colon < n && text[colon] == ':') {
        if (std::size_t len = UserInfoPasswordAt(text, colon + 1); len > 0) {
          out.append(text, i, colon + 1 - i);
          out.append(kRedacted);
          i = colon + 1 + len;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

// Trivial values that secret-named variables often hold and that are not secrets themselves.
bool IsTrivialValue(std::string_view v) {
  return v.size() < 4 || v == "true" || v == "false" || v == "none" || v == "None" || v == "null";
}

// The end of a JSON number (or number-like word) starting at text[p].
std::size_t JsonNumberEnd(std::string_view text, std::size_t p) {
  while (p < text.size() &&
         (IsAlnum(text[p]) || text[p] == '-' || text[p] == '+' || text[p] == '.'))
    ++p;
  return p;
}

// The part of the text after a secret-looking name to replace: [begin, end).
struct Span {
  std::size_t begin = 0, end = 0;
  bool as_json_string = false;  ///< a JSON number: the replacement gets quotes
};

// `p` is just past "NAME=", "NAME: " or "--flag " (and the opening `quote`, if any); `json` when
// the separator was ':', `json_key` when NAME itself was in double quotes.
std::optional<Span> ValueToRedact(std::string_view out, std::size_t p, bool json, bool json_key,
                                  char quote) {
  const std::size_t n = out.size();
  if (json && json_key && !quote) {
    // A number becomes the string "<redacted>"; an object or array is left to its own keys.
    if (p >= n || out[p] == '{' || out[p] == '[' || out.compare(p, 4, "true") == 0 ||
        out.compare(p, 5, "false") == 0 || out.compare(p, 4, "null") == 0) {
      return std::nullopt;
    }
    const std::size_t e = JsonNumberEnd(out, p);
    if (e == p) return std::nullopt;
    return Span{p, e, true};
  }
  std::size_t e = ValueEnd(out, p, quote);
  if (e == p) return std::nullopt;
  std::string_view value = out.substr(p, e - p);
  if (!quote && IsAuthScheme(value)) {
    // "Authorization: Bearer T": keep the scheme, the secret is the next word.
    std::size_t q = e;
    while (q < n && out[q] == ' ') ++q;
    std::size_t qe = ValueEnd(out, q, 0);
    if (qe == q || out.substr(q, qe - q) == kRedacted) return std::nullopt;
    return Span{q, qe};
  }
  if (quote) {
    // "Authorization": "Bearer T": the same inside quotes.
    auto sp = value.find(' ');
    if (sp != std::string_view::npos && IsAuthScheme(value.substr(0, sp))) {
      std::size_t q = p + sp;
      while (q < e && out[q] == ' ') ++q;
      if (q == e) return std::nullopt;
      p = q;
      value = out.substr(p, e - p);
    }
  }
  if (value == kRedacted ||
      (json && !quote && (value == "true" || value == "false" || value == "null"))) {
    return std::nullopt;
  }
  return Span{p, e};
}

// The backslash escape (JSON's \" \\ \n \uXXXX, a shell's \") that covers text[i], as
// [begin, end); [i, i + 1) when text[i] is in none. A backslash escapes when it is the first,
// third, ... of its run.
std::pair<std::size_t, std::size_t> EscapeUnitAt(std::string_view text, std::size_t i) {
  for (std::size_t k = 0; k <= 5 && k <= i; ++k) {
    const std::size_t j = i - k;
    if (text[j] != '\\') continue;
    std::size_t run_start = j;
    while (run_start > 0 && text[run_start - 1] == '\\') --run_start;
    if ((j - run_start) % 2 != 0) continue;  // this backslash is itself escaped
    std::size_t end = std::min(j + 2, text.size());
    if (j + 1 < text.size() && text[j + 1] == 'u') {
      std::size_t h = j + 2;
      while (h < text.size() && h < j + 6 && std::isxdigit(static_cast<unsigned char>(text[h])))
        ++h;
      end = h;
    }
    if (i < end) return {j, end};
  }
  return {i, i + 1};
}

// Every occurrence of a learned secret becomes the marker. A match never splits an escape
// sequence: one that starts or ends inside one takes the whole sequence, so JSON text stays valid
// JSON (a secret `"Basic` matched inside `\"Basic` would leave `\<redacted>`).
void ReplaceSecret(std::string& out, std::string_view secret) {
  if (secret.empty()) return;
  std::size_t pos = 0;
  while ((pos = out.find(secret, pos)) != std::string::npos) {
    const std::size_t begin = EscapeUnitAt(out, pos).first;
    const std::size_t end = EscapeUnitAt(out, pos + secret.size() - 1).second;
    out.replace(begin, end - begin, kRedacted);
    pos = begin + kRedacted.size();
  }
}

// PEM private keys: the body between "-----BEGIN ... PRIVATE KEY-----" and its "-----END" line
// (to the end of the text when the END is cut off) becomes one "<redacted>" line.
std::string RedactPem(std::string_view text) {
  static constexpr std::string_view kBegin = "-----BEGIN ";
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t b = text.find(kBegin, i);
    if (b == std::string_view::npos) break;
    std::size_t head_end = text.find("-----", b + kBegin.size());
    if (head_end == std::string_view::npos) break;
    std::string_view label = text.substr(b + kBegin.size(), head_end - b - kBegin.size());
    head_end += 5;
    if (label.find("PRIVATE KEY") == std::string_view::npos || label.find('\n') != label.npos) {
      out.append(text, i, head_end - i);
      i = head_end;
      continue;
    }
    out.append(text, i, head_end - i);
    const std::size_t end = text.find("-----END", head_end);
    out.append("\n");
    out.append(kRedacted);
    out.append("\n");
    i = end == std::string_view::npos ? text.size() : end;
  }
  out.append(text, std::min(i, text.size()));
  return out;
}

// netrc's "machine H login U password P" (and "passwd"): a keyword, a space, the secret.
bool IsNetrcKeyword(std::string_view name, std::string_view line_before) {
  return (name == "password" || name == "passwd") &&
         (line_before.find("machine ") != std::string_view::npos ||
          line_before.find("login ") != std::string_view::npos ||
          line_before.find("default") != std::string_view::npos);
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
  const std::vector<std::string> parts = Split(upper, '_');
  for (const std::string& part : parts) {
    if (EndsWithWord(part)) return true;
  }
  // DB_PWD, MYSQL_PWD; but PWD alone is the working directory.
  return parts.size() > 1 && parts.back() == "PWD";
}

std::span<const RedactionPattern> RedactionPatterns() {
  static constexpr RedactionPattern kPatterns[] = {
      {"name_token", "HF_TOKEN=hf_value_0123", "hf_value_0123"},
      {"name_secret", "CLIENT_SECRETS=s3cr3t-value", "s3cr3t-value"},
      {"name_pass_suffix", "SSHPASS=hunter2hunter2", "hunter2hunter2"},
      {"name_password", "DB_PASSWORD: pw-value-1", "pw-value-1"},
      {"name_key", "WANDB_API_KEY=0123456789abcdef", "0123456789abcdef"},
      {"name_cred", "GCP_CREDS=cred-value-77", "cred-value-77"},
      {"name_auth", "OAUTH_CLIENT=auth-value-1", "auth-value-1"},
      {"name_pat", "GH_PAT=patvalue1234", "patvalue1234"},
      {"name_pwd", "MYSQL_PWD=abcd1234", "abcd1234"},
      {"spaced_assignment", "aws_secret_access_key = wJalrXUtnFEMIK7MDENG", "wJalrXUtnFEMIK7MDENG"},
      {"json_key", R"({"api_key": "json-secret-1"})", "json-secret-1"},
      {"flag", "train.py --api-key flag-secret-1", "flag-secret-1"},
      {"auth_scheme", "Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"},
      {"url_password", "https://alice:url-pw-123@git.example.com/r", "url-pw-123"},
      {"url_user_key", "https://0123456789abcdef@o1.ingest.sentry.io/5", "0123456789abcdef"},
      {"token_prefix", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghij"},
      {"stripe_key", "charge with sk_live_abcdefghijklmnop1234", "sk_live_abcdefghijklmnop"},
      {"jwt",
       "cookie "
       "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_"
       "XgL0n3I9PlFUP0THsR8U",
       "dozjgNryP4J3jVmNHl0w5N"},
      {"pem_private_key",
       "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1pemBody\nSecondLineOfKey\n"
       "-----END RSA PRIVATE KEY-----\n",
       "MIIEowIBAAKCAQEAx1pemBody"},
      {"netrc_password", "machine api.example.com login bob password netrc-pw-9", "netrc-pw-9"},
  };
  return kPatterns;
}

Redactor::Redactor(const Environment& env) {
  for (const auto& [name, value] : env) {
    if (IsSecretName(name)) AddSecret(value);
  }
}

void Redactor::AddSecret(std::string_view value) {
  if (IsTrivialValue(value)) return;
  std::lock_guard lock(mu_);
  if (!secrets_.insert(std::string(value)).second) return;
  // The same value as a JSON string holds it (a quote as \", a backslash as \\, a newline as
  // \n): the run directory's JSON files carry argv and environment values escaped.
  std::string escaped = JsonText(nlohmann::json(std::string(value)), -1);
  escaped = escaped.substr(1, escaped.size() - 2);
  if (escaped != value) escaped_secrets_.insert(std::move(escaped));
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
  std::size_t first = text.find_first_not_of(" \t\r\n");
  // nlohmann's lexer takes a NUL byte for the end of its input: `{}` NUL garbage would pass as a
  // document and the garbage, outside any string, would go unredacted.
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[') &&
      text.find('\0') == std::string_view::npos && nlohmann::json::accept(text)) {
    return RedactJsonDocument(text);
  }
  return RedactText(text);
}

// A JSON document, string by string: each string's decoded text through RedactText (re-encoded
// only where it changed), the value of a secret-named key replaced whole (a number becomes the
// string "<redacted>"; an object or an array is left to its own keys; an auth scheme is kept:
// "Bearer <redacted>"). Everything between the strings is copied as it is.
std::string Redactor::RedactJsonDocument(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  const std::size_t n = text.size();
  bool secret_value_next = false;  // just past "SECRET_NAME":
  std::size_t i = 0;
  while (i < n) {
    const char c = text[i];
    if (c == '"') {
      std::size_t e = i + 1;
      while (e < n && text[e] != '"') e += text[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, n);
      const std::string_view token = text.substr(i, e - i);
      // Most strings hold no escape: their text is the token's inside.
      const std::string value = token.find('\\') == std::string_view::npos
                                    ? std::string(token.substr(1, token.size() - 2))
                                    : nlohmann::json::parse(token).get<std::string>();
      std::size_t k = e;
      while (k < n && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
      const bool is_key = k < n && text[k] == ':';
      std::string redacted;
      if (!is_key && secret_value_next && !IsTrivialValue(value) && value != kRedacted) {
        auto sp = value.find(' ');
        redacted = sp != std::string::npos && IsAuthScheme(value.substr(0, sp))
                       ? value.substr(0, sp + 1) + std::string(kRedacted)
                       : std::string(kRedacted);
      } else {
        redacted = RedactText(value);
      }
      out.append(redacted == value ? std::string(token) : JsonText(nlohmann::json(redacted), -1));
      secret_value_next = is_key && IsSecretName(value);
      i = e;
      continue;
    }
    if (secret_value_next && (c == '-' || std::isdigit(static_cast<unsigned char>(c)))) {
      out.append("\"").append(kRedacted).append("\"");
      secret_value_next = false;
      i = JsonNumberEnd(text, i);
      continue;
    }
    if (c != ':' && !std::isspace(static_cast<unsigned char>(c))) secret_value_next = false;
    out += c;
    ++i;
  }
  return out;
}

std::string Redactor::RedactText(std::string_view text) const {
  std::string out = RedactPem(text);
  {
    std::lock_guard lock(mu_);
    for (const std::string& s : secrets_) ReplaceSecret(out, s);
    for (const std::string& s : escaped_secrets_) ReplaceSecret(out, s);
  }
  // Rules 2 and 3: scan for NAME=VALUE, "NAME": "VALUE", --flag VALUE with a secret-looking name.
  std::string result;
  result.reserve(out.size());
  std::size_t i = 0;
  const std::size_t n = out.size();
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
    // "NAME": VALUE in JSON text: the replacement must keep the document valid.
    const bool json_key = start > 0 && out[start - 1] == '"' && p < n && out[p] == '"';
    // "NAME": "VALUE" (JSON) -- skip the closing quote, colon and spaces.
    if (p < n && (out[p] == '"' || out[p] == '\'')) ++p;
    // "key = value" (ini files, ~/.aws/credentials): spaces around '='.
    bool spaced = false;
    if (p < n && out[p] == ' ') {
      std::size_t q = p;
      while (q < n && (out[q] == ' ' || out[q] == '\t')) ++q;
      if (q < n && out[q] == '=' && (q + 1 >= n || out[q + 1] != '=')) {
        p = q;
        spaced = true;
      }
    }
    bool json = p < n && out[p] == ':';
    bool assign = p < n && out[p] == '=';
    bool flag = StartsWith(name, "-") && p < n && (out[p] == ' ' || out[p] == '\0');
    const std::size_t line_start =
        out.rfind('\n', start) == std::string::npos ? 0 : out.rfind('\n', start) + 1;
    if (!json && !assign && !flag && p < n && out[p] == ' ' &&
        IsNetrcKeyword(name, std::string_view(out).substr(line_start, start - line_start))) {
      flag = true;
    }
    if (!json && !assign && !flag) continue;
    ++p;
    while ((json || spaced || flag) && p < n && (out[p] == ' ' || out[p] == '\t')) ++p;
    char quote = 0;
    if (p < n && (out[p] == '"' || out[p] == '\'')) quote = out[p++];
    auto r = ValueToRedact(out, p, json, json_key, quote);
    if (!r) continue;
    result.append(out, i, r->begin - i);
    if (r->as_json_string) result += '"';
    result.append(kRedacted);
    if (r->as_json_string) result += '"';
    i = r->end;
  }
  return RedactShapes(result);
}

}  // namespace sl::hang
