#pragma once
// The job's one answer as files in its run root: diagnosis.json (the safe-launch.diagnosis/1
// document `--json` prints, with the per-node facts), diagnosis.md and diagnosis.html (verdict
// and fix first, the Flight Recorder's rank x collective grid when there are dumps, the per-node
// table of findings, collapsible evidence). Pure: strings in, strings out.
#include <nlohmann/json.hpp>
#include <string>

#include "diagnose/flight_recorder/analysis.h"
#include "diagnose/ingest.h"

namespace sl::diagnose {

/// DiagnosisJson plus "nodes": [{"node", "facts": [{source, rule, category, port, file, line,
/// text}]}] when the inputs held node run directories or bundles.
nlohmann::json JobDiagnosisJson(const DiagnoseRun& run, bool explain);

/// One row of the per-node table: a fact or a cited log line of a node.
struct NodeRow {
  std::string node, source, category, port, text, where;
};
/// Every node's rows: its facts, then the log lines (kernel events, ...) the causes cite from
/// files under its directories; a node with nothing found has one row saying so.
std::vector<NodeRow> NodeRows(const DiagnoseRun& run);

/// diagnosis.md.
std::string JobDiagnosisMarkdown(const DiagnoseRun& run);

/// diagnosis.html: self-contained (inline CSS, no script, no network). `fr` may be null.
std::string JobDiagnosisHtml(const DiagnoseRun& run, const fr::FrAnalysis* fr);

}  // namespace sl::diagnose
