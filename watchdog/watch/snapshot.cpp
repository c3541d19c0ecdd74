#include "watchdog/watch/snapshot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/json_text.h"
#include "common/strings.h"
#include "watchdog/hang/peer_events.h"

namespace sl::watch {
namespace {

using nlohmann::json;

// Parses a file's text; null with `problem` set when it is not JSON (a partial write of
// someone else's, bytes that are not UTF-8).
json ParseJson(const FileRead& f, std::vector<std::string>* problems) {
  if (f.state == FileRead::State::kProblem) {
    problems->push_back(f.name + ": " + f.problem);
    return nullptr;
  }
  if (!f.ok()) return nullptr;
  if (f.truncated) {
    problems->push_back(f.name + ": too large, not read");
    return nullptr;
  }
  json j = json::parse(f.text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    problems->push_back(f.name + ": not a JSON object (partial or corrupt file)");
    return nullptr;
  }
  return j;
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? Printable(it->get<std::string>(), 160) : "";
}

int PhaseOrder(Phase p) {
  switch (p) {
    case Phase::kPreflight:
      return 0;
    case Phase::kWarmup:
      return 1;
    case Phase::kUnknown:
      return 2;
    default:
      return 3;
  }
}

// The phase from the files present when status.json does not exist yet: the run directory is
// made first, then env-plan.json, then preflight.json, then (after the warm-up) status.json.
void PhaseBeforeStart(const NodeFiles& n, NodeState* s) {
  if (n.preflight.ok() || n.preflight.state == FileRead::State::kProblem) {
    s->row.phase = Phase::kWarmup;
    s->phase_since_unix = n.preflight.mtime_unix;
  } else {
    s->row.phase = Phase::kPreflight;
    s->phase_since_unix = n.env_plan.mtime_unix ? n.env_plan.mtime_unix : n.dir_mtime_unix;
  }
}

void FromStatus(const json& st, const FileRead& f, NodeState* s) {
  const std::string state = Str(st, "state");
  s->phase_since_unix = f.mtime_unix;
  if (state == "running") {
    s->row.phase = Phase::kRunning;
  } else if (state == "stopping") {
    s->row.phase = Phase::kStopping;
  } else if (state == "finished" || state == "not_started") {
    s->row.phase = Phase::kEnded;
    if (auto it = st.find("exit_status"); it != st.end() && it->is_number_integer()) {
      s->row.exit_status = it->get<int>();
    }
    if (state == "not_started") {
      std::string why;
      if (auto stop = st.find("stop"); stop != st.end() && stop->is_object()) {
        why = Str(*stop, "reason");
      }
      s->row.verdict = "not started" + (why.empty() ? "" : ": " + why);
    } else if (s->row.exit_status) {
      s->row.verdict =
          *s->row.exit_status == 0 ? "ok" : "exit " + std::to_string(*s->row.exit_status);
    }
  } else {
    s->row.phase = Phase::kUnknown;
    s->row.problems.push_back("status.json: unknown state '" + state + "'");
  }
}

// What FromLive takes of live.json, read without building a document (a printing job's
// live.json is parsed again every 2 s on every node): the last occurrence of a key wins and a
// value of another type reads as absent, as with a document's find().
struct LiveFields {
  double updated = 0, last_output = 0, phase_since = 0;
  std::string phase, signature, category;
  bool event = false;  // last_event is an object
};

// A handler for nlohmann's SAX parser (no document is built; the parser keeps its own stack,
// so a file nested however deep needs none) filling LiveFields.
struct LiveSax {
  enum Slot { kNone, kUpdated, kLastOutput, kPhaseSince, kPhase, kEvent, kSignature, kCategory };
  LiveFields* out;
  int depth = 0;  // 1: in the top object, 2: in last_event (or another member's value)
  bool in_event = false;
  bool seen = false;  // the first value was seen (it must be an object)
  Slot slot = kNone;  // what the next value is

  bool Top(bool object) {
    if (seen) return true;
    seen = true;
    return object;  // anything but an object at the top: not live.json
  }
  // A value that is not the slot's type reads as absent.
  bool Other() { return Top(false) && Set(0, nullptr); }
  bool Set(double v, const std::string* text) {
    switch (slot) {
      case kUpdated:
        out->updated = v;
        break;
      case kLastOutput:
        out->last_output = v;
        break;
      case kPhaseSince:
        out->phase_since = v;
        break;
      case kPhase:
        out->phase = text ? *text : "";
        break;
      case kSignature:
        out->signature = text ? *text : "";
        break;
      case kCategory:
        out->category = text ? *text : "";
        break;
      case kEvent:
        out->event = false;
        break;
      case kNone:
        break;
    }
    slot = kNone;
    return true;
  }
  bool null() { return Other(); }
  bool boolean(bool) { return Other(); }
  bool Number(double v) {
    if (!Top(false)) return false;
    const bool numeric = slot == kUpdated || slot == kLastOutput || slot == kPhaseSince;
    return numeric ? Set(v, nullptr) : Set(0, nullptr);
  }
  bool number_integer(json::number_integer_t v) { return Number(static_cast<double>(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Number(static_cast<double>(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return Number(v); }
  bool string(std::string& v) {
    if (!Top(false)) return false;
    const bool text = slot == kPhase || slot == kSignature || slot == kCategory;
    return text ? Set(0, &v) : Set(0, nullptr);
  }
  bool binary(json::binary_t&) { return Other(); }
  bool start_object(std::size_t) {
    if (!Top(true)) return false;
    if (depth == 1 && slot == kEvent) {
      in_event = true;
      out->signature.clear();
      out->category.clear();
      out->event = true;
      slot = kNone;
    } else {
      Set(0, nullptr);
    }
    ++depth;
    return true;
  }
  bool end_object() {
    if (--depth == 1) in_event = false;
    slot = kNone;
    return true;
  }
  bool start_array(std::size_t) {
    if (!Top(false)) return false;
    Set(0, nullptr);
    ++depth;
    return true;
  }
  bool end_array() {
    --depth;
    slot = kNone;
    return true;
  }
  bool key(std::string& k) {
    slot = kNone;
    if (depth == 1) {
      slot = k == "updated_unix"       ? kUpdated
             : k == "last_output_unix" ? kLastOutput
             : k == "phase_since_unix" ? kPhaseSince
             : k == "phase"            ? kPhase
             : k == "last_event"       ? kEvent
                                       : kNone;
    } else if (depth == 2 && in_event) {
      slot = k == "signature" ? kSignature : k == "category" ? kCategory : kNone;
    }
    return true;
  }
  // Not JSON (cut, corrupt, not UTF-8): the parse stops; ParseLive names the file.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }
};

// live.json's fields; false (with the problem named, as ParseJson names it) when it is not a
// JSON object.
bool ParseLive(const FileRead& f, std::vector<std::string>* problems, LiveFields* out) {
  if (f.state == FileRead::State::kProblem) {
    problems->push_back(f.name + ": " + f.problem);
    return false;
  }
  if (!f.ok()) return false;
  if (f.truncated) {
    problems->push_back(f.name + ": too large, not read");
    return false;
  }
  LiveSax sax{.out = out};
  if (!json::sax_parse(f.text, &sax) || !sax.seen) {
    *out = LiveFields{};
    problems->push_back(f.name + ": not a JSON object (partial or corrupt file)");
    return false;
  }
  return true;
}

void FromLive(const LiveFields& live, NodeState* s) {
  s->live_unix = live.updated;
  s->last_output_unix = live.last_output;
  const std::string phase = Printable(live.phase, 160);
  if (s->row.phase != Phase::kEnded && (phase == "capturing" || phase == "stopping")) {
    s->row.phase = phase == "capturing" ? Phase::kCapturing : Phase::kStopping;
    s->phase_since_unix = live.phase_since;
  }
  if (live.event) {
    s->row.last_event = Printable(live.signature, 160);
    if (std::string c = Printable(live.category, 160); !c.empty())
      s->row.last_event += " (" + c + ")";
  }
}

// The newest bundle: a partial one means a capture is under way (or was left incomplete).
void FromBundles(const NodeFiles& n, NodeState* s) {
  const BundleEntry* newest = nullptr;
  for (const auto& b : n.bundles) {
    if (!newest || b.mtime_unix > newest->mtime_unix) newest = &b;
  }
  if (!newest) return;
  s->row.bundle = Printable(newest->name, 120);
  if (!newest->complete) {
    if (s->row.phase == Phase::kRunning || s->row.phase == Phase::kStopping) {
      s->row.phase = Phase::kCapturing;
      s->phase_since_unix = newest->mtime_unix;
    }
    s->row.bundle_summary = "bundle " + s->row.bundle + " not complete (being written, or cut off)";
    return;
  }
  json sum = ParseJson(newest->summary, &s->row.problems);
  if (sum.is_null()) return;
  const std::string category = Str(sum, "category");
  const std::string headline = Str(sum, "headline");
  // Headlines usually start with their category already ("collective_timeout: ...").
  s->row.verdict = headline.empty()                 ? category
                   : StartsWith(headline, category) ? headline
                                                    : category + ": " + headline;
  if (std::string sig = Str(sum, "signature"); !sig.empty() && s->row.last_event.empty()) {
    s->row.last_event = sig + " (" + category + ")";
  }
  s->row.bundle_summary = "verdict: " + s->row.verdict;
  if (std::string fix = Str(sum, "fix"); !fix.empty()) s->row.bundle_summary += "\nfix: " + fix;
}

}  // namespace

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPreflight:
      return "preflight";
    case Phase::kWarmup:
      return "warm-up";
    case Phase::kRunning:
      return "running";
    case Phase::kStopping:
      return "stopping";
    case Phase::kCapturing:
      return "capturing";
    case Phase::kEnded:
      return "ended";
    case Phase::kUnknown:
      return "unknown";
  }
  return "unknown";
}

namespace {

// The state from the run directory and status.json alone; `memo` (may be null) reuses the last
// parse while status.json's text and time are the same.
NodeState StatusPart(const NodeFiles& n, MemoEntry* memo) {
  const bool cacheable = n.status.ok();
  if (memo && cacheable && memo->status_valid && memo->status_mtime == n.status.mtime_unix &&
      memo->status_text == n.status.text)
    return memo->after_status;
  NodeState s;
  s.row.name = Printable(n.name, 80);
  s.row.dir = n.name;
  if (json st = ParseJson(n.status, &s.row.problems); !st.is_null()) {
    FromStatus(st, n.status, &s);
  } else if (n.status.state == FileRead::State::kMissing) {
    PhaseBeforeStart(n, &s);
  }
  if (memo) {
    memo->status_valid = cacheable;
    memo->status_text = cacheable ? n.status.text : std::string();
    memo->status_mtime = n.status.mtime_unix;
    memo->after_status = s;
  }
  return s;
}

NodeState ParseNodeWith(const NodeFiles& n, MemoEntry* memo) {
  if (!n.problem.empty()) {
    NodeState s;
    s.row.name = Printable(n.name, 80);
    s.row.dir = n.name;
    s.row.problems.push_back(n.problem);
    return s;
  }
  NodeState s = StatusPart(n, memo);
  if (LiveFields live; ParseLive(n.live, &s.row.problems, &live)) FromLive(live, &s);
  if (n.heartbeat.ok()) s.heartbeat_unix = n.heartbeat.mtime_unix;
  if (n.heartbeat.state == FileRead::State::kProblem) {
    s.row.problems.push_back("heartbeat: " + n.heartbeat.problem);
  }
  FromBundles(n, &s);
  return s;
}

}  // namespace

NodeState ParseNode(const NodeFiles& n) { return ParseNodeWith(n, nullptr); }

namespace {

double Age(double now, double then) { return then > 0 ? std::max(0.0, now - then) : -1; }

// How bad a row is, for sorting (worst first) and marking.
int Badness(const Row& r) {
  if (r.posted_hang || r.phase == Phase::kCapturing) return 6;
  if (r.phase == Phase::kEnded && r.exit_status && *r.exit_status != 0) return 5;
  if (r.stale) return 4;
  if (!r.problems.empty() || r.phase == Phase::kUnknown) return 3;
  if (r.phase == Phase::kStopping) return 3;
  if (r.phase == Phase::kPreflight || r.phase == Phase::kWarmup) return 2;
  if (r.phase == Phase::kEnded) return 0;
  return 1;
}

// The silence that marks a row stale: the heartbeat once the job touched it, else output.
double Silence(const Row& r) { return r.heartbeat_age_s >= 0 ? r.heartbeat_age_s : r.output_age_s; }

Row Aged(const NodeState& s, double now, const WatchOptions& o) {
  Row r = s.row;
  r.in_phase_s = Age(now, s.phase_since_unix);
  r.output_age_s = Age(now, s.last_output_unix);
  r.heartbeat_age_s = Age(now, s.heartbeat_unix);
  r.supervisor_age_s = Age(now, s.live_unix);
  if (r.phase == Phase::kRunning) {
    const double silence = Silence(r) >= 0 ? Silence(r) : r.in_phase_s;
    if (silence > o.stale_after_s) r.stale = true;
    if (r.supervisor_age_s > o.supervisor_silent_s) {
      r.stale = true;
      r.problems.push_back("supervisor not heard from for " + FormatAge(r.supervisor_age_s) +
                           " (killed? node down?)");
    }
  }
  return r;
}

// The node of a task's run directory ("gpu01" of "gpu01-rank3"; a node's own name as it is).
std::string_view NodeOfTask(std::string_view name) {
  if (auto p = name.rfind("-rank"); p != name.npos && p + 5 < name.size() &&
                                    name.find_first_not_of("0123456789", p + 5) == name.npos) {
    return name.substr(0, p);
  }
  return name;
}

// Tasks of one node (gpu01-rank0, gpu01-rank1, ...) as one row: the worst of them.
std::vector<Row> GroupByNode(std::vector<Row> rows) {
  // One supervisor per node (the usual job): every row is its own group, as it is.
  if (std::none_of(rows.begin(), rows.end(),
                   [](const Row& r) { return NodeOfTask(r.name).size() != r.name.size(); }))
    return rows;
  std::map<std::string, std::vector<Row>> by_node;
  for (auto& r : rows) by_node[std::string(NodeOfTask(r.name))].push_back(std::move(r));
  std::vector<Row> out;
  for (auto& [node, group] : by_node) {
    auto worst = std::max_element(group.begin(), group.end(), [](const Row& a, const Row& b) {
      return a.badness != b.badness ? a.badness < b.badness : Silence(a) < Silence(b);
    });
    Row r = std::move(*worst);
    r.tasks = static_cast<int>(group.size());
    if (r.tasks > 1) r.name = node + " [" + std::to_string(r.tasks) + " tasks: " + r.name + "]";
    out.push_back(std::move(r));
  }
  return out;
}

void AddEvents(const RunRootFiles& files, Snapshot* snap) {
  for (const auto& f : files.events) {
    auto ev = hang::ParseEvent(f.text);
    if (!ev) {
      snap->problems.push_back(".events/" + Printable(f.name, 80) + ": " + ev.error().message);
      continue;
    }
    snap->events.push_back({.kind = ev->kind,
                            .node = Printable(ev->node, 80),
                            .time_unix = ev->time_unix,
                            .time_utc = Printable(ev->time_utc, 40),
                            .trigger = Printable(ev->trigger, 40),
                            .headline = Printable(ev->headline, 200),
                            .file = Printable(f.name, 120)});
  }
  std::sort(snap->events.begin(), snap->events.end(),
            [](const JobEvent& a, const JobEvent& b) { return a.time_unix < b.time_unix; });
  for (const auto& r : files.rejected) snap->problems.push_back(".events/" + Printable(r, 160));
}

void AddDiagnosis(const RunRootFiles& files, Snapshot* snap) {
  json d = ParseJson(files.diagnosis, &snap->problems);
  if (d.is_null()) return;
  auto causes = d.find("causes");
  if (causes == d.end() || !causes->is_array() || causes->empty() || !(*causes)[0].is_object()) {
    snap->diagnosis = "no cause named";
    return;
  }
  const json& c = (*causes)[0];
  snap->diagnosis = Str(c, "category");
  if (std::string why = Str(c, "why"); !why.empty()) snap->diagnosis += ": " + why;
}

std::string JobState(const Snapshot& s) {
  for (const auto& e : s.events) {
    if (e.kind == "hang") return "hang";
  }
  for (const auto& e : s.events) {
    if (e.kind == "failure") return "failed";
  }
  if (s.rows.empty()) return "empty";
  bool all_ended = true, any_start = false, any_failed = false;
  for (const auto& r : s.rows) {
    all_ended = all_ended && r.phase == Phase::kEnded;
    any_start = any_start || r.phase == Phase::kPreflight || r.phase == Phase::kWarmup;
    any_failed = any_failed || (r.exit_status && *r.exit_status != 0);
  }
  if (all_ended) return any_failed ? "failed" : "ended";
  return any_start ? "starting" : "running";
}

void SlowestAndStalest(Snapshot* s) {
  const Row *slow = nullptr, *stale = nullptr;
  for (const auto& r : s->rows) {
    if (r.phase == Phase::kEnded || r.phase == Phase::kUnknown) continue;
    if (!slow || PhaseOrder(r.phase) < PhaseOrder(slow->phase) ||
        (PhaseOrder(r.phase) == PhaseOrder(slow->phase) && Silence(r) > Silence(*slow))) {
      slow = &r;
    }
    if (Silence(r) >= 0 && (!stale || Silence(r) > Silence(*stale))) stale = &r;
  }
  if (slow) {
    s->slowest =
        slow->name + " (" + PhaseName(slow->phase) + " for " + FormatAge(slow->in_phase_s) + ")";
  }
  if (stale) s->stalest = stale->name + " (silent " + FormatAge(Silence(*stale)) + ")";
}

}  // namespace

Snapshot BuildSnapshot(const RunRootFiles& files, double now, const WatchOptions& o,
                       ParseMemo* memo) {
  Snapshot snap;
  snap.root = Printable(files.root, 300);
  snap.now_unix = now;
  snap.stale_after_s = o.stale_after_s;
  if (!files.problem.empty()) snap.problems.push_back(files.root + ": " + files.problem);
  if (files.nodes_left_out) {
    snap.problems.push_back(std::to_string(files.nodes_left_out) + " run directories left out");
  }
  AddEvents(files, &snap);
  AddDiagnosis(files, &snap);
  std::vector<Row> rows;
  rows.reserve(files.nodes.size());
  // The reader hands nodes out sorted by name, as the memo is: each is looked up at the hint
  // (the one after the last), else in the map.
  auto hint = memo ? memo->begin() : ParseMemo::iterator{};
  for (const auto& n : files.nodes) {
    NodeState fresh;
    const NodeState* parsed = &fresh;
    if (memo && !n.signature.empty()) {
      auto at =
          hint != memo->end() && hint->first == n.name ? hint : memo->try_emplace(n.name).first;
      hint = std::next(at);
      MemoEntry& slot = at->second;
      if (slot.signature != n.signature) {
        slot.state = ParseNodeWith(n, &slot);
        slot.signature = n.signature;
      }
      parsed = &slot.state;
    } else {
      fresh = ParseNode(n);
    }
    Row r = Aged(*parsed, now, o);
    for (const auto& e : snap.events)
      r.posted_hang = r.posted_hang || (e.kind == "hang" && e.node == r.name);
    r.badness = Badness(r);
    rows.push_back(std::move(r));
  }
  if (!o.per_task) rows = GroupByNode(std::move(rows));
  // Worst first; sorted as indices, then each row moved once (a row is a dozen strings).
  std::vector<std::uint32_t> order(rows.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    const Row &a = rows[x], &b = rows[y];
    if (a.badness != b.badness) return a.badness > b.badness;
    if (Silence(a) != Silence(b)) return Silence(a) > Silence(b);
    if (a.name != b.name) return a.name < b.name;
    return x < y;
  });
  snap.rows.reserve(rows.size());
  for (std::uint32_t i : order) snap.rows.push_back(std::move(rows[i]));
  snap.nodes = static_cast<int>(snap.rows.size());
  snap.state = files.problem.empty() ? JobState(snap) : "unreadable";
  SlowestAndStalest(&snap);
  return snap;
}

std::string FormatAge(double s) {
  if (s < 0 || std::isnan(s)) return "-";
  const auto t = static_cast<long long>(s);
  char buf[32];
  if (t < 60) {
    std::snprintf(buf, sizeof buf, "%llds", t);
  } else if (t < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  } else if (t < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%lldh", t / 86400, t % 86400 / 3600);
  }
  return buf;
}

namespace {
json AgeJson(double s) { return s < 0 ? json(nullptr) : json(std::round(s * 10) / 10); }
}  // namespace

std::string SnapshotJson(const Snapshot& s) {
  json rows = json::array();
  for (const auto& r : s.rows) {
    rows.push_back({{"node", r.name},
                    {"tasks", r.tasks},
                    {"phase", PhaseName(r.phase)},
                    {"in_phase_s", AgeJson(r.in_phase_s)},
                    {"output_age_s", AgeJson(r.output_age_s)},
                    {"heartbeat_age_s", AgeJson(r.heartbeat_age_s)},
                    {"supervisor_age_s", AgeJson(r.supervisor_age_s)},
                    {"last_event", r.last_event},
                    {"exit_status", r.exit_status ? json(*r.exit_status) : json(nullptr)},
                    {"verdict", r.verdict},
                    {"bundle", r.bundle},
                    {"stale", r.stale},
                    {"posted_hang", r.posted_hang},
                    {"problems", r.problems}});
  }
  json events = json::array();
  for (const auto& e : s.events) {
    events.push_back({{"kind", e.kind},
                      {"node", e.node},
                      {"time_unix", e.time_unix},
                      {"time_utc", e.time_utc},
                      {"trigger", e.trigger},
                      {"headline", e.headline},
                      {"file", e.file}});
  }
  json j = {{"schema", "safe-launch.watch/1"},
            {"root", s.root},
            {"now_unix", s.now_unix},
            {"state", s.state},
            {"nodes", s.nodes},
            {"slowest", s.slowest},
            {"stalest", s.stalest},
            {"stale_after_s", s.stale_after_s},
            {"diagnosis", s.diagnosis},
            {"events", events},
            {"problems", s.problems},
            {"rows", rows}};
  return JsonText(j) + "\n";
}

}  // namespace sl::watch
