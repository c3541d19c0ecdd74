#include "common/parse/limits.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"

namespace sl {
namespace {

std::string LineWhere(int line) { return "line " + std::to_string(line); }

Result<std::uint64_t> ParseLimitValue(std::string_view v) {
  if (v == "unlimited") return kUnlimited;
  return ParseUint(v, "limit");
}

}  // namespace

Result<std::vector<ProcLimit>> ParseProcLimits(std::string_view text) {
  // Columns are fixed by seq_printf("%-25s %-20s %-20s %-10s"), but names contain spaces, so
  // parse from the right: [units] hard soft, the rest is the name.
  std::vector<ProcLimit> out;
  auto lines = SplitLines(text);
  bool header = false;
  int line_no = 0;
  for (const auto& line : lines) {
    ++line_no;
    std::string_view t = Trim(line);
    if (t.empty()) continue;
    if (!header) {
      if (!StartsWith(t, "Limit") || t.find("Soft Limit") == std::string_view::npos) {
        return MakeError(
            "not a limits table: the first line is not the \"Limit  Soft Limit  "
            "Hard Limit  Units\" header",
            LineWhere(line_no));
      }
      header = true;
      continue;
    }
    auto f = Fields(t);
    // Find the soft/hard pair: the last two fields that are numbers or "unlimited".
    auto is_value = [](std::string_view v) {
      return v == "unlimited" || (!v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
               return std::isdigit(static_cast<unsigned char>(c));
             }));
    };
    ProcLimit row;
    row.raw = Printable(t);
    std::size_t n = f.size();
    std::size_t hard_at;
    if (n >= 3 && is_value(f[n - 1]) && is_value(f[n - 2])) {
      hard_at = n - 1;
    } else if (n >= 4 && !is_value(f[n - 1]) && is_value(f[n - 2]) && is_value(f[n - 3])) {
      hard_at = n - 2;
      row.units = std::string(f[n - 1]);
    } else {
      return MakeError("malformed limits row \"" + Printable(t) +
                           "\" (expected: name, soft, hard, units; values are numbers or "
                           "\"unlimited\")",
                       LineWhere(line_no));
    }
    std::string name;
    for (std::size_t i = 0; i + 1 < hard_at; ++i) {
      if (!name.empty()) name.push_back(' ');
      name.append(f[i]);
    }
    if (name.empty()) {
      return MakeError("limits row without a name: \"" + Printable(t) + "\"", LineWhere(line_no));
    }
    row.name = std::move(name);
    auto soft = ParseLimitValue(f[hard_at - 1]);
    auto hard = ParseLimitValue(f[hard_at]);
    if (!soft.ok() || !hard.ok()) {
      return MakeError("limit value out of range in \"" + Printable(t) + "\"", LineWhere(line_no));
    }
    row.soft = *soft;
    row.hard = *hard;
    out.push_back(std::move(row));
  }
  if (!header) return MakeError("empty limits file (no \"Limit\" header)");
  return out;
}

Result<ProcLimit> FindLimit(std::string_view text, std::string_view name) {
  // Rows are parsed one by one so that garbage in an unrelated row does not hide this one, but
  // garbage in the wanted row is an error.
  auto lines = SplitLines(text);
  if (lines.empty() || !StartsWith(Trim(lines[0]), "Limit")) {
    auto all = ParseProcLimits(text);
    if (!all.ok()) return all.error();
  }
  int line_no = 0;
  for (const auto& line : lines) {
    ++line_no;
    std::string_view t = Trim(line);
    if (!StartsWith(t, name)) continue;
    std::string one = "Limit Soft Limit Hard Limit Units\n" + std::string(t) + "\n";
    auto rows = ParseProcLimits(one);
    if (!rows.ok()) {
      Error e = rows.error();
      e.where = LineWhere(line_no);
      return e;
    }
    if (rows->size() == 1 && (*rows)[0].name == name) return (*rows)[0];
    return MakeError("malformed \"" + std::string(name) + "\" row: \"" + Printable(t) + "\"",
                     LineWhere(line_no));
  }
  return MakeError("no \"" + std::string(name) + "\" row");
}

}  // namespace sl
