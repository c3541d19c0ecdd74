// How another node's notice, or this node's own rank failure, changes the verdict of a
// capture (PeerNotes applied to diagnose::Decide's verdict), and the summaries rendered from it.
#include "watchdog/hang/peer_verdict.h"

#include <fmt/format.h>

#include "diagnose/verdict.h"

namespace sl::hang {
namespace {

// Whether the match that decided `v` came after the given output line (same stream: by line
// number; else by time).
bool DecidedAfter(const diagnose::Verdict& v, const PeerNotes& peer) {
  for (const diagnose::Match* m : v.evidence) {
    if (m->signature->id != v.signature) continue;
    return m->source == peer.local_source && m->line_number > peer.local_line;
  }
  return false;
}

// When an event happened, as people read it.
std::string EventTime(const PeerEvent& e) {
  return nlohmann::json::parse(EventJson(e)).value("time_utc", "?");
}

nlohmann::json EventEvidence(const PeerEvent& e) {
  return {{"signature", "peer_event." + e.kind},
          {"category", e.kind == "failure" ? "oom_or_crash_other_rank" : e.category},
          {"severity", e.kind == "failure" ? "error" : "hang"},
          {"source", e.file},
          {"line_number", nullptr},
          {"at_s", nullptr},
          {"line", e.kind == "failure" ? PeerFailureHeadline(e) : PeerHangHeadline(e)},
          {"fields", nlohmann::json::parse(EventJson(e))}};
}

// Another node's notice changes what this node's summary says: its headline names the node
// that declared the hang (and keeps its category when this node saw nothing better), and an
// earlier root failure elsewhere is the verdict (oom_or_crash_other_rank), this node's own
// finding kept after "here:".
// Whether this node's verdict is only a consequence (a hang symptom, a store timeout, a generic
// failure) that an earlier rank failure explains; a root cause of its own (CUDA OOM, an IB
// error) stays the verdict.
bool IsConsequence(const diagnose::Verdict& v) {
  static constexpr std::string_view kConsequences[] = {"stall",
                                                       "job_failed",
                                                       "store_timeout",
                                                       "collective_timeout",
                                                       "rank_process_failed",
                                                       "peer_exit_or_network",
                                                       "unknown"};
  if (v.severity == "hang") return true;
  for (std::string_view c : kConsequences) {
    if (v.category == c) return true;
  }
  return false;
}

// The headline without its leading "<category>: ", to be quoted inside another one.
std::string HeadlineBody(const diagnose::Verdict& v) {
  const std::string prefix = v.category + ": ";
  return v.headline.rfind(prefix, 0) == 0 ? v.headline.substr(prefix.size()) : v.headline;
}

}  // namespace

void ApplyPeerNotes(const PeerNotes& peer, diagnose::Verdict& v) {
  if (peer.hang) {
    // Decide's own headline for a peer_hang says only that: nothing of this node's to keep.
    const bool nothing_here = v.category == "stall" ||
                              v.headline.find("hang declared on another node") != std::string::npos;
    const std::string own = nothing_here ? "" : HeadlineBody(v);
    if (v.category == "stall") {
      if (!peer.hang->category.empty()) v.category = peer.hang->category;
      v.fix = fmt::format(
          "Node {} declared the hang; this bundle is this node's side of it, taken while its "
          "ranks were still in it. Start from node {}'s bundle in the job's run root, then "
          "compare the stacks (stacks/) and Flight Recorder dumps (fr/) of both sides.",
          peer.hang->node, peer.hang->node);
    }
    v.headline =
        v.category + ": " + PeerHangHeadline(*peer.hang) + (own.empty() ? "" : "; here: " + own);
    v.hosts.insert(peer.hang->node);
  }
  if (peer.failure && IsConsequence(v)) {
    const PeerEvent& f = *peer.failure;
    const std::string own = HeadlineBody(v);
    v.category = "oom_or_crash_other_rank";
    v.signature = "peer_event.failure";
    v.severity = "error";
    v.headline = "oom_or_crash_other_rank: " + PeerFailureHeadline(f) +
                 (f.category.empty() ? "" : " [its verdict: " + f.category + "]") +
                 "; here: " + own;
    v.fix = fmt::format(
        "Fix the first failure, on node {}{} (its failure-* bundle in the job's run root): "
        "this node's {} followed from it.",
        f.node, f.rank ? fmt::format(" rank {}", *f.rank) : "", diagnose::TriggerName(v.trigger));
    if (f.rank) v.ranks.insert(std::to_string(*f.rank));
    v.hosts.insert(f.node);
  }
  if (peer.local && (IsConsequence(v) || DecidedAfter(v, peer))) {
    const PeerEvent& f = *peer.local;
    const std::string own = HeadlineBody(v);
    v.category = "rank_process_failed";
    v.signature = "torchrun.failed_exitcode";
    v.severity = "error";
    std::string who = f.rank ? fmt::format("rank {}", *f.rank) : std::string("a rank");
    v.headline = fmt::format(
        "rank_process_failed: {} on this node failed first (exit {} at {}){}; "
        "then: {}",
        who, f.exit_status.value_or(1), EventTime(f),
        f.first_error.empty() ? "" : ": " + f.first_error, own);
    v.fix = fmt::format(
        "Fix the failure of {} (its traceback in output/ of this bundle): the {} that followed "
        "is torchrun waiting for the other nodes, not a hang of its own.",
        who, diagnose::TriggerName(v.trigger));
    if (f.rank) v.ranks.insert(std::to_string(*f.rank));
  }
}

// Decides on a snapshot of the evidence taken under its lock. The verdict points into the
// snapshot: it is rendered before the snapshot goes away, and kept as a copy without pointers.
Decided DecideOnSnapshot(std::mutex& evidence_mu, const diagnose::Evidence& evidence,
                         diagnose::Trigger trigger, const diagnose::JobTiming& timing,
                         const PeerNotes& peer) {
  std::lock_guard lock(evidence_mu);
  diagnose::Evidence snapshot = evidence;
  diagnose::Verdict v = diagnose::Decide(snapshot, trigger, timing);
  ApplyPeerNotes(peer, v);
  Decided d{{}, diagnose::SummaryJson(v, timing), diagnose::SummaryMarkdown(v, timing)};
  nlohmann::json events = nlohmann::json::array();
  for (const auto* e : {&peer.local, &peer.failure, &peer.hang}) {
    if (!*e) continue;
    events.push_back(nlohmann::json::parse(EventJson(**e)));
    events.back()["file"] = (*e)->file;
    d.json["evidence"].insert(d.json["evidence"].begin(), EventEvidence(**e));
    d.markdown +=
        fmt::format("\n- peer event ({}): {}\n", (*e)->file,
                    (*e)->kind == "failure" ? PeerFailureHeadline(**e) : PeerHangHeadline(**e));
  }
  if (!events.empty()) d.json["peer_events"] = std::move(events);
  v.evidence.clear();
  d.verdict = std::move(v);
  return d;
}

}  // namespace sl::hang
