#pragma once
// `safe-launch watch`: a strict JSON scanner for the one file it parses on every node every 2 s
// (live.json). It drives a SAX handler with nlohmann's method names and accepts and rejects
// what nlohmann::json::sax_parse does (RFC 8259; UTF-8 checked inside strings; \u escapes with
// their surrogate pairs; a number that overflows a double rejected; a leading UTF-8 BOM
// skipped; nothing but white space after the value, up to a NUL byte), calling the handler in the
// same order, so a handler written for nlohmann sees the same events. About five times faster than
// nlohmann's lexer on live.json (no token copy, no strtod per number): at 1024 nodes that parse was
// a fifth of the watcher's CPU. Iterative: a hostile file nested 256 Ki deep needs no stack. Every
// number is handed over as number_float (the handler gets the value as a double).
#include <locale.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace sl::watch {
namespace json_scan {

inline bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline bool Hex4(std::string_view t, std::size_t* i, unsigned* out) {
  if (*i + 4 > t.size()) return false;
  unsigned v = 0;
  for (int k = 0; k < 4; ++k) {
    const char c = t[(*i)++];
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v |= static_cast<unsigned>(c - 'A' + 10);
    } else {
      return false;
    }
  }
  *out = v;
  return true;
}

inline void PutUtf8(unsigned cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// An escape after its backslash (t[*i] is the character after it).
inline bool Escape(std::string_view t, std::size_t* i, std::string* out) {
  if (*i >= t.size()) return false;
  const char c = t[(*i)++];
  switch (c) {
    case '"':
    case '\\':
    case '/':
      out->push_back(c);
      return true;
    case 'b':
      out->push_back('\b');
      return true;
    case 'f':
      out->push_back('\f');
      return true;
    case 'n':
      out->push_back('\n');
      return true;
    case 'r':
      out->push_back('\r');
      return true;
    case 't':
      out->push_back('\t');
      return true;
    case 'u':
      break;
    default:
      return false;
  }
  unsigned cp = 0;
  if (!Hex4(t, i, &cp)) return false;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate alone
  if (cp >= 0xD800 && cp <= 0xDBFF) {              // must be followed by its low half
    unsigned lo = 0;
    if (*i + 2 > t.size() || t[*i] != '\\' || t[*i + 1] != 'u') return false;
    *i += 2;
    if (!Hex4(t, i, &lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  PutUtf8(cp, out);
  return true;
}

// Bytes 2..4 of a UTF-8 sequence led by `lead` (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF); false when they are not.
inline bool Utf8Tail(std::string_view t, std::size_t* i, unsigned char lead) {
  int more = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    more = 1;
  } else if (lead == 0xE0) {
    more = 2, lo = 0xA0;
  } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
    more = 2;
  } else if (lead == 0xED) {
    more = 2, hi = 0x9F;
  } else if (lead == 0xF0) {
    more = 3, lo = 0x90;
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    more = 3;
  } else if (lead == 0xF4) {
    more = 3, hi = 0x8F;
  } else {
    return false;
  }
  for (int k = 0; k < more; ++k, lo = 0x80, hi = 0xBF) {
    if (*i >= t.size()) return false;
    const auto b = static_cast<unsigned char>(t[*i]);
    if (b < lo || b > hi) return false;
    ++*i;
  }
  return true;
}

// A string whose opening quote is t[*i - 1], decoded into `out`; *i ends after its closing
// quote.
inline bool String(std::string_view t, std::size_t* i, std::string* out) {
  out->clear();
  while (*i < t.size()) {
    const std::size_t from = *i;
    while (*i < t.size()) {  // the plain ASCII run, copied at once
      const auto c = static_cast<unsigned char>(t[*i]);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++*i;
    }
    out->append(t.data() + from, *i - from);
    if (*i >= t.size()) return false;
    const auto c = static_cast<unsigned char>(t[(*i)++]);
    if (c == '"') return true;
    if (c == '\\') {
      if (!Escape(t, i, out)) return false;
    } else if (c < 0x20) {
      return false;
    } else {
      const std::size_t lead = *i - 1;
      if (!Utf8Tail(t, i, c)) return false;
      out->append(t.data() + lead, *i - lead);
    }
  }
  return false;
}

inline bool Digit(std::string_view t, std::size_t i) {
  return i < t.size() && t[i] >= '0' && t[i] <= '9';
}

// A number at t[*i] (a '-' or a digit); false when it is malformed or overflows a double.
inline bool Number(std::string_view t, std::size_t* i, double* out) {
  const std::size_t from = *i;
  if (t[*i] == '-') ++*i;
  if (!Digit(t, *i)) return false;
  if (t[*i] == '0') {
    ++*i;
  } else {
    while (Digit(t, *i)) ++*i;
  }
  bool integer = true;  // nlohmann reads an integer as one: "-0" is 0, not -0.0
  if (*i < t.size() && t[*i] == '.') {
    integer = false;
    ++*i;
    if (!Digit(t, *i)) return false;
    while (Digit(t, *i)) ++*i;
  }
  if (*i < t.size() && (t[*i] == 'e' || t[*i] == 'E')) {
    integer = false;
    ++*i;
    if (*i < t.size() && (t[*i] == '+' || t[*i] == '-')) ++*i;
    if (!Digit(t, *i)) return false;
    while (Digit(t, *i)) ++*i;
  }
  const char* first = t.data() + from;
  const char* last = t.data() + *i;
  auto [end, ec] = std::from_chars(first, last, *out);
  if (ec == std::errc::result_out_of_range) {
    // Too small for a double reads as strtod reads it (0 or the nearest), too large is an error.
    static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", locale_t{});
    const std::string text(first, last);
    *out =
        c_locale ? ::strtod_l(text.c_str(), nullptr, c_locale) : std::strtod(text.c_str(), nullptr);
  } else if (ec != std::errc() || end != last) {
    return false;
  }
  if (integer && *out == 0) *out = 0;
  return std::isfinite(*out);
}

inline bool Literal(std::string_view t, std::size_t* i, std::string_view word) {
  if (t.substr(*i, word.size()) != word) return false;
  *i += word.size();
  return true;
}

inline void SkipWs(std::string_view t, std::size_t* i) {
  while (*i < t.size() && IsWs(t[*i])) ++*i;
}

// An object's key and its colon, from t[*i] on (white space first), handed to sax->key.
template <class Sax>
bool Key(std::string_view t, std::size_t* i, std::string* s, Sax* sax) {
  SkipWs(t, i);
  if (*i >= t.size() || t[*i] != '"') return false;
  ++*i;
  if (!String(t, i, s) || !sax->key(*s)) return false;
  SkipWs(t, i);
  if (*i >= t.size() || t[*i] != ':') return false;
  ++*i;
  return true;
}

}  // namespace json_scan

/// Scans `text` as one JSON value, calling `sax` as nlohmann::json::sax_parse would; false when
/// the text is not JSON or a handler call returned false.
template <class Sax>
bool ScanJson(std::string_view t, Sax* sax) {
  using namespace json_scan;
  std::size_t i = t.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  std::vector<char> open;  // '{' or '[' per enclosing container
  std::string s;
  // A value is due: a ']' closes an array only when nothing was in it yet (`empty_ok`).
  bool want_value = true, empty_ok = false;
  for (;;) {
    SkipWs(t, &i);
    if (want_value) {
      if (i >= t.size()) return false;
      const char c = t[i];
      if (empty_ok && c == ']') {
        ++i;
        open.pop_back();
        if (!sax->end_array()) return false;
      } else if (c == '{') {
        ++i;
        if (!sax->start_object(static_cast<std::size_t>(-1))) return false;
        SkipWs(t, &i);
        if (i < t.size() && t[i] == '}') {
          ++i;
          if (!sax->end_object()) return false;
        } else {
          open.push_back('{');
          if (!Key(t, &i, &s, sax)) return false;
          empty_ok = false;
          continue;
        }
      } else if (c == '[') {
        ++i;
        if (!sax->start_array(static_cast<std::size_t>(-1))) return false;
        open.push_back('[');
        empty_ok = true;
        continue;
      } else if (c == '"') {
        ++i;
        if (!String(t, &i, &s) || !sax->string(s)) return false;
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        double v = 0;
        s.clear();
        if (!Number(t, &i, &v) || !sax->number_float(v, s)) return false;
      } else if (c == 't' || c == 'f') {
        const bool v = c == 't';
        if (!Literal(t, &i, v ? "true" : "false") || !sax->boolean(v)) return false;
      } else if (c == 'n') {
        if (!Literal(t, &i, "null") || !sax->null()) return false;
      } else {
        return false;
      }
      want_value = false;
      continue;
    }
    // After a value: the end, a comma, or the close of its container.
    // nlohmann's lexer reads a NUL byte as the end of the input, whatever follows it.
    if (open.empty()) return i == t.size() || t[i] == '\0';
    if (i >= t.size()) return false;
    const char c = t[i++];
    if (c == ',') {
      want_value = true;
      empty_ok = false;
      if (open.back() == '{' && !Key(t, &i, &s, sax)) return false;
    } else if (c == '}' && open.back() == '{') {
      open.pop_back();
      if (!sax->end_object()) return false;
    } else if (c == ']' && open.back() == '[') {
      open.pop_back();
      if (!sax->end_array()) return false;
    } else {
      return false;
    }
  }
}

}  // namespace sl::watch
