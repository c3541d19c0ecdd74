#include "diagnose/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "diagnose/report.h"

namespace sl::diagnose {

std::string_view TriggerName(Trigger t) {
  switch (t) {
    case Trigger::kNone:
      return "none";
    case Trigger::kSignature:
      return "signature";
    case Trigger::kStall:
      return "stall";
    case Trigger::kHeartbeat:
      return "heartbeat";
    case Trigger::kJobFailed:
      return "job_failed";
    case Trigger::kPeerHang:
      return "peer_hang";
  }
  return "none";
}

namespace {

/// Matches that can name a cause: highest priority first, among equals the earliest line (the
/// first error is the cause).
std::vector<const Match*> RankMatches(const Evidence& evidence) {
  std::vector<const Match*> ranked;
  for (const Match& m : evidence.matches()) {
    if (m.signature->priority > 0 || m.signature->severity >= Severity::kWarning) {
      ranked.push_back(&m);
    }
  }
  if (const Match* d = evidence.Desync()) ranked.push_back(d);
  std::stable_sort(ranked.begin(), ranked.end(), [](const Match* a, const Match* b) {
    return a->signature->priority > b->signature->priority;
  });
  return ranked;
}

/// Category, severity and fix: the engine's best cause; else the best signature when it is strong
/// enough (a symptom: collective_timeout, ...), else what fired.
void SetCause(const std::vector<const Match*>& ranked, Trigger trigger, const Diagnosis& diag,
              Verdict* v) {
  if (diag.named()) {
    const Cause& c = diag.causes.front();
    v->category = c.category;
    v->fix = c.fix;
    v->signature = c.evidence.empty() ? "" : c.evidence.front().signature;
    v->severity = "error";
    for (const Match* m : ranked) {
      if (m->signature->id == v->signature)
        v->severity = std::string(SeverityName(m->signature->severity));
    }
  } else if (!ranked.empty() && ranked.front()->signature->priority >= 20) {
    const Signature& s = *ranked.front()->signature;
    v->category = std::string(s.category);
    v->signature = std::string(s.id);
    v->severity = std::string(SeverityName(s.severity));
    v->fix = std::string(s.fix);
  } else if (trigger == Trigger::kStall || trigger == Trigger::kHeartbeat ||
             trigger == Trigger::kPeerHang) {
    v->category = "stall";
    v->severity = "hang";
    v->fix =
        "No progress was seen for the stall timeout. Compare the stacks of all ranks in this "
        "bundle (stacks/): the rank that is not in the same collective as the others is the one "
        "to look at; Flight Recorder dumps (fr/) show the last collective each rank entered.";
  } else if (trigger == Trigger::kJobFailed) {
    v->category = "job_failed";
    v->severity = "error";
    v->fix =
        "The job failed without a recognised error line; read the rank outputs (output/) "
        "from the first failing rank.";
  }
}

/// Ranks and hosts the evidence names, and the failing collective (the first match that names
/// one: watchdog timeout lines come first).
void SetEntities(const Evidence& evidence, const std::vector<const Match*>& ranked,
                 const JobTiming& timing, Verdict* v) {
  for (const Match* m : ranked) {
    std::string cat(m->signature->category);
    if (std::find(v->categories_seen.begin(), v->categories_seen.end(), cat) ==
        v->categories_seen.end()) {
      v->categories_seen.push_back(cat);
    }
    for (const char* k : {"rank", "timeout_rank", "rank_a", "rank_b"}) {
      if (auto r = m->Field(k); !r.empty()) v->ranks.insert(r);
    }
    if (auto h = m->Field("host"); !h.empty()) v->hosts.insert(h);
  }
  for (const Match& m : evidence.matches()) {
    if (v->seq.empty()) v->seq = m.Field("seq");
    if (v->op.empty()) v->op = m.Field("op");
    if (v->numel_in.empty()) v->numel_in = m.Field("numel_in");
    if (v->numel_out.empty()) v->numel_out = m.Field("numel_out");
    if (v->timeout_ms.empty()) v->timeout_ms = m.Field("timeout_ms");
    if (v->pg.empty()) v->pg = m.Field("pg");
  }
  if (!timing.host.empty()) v->hosts.insert(timing.host);
}

/// "no job output for 312 s (stall timeout 300 s)" and the like: what fired the capture.
std::string WhatFired(Trigger trigger, const JobTiming& timing) {
  switch (trigger) {
    case Trigger::kSignature:
      return "hang signature seen in the job output";
    case Trigger::kStall:
      return fmt::format("no job output for {:.0f} s (stall timeout {:.0f} s)",
                         timing.since_progress_s, timing.stall_timeout_s);
    case Trigger::kHeartbeat:
      return fmt::format("no heartbeat touch for {:.0f} s (stall timeout {:.0f} s)",
                         timing.since_progress_s, timing.stall_timeout_s);
    case Trigger::kJobFailed:
      return timing.exit_status ? fmt::format("job failed with status {}", *timing.exit_status)
                                : "job failed";
    case Trigger::kPeerHang:
      return "hang declared on another node of the job";
    case Trigger::kNone:
      break;
  }
  return "capture requested";
}

}  // namespace

Verdict Decide(const Evidence& evidence, Trigger trigger, const JobTiming& timing) {
  Verdict v;
  v.trigger = trigger;
  const std::vector<const Match*> ranked = RankMatches(evidence);
  Diagnosis diag = Diagnose(evidence);
  SetCause(ranked, trigger, diag, &v);
  if (diag.named()) v.causes = std::move(diag.causes);
  // A stall with evidence keeps the evidence's category, but the headline says what fired.
  v.evidence.assign(ranked.begin(), ranked.begin() + std::min<std::size_t>(ranked.size(), 20));
  SetEntities(evidence, ranked, timing, &v);
  std::string coll;
  if (!v.op.empty() || !v.seq.empty()) {
    coll = fmt::format("; collective {}{}{}", v.op.empty() ? "?" : v.op,
                       v.seq.empty() ? "" : " SeqNum=" + v.seq,
                       v.timeout_ms.empty() ? "" : " timeout " + v.timeout_ms + " ms");
  }
  v.headline = fmt::format("{}: {}{}", v.category, WhatFired(trigger, timing), coll);
  return v;
}

nlohmann::json SummaryJson(const Verdict& v, const JobTiming& timing) {
  nlohmann::json j;
  j["schema"] = "safe-launch.hang-summary/1";
  j["category"] = v.category;
  j["signature"] = v.signature;
  j["severity"] = v.severity;
  j["headline"] = v.headline;
  j["trigger"] = TriggerName(v.trigger);
  j["fix"] = v.fix;
  j["categories_seen"] = v.categories_seen;
  j["ranks"] = std::vector<std::string>(v.ranks.begin(), v.ranks.end());
  j["hosts"] = std::vector<std::string>(v.hosts.begin(), v.hosts.end());
  nlohmann::json c = nlohmann::json::object();
  auto put_num = [&c](const char* k, const std::string& s) {
    if (s.empty()) return;
    auto n = ParseInt(s);
    if (n.ok())
      c[k] = *n;
    else
      c[k] = s;
  };
  put_num("seq", v.seq);
  if (!v.op.empty()) c["op"] = v.op;
  put_num("numel_in", v.numel_in);
  put_num("numel_out", v.numel_out);
  put_num("timeout_ms", v.timeout_ms);
  put_num("pg", v.pg);
  j["collective"] = c;
  j["since_start_s"] = timing.since_start_s;
  j["since_progress_s"] = timing.since_progress_s;
  if (timing.exit_status) j["exit_status"] = *timing.exit_status;
  if (!timing.stall_source.empty()) j["stall_source"] = timing.stall_source;
  j["stall_timeout_s"] = timing.stall_timeout_s;
  nlohmann::json ev = nlohmann::json::array();
  for (const Match* m : v.evidence) {
    nlohmann::json e;
    e["signature"] = m->signature->id;
    e["category"] = m->signature->category;
    e["severity"] = SeverityName(m->signature->severity);
    e["source"] = m->source;
    e["line_number"] = m->line_number;
    e["at_s"] = m->at_s;
    e["line"] = m->line;
    e["fields"] = m->fields;
    ev.push_back(std::move(e));
  }
  j["evidence"] = std::move(ev);
  j["causes"] = CausesJson(v.causes);
  return j;
}

std::string SummaryMarkdown(const Verdict& v, const JobTiming& timing) {
  std::string md;
  md += fmt::format("# safe-launch hang/failure summary\n\n**Verdict:** `{}` ({})\n\n{}\n\n",
                    v.category, v.severity, v.headline);
  md += fmt::format("- trigger: {}\n", TriggerName(v.trigger));
  md += fmt::format("- time from job start: {:.1f} s\n", timing.since_start_s);
  md += fmt::format("- time since last progress: {:.1f} s\n", timing.since_progress_s);
  if (timing.exit_status) md += fmt::format("- job exit status: {}\n", *timing.exit_status);
  if (!v.op.empty() || !v.seq.empty()) {
    md +=
        fmt::format("- failing collective: {} SeqNum={} NumelIn={} NumelOut={} timeout={} ms\n",
                    v.op.empty() ? "?" : v.op, v.seq.empty() ? "?" : v.seq,
                    v.numel_in.empty() ? "?" : v.numel_in, v.numel_out.empty() ? "?" : v.numel_out,
                    v.timeout_ms.empty() ? "?" : v.timeout_ms);
  }
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
    return out.empty() ? std::string("-") : out;
  };
  md += fmt::format("- ranks named in evidence: {}\n- hosts: {}\n", join(v.ranks), join(v.hosts));
  if (v.categories_seen.size() > 1) {
    std::string all;
    for (const auto& c : v.categories_seen) all += (all.empty() ? "" : ", ") + c;
    md += fmt::format("- other categories seen: {}\n", all);
  }
  md += fmt::format("\n## Next step\n\n{}\n", v.fix.empty() ? "-" : v.fix);
  if (!v.causes.empty()) md += "\n## Causes, best first\n\n";
  for (const Cause& c : v.causes) {
    md += fmt::format("- `{}` probability {:.2f} ({}){}\n", c.category, c.probability,
                      ConfidenceLevel(c.probability), c.why.empty() ? "" : ": " + c.why);
    for (std::size_t i = 0; i < c.evidence.size() && i < 3; ++i) {
      md += fmt::format("  - {}:{}\n", c.evidence[i].file, c.evidence[i].line);
    }
  }
  md += "\n## Evidence\n\n";
  if (v.evidence.empty()) md += "No known error line was recognised.\n";
  for (const Match* m : v.evidence) {
    md += fmt::format("- `{}` {}:{}\n  ```\n  {}\n  ```\n", m->signature->id, m->source,
                      m->line_number, m->line.substr(0, 600));
  }
  md +=
      "\n## Bundle contents\n\nSee manifest.json for every collector's status. Flight Recorder "
      "dumps are in fr/, stacks in stacks/, rank outputs in output/, NCCL RAS status in ras/, "
      "IB counters, kernel log and nvidia-smi in node/.\n";
  return md;
}

}  // namespace sl::diagnose
