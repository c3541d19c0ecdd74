#include "diagnose/job_report.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "common/strings.h"
#include "diagnose/flight_recorder/report.h"
#include "diagnose/report.h"

namespace sl::diagnose {

namespace {

std::string Where(const EvidenceLine& e) { return fmt::format("{}:{}", e.file, e.line); }

// Per-node table rows are capped: a node flooding one kernel message says it in a few rows.
constexpr std::size_t kRowsPerNode = 20;

}  // namespace

nlohmann::json JobDiagnosisJson(const DiagnoseRun& run, bool explain) {
  nlohmann::json j = DiagnosisJson(run.diagnosis, run.read, explain);
  if (run.job.nodes.empty()) return j;
  std::map<std::string, nlohmann::json> by_node;
  for (const std::string& n : run.job.nodes) by_node[n] = nlohmann::json::array();
  for (const NodeFact& f : run.job.facts) {
    by_node[f.node].push_back({{"source", f.source},
                               {"rule", f.rule},
                               {"category", f.category},
                               {"port", f.port},
                               {"file", f.evidence.file},
                               {"line", f.evidence.line},
                               {"text", f.evidence.text}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (auto& [node, facts] : by_node) nodes.push_back({{"node", node}, {"facts", facts}});
  j["nodes"] = std::move(nodes);
  j["job_nodes"] = run.job.job_nodes;
  return j;
}

std::vector<NodeRow> NodeRows(const DiagnoseRun& run) {
  std::map<std::string, std::vector<NodeRow>> rows;
  for (const std::string& n : run.job.nodes) rows[n];
  for (const NodeFact& f : run.job.facts) {
    auto& r = rows[f.node];
    if (r.size() < kRowsPerNode) {
      r.push_back({f.node, f.source, f.category, f.port, f.evidence.text, Where(f.evidence)});
    }
  }
  for (const Cause& c : run.diagnosis.causes) {
    for (const EvidenceLine& e : c.evidence) {
      if (e.signature.empty()) continue;  // a claim's citation: already a fact above
      const std::string node = NodeOfFile(run.job.node_of_dir, e.file);
      if (node.empty() || rows[node].size() >= kRowsPerNode) continue;
      rows[node].push_back({node, "log", c.category, "", e.text, Where(e)});
    }
  }
  std::vector<NodeRow> out;
  for (auto& [node, r] : rows) {
    if (r.empty()) r.push_back({node, "", "", "", "nothing found", ""});
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

// Text from the job (node directory names, log lines, paths) as Markdown text: HTML-significant
// characters become entities (a renderer passes raw HTML through: a node named
// "<img src=x onerror=...>" must stay text), a table's '|' is escaped, line breaks become spaces
// and link brackets, backticks and backslashes are backslash-escaped.
namespace {

std::string MdText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      case '|':
      case '[':
      case ']':
      case '`':
      case '\\':
        out += '\\';
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The same inside a code span: literal there, but a backtick would end it and a line break or
// '|' would break the table.
std::string MdCode(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '`') c = '\'';
    if (c == '\n' || c == '\r') c = ' ';
    if (c == '|') c = '/';
  }
  return out;
}

}  // namespace

std::string JobDiagnosisMarkdown(const DiagnoseRun& run) {
  const Diagnosis& d = run.diagnosis;
  const Cause& top = d.causes.front();
  std::string out = "# safe-launch diagnosis\n\n";
  if (top.category != "unknown") {
    out += fmt::format("**{}: {}** (probability {:.2f}, {})",
                       d.decided ? "Verdict" : "Likeliest (symptoms only)", MdCode(top.category),
                       top.probability, ConfidenceLevel(top.probability));
    if (std::string e = EntityText(top.entity); !e.empty()) out += " — " + MdText(e);
    out += fmt::format("\n\n{}\n\n**Fix:** {}\n\n", MdText(top.why), MdText(top.fix));
    if (!d.separate.empty())
      out += "**To tell the first two apart:** " + MdText(d.separate) + "\n\n";
  } else {
    out += fmt::format("**No cause named** (unknown). {}\n\n**To decide:** {}\n\n", MdText(top.why),
                       MdText(top.decide));
  }
  out += "## Differential\n\n";
  for (std::size_t i = 0; i < d.causes.size() && i < 5; ++i) {
    const Cause& c = d.causes[i];
    out += fmt::format("{}. `{}` {:.2f} {}\n", i + 1, MdCode(c.category), c.probability,
                       MdText(EntityText(c.entity)));
    for (const EvidenceLine& e : c.evidence) {
      out += fmt::format("   - {} {}\n", MdText(Where(e)), MdText(e.text.substr(0, 200)));
    }
  }
  if (!run.job.nodes.empty()) {
    out += fmt::format("\n## Per node ({} of the job's {} nodes here)\n\n", run.job.nodes.size(),
                       run.job.job_nodes);
    out += "| node | source | category | port | what | where |\n|---|---|---|---|---|---|\n";
    for (const NodeRow& r : NodeRows(run)) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", MdText(r.node), MdText(r.source),
                         MdText(r.category), MdText(r.port), MdText(r.text.substr(0, 160)),
                         MdText(r.where));
    }
  }
  return out;
}

namespace {

std::string CauseSection(const Cause& c, bool first) {
  using fr::EscapeHtml;
  std::string head = first ? "Verdict: " + c.category : c.category;
  std::string out = fmt::format(
      "<section class=\"{}\"><h{}>{} <small>(probability {:.2f})</small></h{}>",
      first ? "verdict" : "cause", first ? 1 : 2, EscapeHtml(head), c.probability, first ? 1 : 2);
  if (std::string e = EntityText(c.entity); !e.empty()) {
    out += "<p class=\"entity\">" + EscapeHtml(e) + "</p>";
  }
  out += "<p class=\"message\">" + EscapeHtml(c.why) + "</p>";
  if (!c.fix.empty()) out += "<p class=\"fix\">Fix: " + EscapeHtml(c.fix) + "</p>";
  if (c.category == "unknown") out += "<p>To decide: " + EscapeHtml(c.decide) + "</p>";
  out += fmt::format("<details><summary>evidence ({})</summary><ul>", c.evidence.size());
  for (const EvidenceLine& e : c.evidence) {
    out += fmt::format("<li><code>{}</code> {}</li>", EscapeHtml(Where(e)),
                       EscapeHtml(e.text.substr(0, 400)));
  }
  return out + "</ul></details></section>\n";
}

// The differential at a glance: each cause shown, its probability as a bar, and what separates
// the first two.
std::string DifferentialTable(const Diagnosis& d) {
  using fr::EscapeHtml;
  if (d.causes.front().category == "unknown") return "";
  std::string out =
      "<h2>Differential</h2>\n<table class=\"differential\">"
      "<tr><th>#</th><th>cause</th><th>probability</th><th></th></tr>\n";
  for (std::size_t i = 0; i < d.causes.size() && i < 5; ++i) {
    const Cause& c = d.causes[i];
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{:.2f}</td><td><span style=\"display:inline-block;"
        "background:#4a7;height:0.8em;width:{}px\"></span></td></tr>\n",
        i + 1, EscapeHtml(c.category), c.probability,
        static_cast<int>(std::lround(c.probability * 200)));
  }
  out += "</table>\n";
  if (!d.separate.empty()) {
    out += "<p class=\"separate\">To tell " + EscapeHtml(d.causes[0].category) + " from " +
           EscapeHtml(d.causes[1].category) + ": " + EscapeHtml(d.separate) + "</p>\n";
  }
  return out;
}

// What was read, by kind: the log files and their lines, and the Flight Recorder dumps by rank
// and file (a page built from dumps alone must not say "0 file(s) read").
std::string ReadLineHtml(const DiagnoseRun& run, const fr::FrAnalysis* fr) {
  using fr::EscapeHtml;
  std::vector<std::string> parts;
  if (run.read.files > 0 || fr == nullptr || fr->dumps.empty()) {
    std::string logs = fmt::format("{} log file(s), {} line(s), {} recognised", run.read.files,
                                   run.read.lines, run.diagnosis.recognised);
    if (run.read.duplicate_lines > 0)
      logs += fmt::format(" ({} repeated in another file of the same node, counted once)",
                          run.read.duplicate_lines);
    parts.push_back(logs);
  }
  if (fr != nullptr && !fr->dumps.empty()) {
    constexpr std::size_t kNamed = 8;
    std::vector<std::string> named;
    for (std::size_t i = 0; i < fr->dumps.size() && i < kNamed; ++i)
      named.push_back(
          fmt::format("rank {} <code>{}</code>", fr->dumps[i].rank, EscapeHtml(fr->dumps[i].file)));
    std::string more = fr->dumps.size() > kNamed
                           ? fmt::format(" and {} more", fr->dumps.size() - kNamed)
                           : std::string();
    parts.push_back(
        fmt::format("{} Flight Recorder dump(s): {}{}", fr->dumps.size(), Join(named, ", "), more));
  }
  if (!run.read.inputs.empty()) {
    std::vector<std::string> inputs;
    for (const auto& in : run.read.inputs) inputs.push_back("<code>" + EscapeHtml(in) + "</code>");
    parts.push_back("from " + Join(inputs, ", "));
  }
  return "<p>Read " + Join(parts, "; ") + ".</p>\n";
}

std::string NodeFactsTable(const DiagnoseRun& run) {
  using fr::EscapeHtml;
  std::string out = fmt::format(
      "<h2>Findings per node ({} of the job's {} nodes here)</h2>\n<table class=\"node-facts\">"
      "<tr><th>node</th><th>source</th><th>category</th><th>port</th><th>what</th>"
      "<th>where</th></tr>\n",
      run.job.nodes.size(), run.job.job_nodes);
  for (const NodeRow& r : NodeRows(run)) {
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>"
        "</tr>\n",
        EscapeHtml(r.node), EscapeHtml(r.source), EscapeHtml(r.category), EscapeHtml(r.port),
        EscapeHtml(r.text.substr(0, 300)), EscapeHtml(r.where));
  }
  return out + "</table>\n";
}

}  // namespace

std::string JobDiagnosisHtml(const DiagnoseRun& run, const fr::FrAnalysis* fr) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>safe-launch diagnosis</title><style>";
  out += fr::PageStyle();
  out += "</style></head><body>\n";
  const auto& causes = run.diagnosis.causes;
  out += CauseSection(causes.front(), true);
  out += DifferentialTable(run.diagnosis);
  for (std::size_t i = 1; i < causes.size() && i < 5; ++i) out += CauseSection(causes[i], false);
  if (fr != nullptr) out += fr::GridHtml(*fr);
  if (!run.job.nodes.empty()) out += NodeFactsTable(run);
  out += ReadLineHtml(run, fr);
  return out + "</body></html>\n";
}

}  // namespace sl::diagnose
