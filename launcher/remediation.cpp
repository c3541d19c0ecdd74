#include "launcher/remediation.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <thread>

#include "common/file_reader.h"
#include "common/file_writer.h"
#include "common/json_text.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "diagnose/flight_recorder/report.h"
#include "launcher/hostlist.h"

namespace sl::launcher {
namespace {

// The categories whose cause sits on one node (diagnose/job_facts.cpp's tables map preflight,
// warm-up, bundle and epilog findings onto them; the pair rounds' slow node is a port fault).
// Everything else -- desync, a rank's exception, OOM, a straggling rank, the fabric, versions,
// interfaces -- is the application's or the whole job's: reported, never acted on.
constexpr std::string_view kNodeLocal[] = {
    "ib_port_down_or_link_flap", "mtu_mismatch", "gid_index",
    "gpu_xid_or_driver",         "memlock",      "shm_too_small",
};

constexpr std::string_view kModes[] = {"report", "drain", "requeue"};

// Evidence quoted in a drain reason: the preflight report's JSON pointer ("/findings/18 ") and
// its finding code are in the cause already.
std::string ShortEvidence(const std::string& text) {
  std::string_view t = Trim(text);
  if (StartsWith(t, "/")) {
    auto sp = t.find(' ');
    if (sp != std::string_view::npos) t = Trim(t.substr(sp + 1));
  }
  return Printable(t, 120);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Field(std::string_view text, std::string_view key) {
  for (const auto& tok : Split(text, ' ')) {
    if (StartsWith(tok, std::string(key) + "=")) return tok.substr(key.size() + 1);
  }
  return "";
}

std::vector<std::string> Hosts(const std::string& list) {
  if (list.empty() || list == "(null)") return {};
  auto h = ExpandHostlist(list);
  return h.ok() ? *h : std::vector<std::string>{list};
}

std::string ShellQuote(const std::string& s) {
  if (s.find_first_of(" '\"$`\\;&|<>()*?") == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string CommandText(const std::vector<std::string>& argv) {
  std::string out = "scontrol";
  for (const auto& a : argv) out += " " + ShellQuote(a);
  return out;
}

// "<job>.<step>" of an attempt's run root "<job>.<step>.requeue<N>" (LaunchId).
std::string AttemptBase(const std::string& leaf) {
  auto at = leaf.rfind(".requeue");
  if (at == std::string::npos) return leaf;
  std::string_view n = std::string_view(leaf).substr(at + 8);
  const bool digits = !n.empty() && std::all_of(n.begin(), n.end(), ::isdigit);
  return digits ? leaf.substr(0, at) : leaf;
}

}  // namespace

RemediationHistory ReadHistory(const std::string& run_root) {
  RemediationHistory h;
  const RootedFileReader fs("");
  const std::string parent = PathParent(run_root);
  const std::string self = PathLeaf(run_root);
  const std::string base = AttemptBase(self);
  auto names = fs.ListDir(parent);
  if (!names.ok()) return h;
  for (const auto& name : *names) {
    if (name == self || AttemptBase(name) != base) continue;
    auto text = fs.ReadFile(parent + "/" + name + "/remediation.json", 1 << 20);
    if (!text.ok()) continue;
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j["actions"].is_array()) continue;
    for (const auto& a : j["actions"]) {
      if (!a.is_object() || !a.value("ran", false)) continue;
      const std::string kind = a.value("kind", "");
      if (kind == "requeue" && (a.value("ok", false) || a.value("pending", false))) ++h.requeues;
      if (!a.value("ok", false)) continue;
      if (kind == "drain") h.drained.push_back(a.value("node", ""));
    }
  }
  return h;
}

namespace {

nlohmann::json ActionJson(const ActionResult& r) {
  return {{"kind", r.action.kind},
          {"node", r.action.node},
          {"command", CommandText(r.action.argv)},
          {"ran", r.ran},
          {"ok", r.ok},
          {"output", Printable(r.output, 400)},
          {"seconds", r.seconds}};
}

}  // namespace

Result<OnNodeFault> ParseOnNodeFault(std::string_view text) {
  for (std::size_t i = 0; i < std::size(kModes); ++i) {
    if (text == kModes[i]) return static_cast<OnNodeFault>(i);
  }
  return MakeError("unknown --on-node-fault value '" + std::string(text) + "'", "",
                   "one of report, drain, requeue");
}

Result<RemediationPolicy> ResolveRemediationPolicy(const RemediationFlags& flags,
                                                   const Environment& env,
                                                   const recipes::SlurmSettings& recipe) {
  RemediationPolicy p;
  p.dry_run = flags.dry_run;
  std::string mode = "report";
  p.source = "default";
  auto var = [&env](const char* name) {
    auto v = Lookup(env, name);
    return v ? std::string(Trim(*v)) : std::string();
  };
  if (!flags.on_node_fault.empty()) {
    mode = flags.on_node_fault;
    p.source = "--on-node-fault";
  } else if (std::string v = var("SAFE_LAUNCH_ON_NODE_FAULT"); !v.empty()) {
    mode = v;
    p.source = "SAFE_LAUNCH_ON_NODE_FAULT";
  } else if (!recipe.on_node_fault.empty()) {
    mode = recipe.on_node_fault;
    p.source = "recipe " + recipe.origin;
  }
  auto m = ParseOnNodeFault(mode);
  if (!m.ok()) {
    Error e = m.error();
    e.where = p.source;
    return e;
  }
  p.mode = *m;
  if (flags.fault_threshold >= 0) {
    p.threshold = flags.fault_threshold;
  } else if (std::string v = var("SAFE_LAUNCH_FAULT_THRESHOLD"); !v.empty()) {
    auto d = ParseDouble(v, "SAFE_LAUNCH_FAULT_THRESHOLD");
    if (!d.ok() || !(*d >= 0 && *d <= 1))
      return MakeError("SAFE_LAUNCH_FAULT_THRESHOLD='" + v + "' is not a number in 0..1",
                       "SAFE_LAUNCH_FAULT_THRESHOLD", "e.g. 0.8");
    p.threshold = *d;
  } else if (recipe.fault_threshold) {
    p.threshold = *recipe.fault_threshold;
  }
  if (flags.max_requeues >= 0) {
    p.max_requeues = flags.max_requeues;
  } else if (std::string v = var("SAFE_LAUNCH_MAX_REQUEUES"); !v.empty()) {
    auto n = ParseInt(v, "SAFE_LAUNCH_MAX_REQUEUES");
    if (!n.ok() || *n < 0 || *n > 100)
      return MakeError("SAFE_LAUNCH_MAX_REQUEUES='" + v + "' is not an integer in 0..100",
                       "SAFE_LAUNCH_MAX_REQUEUES", "e.g. 2");
    p.max_requeues = static_cast<int>(*n);
  } else if (recipe.max_requeues) {
    p.max_requeues = *recipe.max_requeues;
  }
  return p;
}

std::string_view OnNodeFaultName(OnNodeFault mode) { return kModes[static_cast<int>(mode)]; }

// operator[] on a const json with a missing key is undefined behaviour (it crashed on a
// cause without "entity"); every optional member is looked up through this.
static const nlohmann::json& Member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// The member if it is an array, else an empty one.
static const nlohmann::json& ArrayMember(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& m = Member(j, key);
  return m.is_array() ? m : kEmpty;
}

Result<FaultCause> FirstCause(const nlohmann::json& d) {
  const nlohmann::json& causes = Member(d, "causes");
  if (!causes.is_array() || causes.empty() || !causes[0].is_object()) {
    return MakeError("the diagnosis has no causes");
  }
  const nlohmann::json& c = causes[0];
  FaultCause f;
  f.category = c.value("category", "unknown");
  // The differential engine writes `probability`; before it, `confidence`.
  const nlohmann::json& p = Member(c, "probability");
  const nlohmann::json& q = p.is_number() ? p : Member(c, "confidence");
  f.probability = q.is_number() ? q.get<double>() : 0.0;
  if (const auto& e = Member(c, "entity"); e.is_object()) {
    f.entity_node = e.value("node", "");
    f.port = e.value("port", "");
    f.gpu = e.value("gpu", "");
    f.rank = e.value("rank", "");
  }
  for (const auto& e : ArrayMember(c, "evidence")) {
    if (!e.is_object() || f.evidence.size() >= 3) continue;
    std::string where = e.value("file", "");
    if (const auto& line = Member(e, "line"); line.is_number())
      where += ":" + std::to_string(line.get<long>());
    f.evidence.push_back(where + ": " + e.value("text", ""));
  }
  for (const auto& r : ArrayMember(c, "rules"))
    if (r.is_string()) f.rules.push_back(r.get<std::string>());
  return f;
}

bool IsNodeLocalCategory(std::string_view category) {
  return std::find(std::begin(kNodeLocal), std::end(kNodeLocal), category) != std::end(kNodeLocal);
}

std::string SingleNode(std::string_view e) {
  e = Trim(e);
  if (e.empty() || StartsWith(e, "all ")) return "";
  auto only = e.find(" only (1 of ");
  if (only != std::string_view::npos) return std::string(e.substr(0, only));
  // A bare name (a log line's host prefix); a list or a count is not one node.
  if (e.find_first_of(" ,()") != std::string_view::npos) return "";
  return std::string(e);
}

std::string SlurmNodeOfRunDir(std::string_view leaf) {
  std::string s(leaf);
  auto rank = s.rfind("-rank");
  if (rank != std::string::npos && rank + 5 < s.size() &&
      std::all_of(s.begin() + rank + 5, s.end(), ::isdigit))
    s.resize(rank);
  auto dot = s.rfind('.');
  if (dot != std::string::npos && dot + 1 < s.size() &&
      std::all_of(s.begin() + dot + 1, s.end(), ::isdigit))
    s.resize(dot);
  auto us = s.find('_');
  return us == std::string::npos ? s : s.substr(us + 1);
}

std::string RemediationReason(const FaultCause& cause, const std::string& node) {
  std::string msg = node;
  const std::string entity = !cause.port.empty() ? cause.port : cause.gpu;
  if (!entity.empty()) msg += ": " + entity;
  if (!cause.evidence.empty()) {
    std::string ev = cause.evidence.front();
    auto colon = ev.find(": ");  // "file:line: text" -> text
    msg += ": " + ShortEvidence(colon == std::string::npos ? ev : ev.substr(colon + 2));
  }
  return DrainReason(cause.category, msg);
}

namespace {

// Why the cause is not acted on at all ("" = it is: node-local, one node of the job, sure enough).
std::string WhyNotActing(const FaultCause& cause, const RemediationPolicy& policy,
                         const SlurmView& slurm, const Decision& d, double p) {
  if (policy.mode == OnNodeFault::kReport)
    return "--on-node-fault=report: the diagnosis is reported, nothing is drained or requeued";
  if (!d.node_local) {
    return fmt::format(
        "the first cause, {}, is not local to one node (an application bug or the fabric): "
        "reported, nothing drained or requeued",
        cause.category);
  }
  if (d.node.empty()) {
    return fmt::format("the first cause, {}, names no single node ({}): nothing drained",
                       cause.category, cause.entity_node.empty() ? "no node" : cause.entity_node);
  }
  if (p < policy.threshold) {
    return fmt::format(
        "the first cause's probability {:.2f} is below the threshold {:.2f} "
        "(--fault-threshold): nothing drained",
        p, policy.threshold);
  }
  if (!slurm.job_nodes.empty() &&
      std::find(slurm.job_nodes.begin(), slurm.job_nodes.end(), d.node) == slurm.job_nodes.end()) {
    return fmt::format(
        "the diagnosis names {}, which is not one of job {}'s nodes ({}): "
        "nothing drained",
        d.node, slurm.job_id, Join(slurm.job_nodes, ","));
  }
  return "";
}

// The requeue and the exclusion, unless the job may not be requeued or would not fit.
void PlanRequeue(const SlurmView& slurm, const std::set<std::string>& drained, Decision* d) {
  if (!slurm.requeue_allowed) {
    d->notes.push_back(
        fmt::format("job {} may not be requeued (Requeue=0: submit with --requeue or set "
                    "JobRequeue=1): not requeued",
                    slurm.job_id));
    return;
  }
  std::set<std::string> excluded(slurm.excluded.begin(), slurm.excluded.end());
  excluded.insert(d->node);
  int usable = 0;
  for (const auto& [name, node] : slurm.partition_nodes) {
    if (!node.out_of_service && !excluded.count(name) && !drained.count(name)) ++usable;
  }
  if (!slurm.partition_nodes.empty() && usable < slurm.job_num_nodes) {
    d->notes.push_back(
        fmt::format("not requeued: without {} partition {} has {} node(s) in service and job {} "
                    "asks for {}; no spare node to run it on",
                    d->node, slurm.partition.empty() ? "?" : slurm.partition, usable, slurm.job_id,
                    slurm.job_num_nodes));
    return;
  }
  d->actions.push_back({"requeue", "", {"requeue", slurm.job_id}});
  d->actions.push_back({"exclude",
                        d->node,
                        {"update", "jobid=" + slurm.job_id,
                         "ExcNodeList=" + Join({excluded.begin(), excluded.end()}, ",")}});
  d->decision = "requeue";
}

}  // namespace

Decision Decide(const FaultCause& cause, const RemediationPolicy& policy, const SlurmView& slurm,
                const RemediationHistory& history, std::optional<double> boosted) {
  Decision d;
  d.decision = "report";
  d.node_local = IsNodeLocalCategory(cause.category);
  const std::string run_dir_node = SingleNode(cause.entity_node);
  d.node = run_dir_node.empty() ? "" : SlurmNodeOfRunDir(run_dir_node);
  if (std::string why = WhyNotActing(cause, policy, slurm, d, boosted.value_or(cause.probability));
      !why.empty()) {
    d.notes.push_back(std::move(why));
    return d;
  }
  const bool requeues_left = history.requeues < policy.max_requeues;
  if (policy.mode == OnNodeFault::kRequeue && !requeues_left) {
    d.notes.push_back(
        fmt::format("job {} was requeued {} time(s) already, at most {} (--max-requeues): not "
                    "requeued again; it ends here",
                    slurm.job_id, history.requeues, policy.max_requeues));
  }
  const int job_nodes = std::max<int>(slurm.job_num_nodes, slurm.job_nodes.size());
  const int max_drain = std::max(1, job_nodes / 10);
  const std::set<std::string> drained(history.drained.begin(), history.drained.end());
  if (auto it = slurm.partition_nodes.find(d.node);
      it != slurm.partition_nodes.end() && it->second.out_of_service) {
    d.notes.push_back(fmt::format(
        "node {} is out of service already ({}{}): its reason stands, not drained again", d.node,
        it->second.state, it->second.reason.empty() ? "" : ": " + it->second.reason));
  } else if (!drained.count(d.node) && static_cast<int>(drained.size()) >= max_drain) {
    d.notes.push_back(fmt::format(
        "{} of job {}'s {} node(s) drained already ({}), at most {} may be: not draining {}, "
        "not requeued",
        drained.size(), slurm.job_id, job_nodes, Join(history.drained, ","), max_drain, d.node));
    return d;
  } else {
    d.drain_reason = RemediationReason(cause, d.node);
    d.actions.push_back(
        {"drain",
         d.node,
         {"update", "nodename=" + d.node, "state=drain", "reason=" + d.drain_reason}});
    d.decision = "drain";
  }
  if (policy.mode == OnNodeFault::kRequeue && requeues_left) PlanRequeue(slurm, drained, &d);
  return d;
}

SlurmView ParseSlurmJob(std::string_view text) {
  SlurmView v;
  v.job_id = Field(text, "JobId");
  v.job_nodes = Hosts(Field(text, "NodeList"));
  std::string num = Field(text, "NumNodes");
  auto dash = num.find('-');
  if (dash != std::string::npos) num.resize(dash);
  if (auto n = ParseInt(num); n.ok()) v.job_num_nodes = static_cast<int>(*n);
  v.partition = Field(text, "Partition");
  v.excluded = Hosts(Field(text, "ExcNodeList"));
  v.requeue_allowed = Field(text, "Requeue") != "0";
  return v;
}

std::map<std::string, SlurmNode> ParsePartitionNodes(std::string_view text,
                                                     const std::string& partition) {
  std::map<std::string, SlurmNode> out;
  for (const auto& line : SplitLines(text)) {
    const std::string name = Field(line, "NodeName");
    if (name.empty()) continue;
    const auto parts = Split(Field(line, "Partitions"), ',');
    if (!partition.empty() && std::find(parts.begin(), parts.end(), partition) == parts.end())
      continue;
    out[name] = ParseSlurmNode(line);
  }
  return out;
}

// ---- the report's section ----------------------------------------------------------------------

namespace {
constexpr std::string_view kMdMark = "\n<!-- safe-launch remediation -->\n";
constexpr std::string_view kHtmlBegin = "<!-- safe-launch remediation -->";
constexpr std::string_view kHtmlEnd = "<!-- /safe-launch remediation -->";

std::string WhyLine(const nlohmann::json& r) {
  const auto& w = r.value("why", nlohmann::json::object());
  return fmt::format(
      "{} on {} (probability {:.2f}{})", w.value("cause", "unknown"),
      w.value("node", "").empty() ? w.value("entity", "?") : w.value("node", ""),
      w.value("probability", 0.0),
      w.value("probability_from", "").empty() ? "" : "; " + w.value("probability_from", ""));
}
}  // namespace

std::string RemediationMarkdown(const nlohmann::json& r) {
  std::string md = "## Remediation\n\n";
  md += fmt::format(
      "**Decision: {}**{} (`--on-node-fault={}` from {}, threshold {:.2f}, at most "
      "{} requeue(s))\n\n",
      r.value("decision", "report"), r.value("dry_run", false) ? " (dry run)" : "",
      r.value("mode", "report"), r.value("mode_from", "default"), r.value("threshold", 0.8),
      r.value("max_requeues", 2));
  md += "Cause: " + WhyLine(r) + "\n\n";
  for (const auto& e :
       r.value("why", nlohmann::json::object()).value("evidence", nlohmann::json::array()))
    md += "- " + e.get<std::string>() + "\n";
  if (!ArrayMember(r, "actions").empty()) {
    md += "\nActions:\n\n";
    for (const auto& a : ArrayMember(r, "actions")) {
      if (!a.is_object()) continue;
      md += fmt::format("- `{}`: {}{}\n", a.value("command", ""),
                        !a.value("ran", false) ? "not run (dry run)"
                        : a.value("ok", false) ? "ok"
                                               : "FAILED",
                        a.value("output", "").empty() ? "" : " -- " + a.value("output", ""));
    }
  }
  if (!ArrayMember(r, "notes").empty()) {
    md += "\n";
    for (const auto& n : ArrayMember(r, "notes"))
      if (n.is_string()) md += "- " + n.get<std::string>() + "\n";
  }
  return md;
}

std::string RemediationHtml(const nlohmann::json& r) {
  using diagnose::fr::EscapeHtml;
  std::string h = "<section id=\"remediation\"><h2>Remediation</h2>\n";
  h += fmt::format("<p><b>Decision: {}</b>{} (--on-node-fault={} from {}, threshold {:.2f})</p>\n",
                   EscapeHtml(r.value("decision", "report")),
                   r.value("dry_run", false) ? " (dry run)" : "",
                   EscapeHtml(r.value("mode", "report")),
                   EscapeHtml(r.value("mode_from", "default")), r.value("threshold", 0.8));
  h += "<p>Cause: " + EscapeHtml(WhyLine(r)) + "</p>\n<ul>";
  for (const auto& a : ArrayMember(r, "actions")) {
    if (a.is_object()) {
      h += fmt::format("<li><code>{}</code>: {}</li>", EscapeHtml(a.value("command", "")),
                       !a.value("ran", false) ? "not run (dry run)"
                       : a.value("ok", false) ? "ok"
                                              : "FAILED: " + EscapeHtml(a.value("output", "")));
    }
  }
  for (const auto& n : ArrayMember(r, "notes"))
    if (n.is_string()) h += "<li>" + EscapeHtml(n.get<std::string>()) + "</li>";
  return h + "</ul></section>\n";
}

std::string WithRemediationMarkdown(std::string md, const nlohmann::json& r) {
  if (auto at = md.find(kMdMark); at != std::string::npos) md.resize(at);
  while (!md.empty() && md.back() == '\n') md.pop_back();
  return md + "\n" + std::string(kMdMark) + "\n" + RemediationMarkdown(r);
}

std::string WithRemediationHtml(std::string html, const nlohmann::json& r) {
  const std::string section =
      std::string(kHtmlBegin) + "\n" + RemediationHtml(r) + std::string(kHtmlEnd) + "\n";
  auto b = html.find(kHtmlBegin);
  auto e = html.find(kHtmlEnd);
  if (b != std::string::npos && e != std::string::npos && e > b) {
    std::size_t end = e + kHtmlEnd.size();
    if (end < html.size() && html[end] == '\n') ++end;
    return html.replace(b, end - b, section);
  }
  auto body = html.rfind("</body>");
  if (body == std::string::npos) return html + section;
  return html.insert(body, section);
}

// ---- reading, doing, recording ---------------------------------------------------------------

namespace {

void WriteRecord(const std::string& root, const nlohmann::json& record) {
  const DiskFileWriter writer;
  if (auto s = writer.WriteAtomic(root + "/remediation.json", JsonText(record) + "\n", 0644); !s) {
    log::Warn("remediation: remediation.json not written: {}", s.error().Describe());
  }
  const RootedFileReader fs("");
  for (const char* name : {"diagnosis.md", "diagnosis.html"}) {
    const std::string path = root + "/" + name;
    auto text = fs.ReadFile(path, 64 << 20);
    if (!text.ok()) continue;
    const std::string out = std::string_view(name).ends_with(".md")
                                ? WithRemediationMarkdown(*text, record)
                                : WithRemediationHtml(*text, record);
    if (auto s = writer.WriteAtomic(path, out, 0644); !s)
      log::Warn("remediation: {} not updated: {}", name, s.error().Describe());
  }
}

ActionResult RunAction(const PlannedAction& a, const RemediationInput& in, bool dry_run) {
  ActionResult r;
  r.action = a;
  if (dry_run) {
    log::Warn("remediation (dry run): would run: {}", CommandText(a.argv));
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  r.ran = true;
  if (a.kind == "drain") {
    // DrainNode asks the node's state once more: a human may have drained it meanwhile.
    const std::string reason = a.argv.back().substr(std::string_view("reason=").size());
    DrainOutcome o = DrainNode(a.node, reason, in.env, in.timeout_ms);
    r.ok = o.drained;
    r.output = o.drained       ? "drained"
               : o.already_out ? "out of service already: " + o.existing_reason
                               : o.error;
    if (o.already_out) r.ran = false;
  } else {
    // The requeue makes slurmstepd signal every process of this step in a burst: the scontrol
    // that sets ExcNodeList next (exit 143) and us (blocked, queued: a bounded child wait would
    // end at once on it). That SIGTERM is our own doing: taken and forgotten, and the scontrol
    // asked again within seconds; we live on until KillWait's SIGKILL.
    auto forget_requeue_signal = [&a] {
      if (a.kind != "exclude") return;
      (void)TakeStopSignal();
      ClearStopSignal();
    };
    forget_requeue_signal();
    auto out = RunScontrol(a.argv, in.env, in.timeout_ms);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    while (!out.ok() && a.kind == "exclude" && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      forget_requeue_signal();
      out = RunScontrol(a.argv, in.env, in.timeout_ms);
    }
    r.ok = out.ok();
    r.output = out.ok() ? std::string(Trim(*out)) : out.error().Describe();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void LogAction(const ActionResult& r, const Decision& d, const std::string& job,
               const RemediationHistory& h, const RemediationPolicy& policy) {
  if (!r.ran && !r.ok && r.output.empty()) return;  // dry run: said already
  const std::string& k = r.action.kind;
  if (!r.ok) {
    log::Warn("remediation: {} {} failed: {}", k, k == "requeue" ? job : r.action.node, r.output);
  } else if (k == "drain") {
    log::Warn("remediation: drained node {}: {}", r.action.node, d.drain_reason);
  } else if (k == "requeue") {
    log::Warn("remediation: requeued job {} (requeue {} of at most {})", job, h.requeues + 1,
              policy.max_requeues);
  } else if (k == "exclude") {
    log::Warn("remediation: job {} runs again without node {} ({})", job, r.action.node,
              r.action.argv.back());
  }
}

// The job's record and the partition's nodes (scontrol, bounded); what failed goes to the notes.
SlurmView ReadSlurmView(const RemediationInput& in, const RemediationPolicy& policy,
                        nlohmann::json* rec) {
  SlurmView slurm;
  slurm.job_id = in.job_id;
  if (policy.mode == OnNodeFault::kReport || in.job_id.empty()) return slurm;
  auto job = RunScontrol({"-o", "show", "job", in.job_id}, in.env, in.timeout_ms);
  if (!job.ok()) {
    (*rec)["notes"].push_back("job record unknown: " + job.error().Describe());
    return slurm;
  }
  slurm = ParseSlurmJob(*job);
  if (slurm.job_id.empty()) slurm.job_id = in.job_id;
  if (auto nodes = RunScontrol({"-o", "show", "node"}, in.env, in.timeout_ms); nodes.ok())
    slurm.partition_nodes = ParsePartitionNodes(*nodes, slurm.partition);
  else
    (*rec)["notes"].push_back("node states unknown: " + nodes.error().Describe());
  return slurm;
}

// Writes `rec` with `a` added as asked and not answered ("pending"); `rec` itself is unchanged.
void WriteAsked(const PlannedAction& a, const std::string& run_root, const nlohmann::json& rec) {
  ActionResult asked;
  asked.action = a;
  asked.ran = true;
  asked.output = "asked; the requeue may end this step before scontrol's answer is written";
  nlohmann::json pending = ActionJson(asked);
  pending["pending"] = true;
  nlohmann::json with_pending = rec;
  with_pending["actions"].push_back(std::move(pending));
  WriteRecord(run_root, with_pending);
}

// A preflight (on the node it names) or warm-up that refused the job would refuse it there
// again: probability 1, whatever the diagnosis' table gives a standing condition.
std::optional<double> RefusalProbability(const RemediationInput& in, const FaultCause& cause,
                                         std::string* why) {
  const std::string named = SlurmNodeOfRunDir(SingleNode(cause.entity_node));
  if (named.empty()) return std::nullopt;
  const bool from_warmup =
      std::any_of(cause.rules.begin(), cause.rules.end(),
                  [](const std::string& r) { return StartsWith(r, "warmup"); });
  if (in.refused_by == "preflight" && named == in.self_node) {
    *why = "the preflight refused the job on this node and would refuse it again";
    return 1.0;
  }
  if (in.refused_by == "warmup" && from_warmup) {
    *why = "the warm-up refused the job naming this node and would refuse it again";
    return 1.0;
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json Remediate(const RemediationInput& in, const RemediationPolicy& policy) {
  const double started = Now();
  nlohmann::json rec = {{"schema", "safe-launch.remediation/1"},
                        {"job_id", in.job_id},
                        {"mode", OnNodeFaultName(policy.mode)},
                        {"mode_from", policy.source.empty() ? "default" : policy.source},
                        {"threshold", policy.threshold},
                        {"max_requeues", policy.max_requeues},
                        {"dry_run", policy.dry_run},
                        {"acting_node", in.self_node},
                        {"declared_unix", in.declared_unix},
                        {"started_unix", started},
                        {"actions", nlohmann::json::array()},
                        {"notes", nlohmann::json::array()}};
  const RootedFileReader fs("");
  auto text = fs.ReadFile(in.run_root + "/diagnosis.json", 64 << 20);
  nlohmann::json diagnosis =
      text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  auto cause = FirstCause(diagnosis);
  if (!cause.ok()) {
    rec["decision"] = "report";
    rec["notes"].push_back("no diagnosis to act on (" + in.run_root + "/diagnosis.json: " +
                           (text.ok() ? cause.error().message : text.error().Describe()) + ")");
    log::Warn("remediation: nothing done: {}", rec["notes"][0].get<std::string>());
    WriteRecord(in.run_root, rec);
    return rec;
  }
  const SlurmView slurm = ReadSlurmView(in, policy, &rec);
  const RemediationHistory history = ReadHistory(in.run_root);
  std::string boost_why;
  const std::optional<double> boost = RefusalProbability(in, *cause, &boost_why);
  const std::string named = SlurmNodeOfRunDir(SingleNode(cause->entity_node));
  Decision d = Decide(*cause, policy, slurm, history, boost);
  if (in.refused_by == "preflight" && !named.empty() && !in.self_node.empty() &&
      named != in.self_node) {
    // Every node whose preflight failed runs this; the named node acts for itself.
    d.decision = "report";
    d.actions.clear();
    d.notes.push_back("the diagnosis names " + named + ", not this node (" + in.self_node +
                      "): left to that node");
  }
  rec["decision"] = d.decision;
  rec["why"] = {{"cause", cause->category},
                {"node", d.node},
                {"entity", cause->entity_node},
                {"port", cause->port},
                {"gpu", cause->gpu},
                {"probability", boost.value_or(cause->probability)},
                {"diagnosis_probability", cause->probability},
                {"probability_from", boost_why},
                {"node_local", d.node_local},
                {"evidence", cause->evidence},
                {"rules", cause->rules}};
  rec["drain_reason"] = d.drain_reason;
  rec["history"] = {{"requeues_before", history.requeues}, {"drained_before", history.drained}};
  for (const auto& n : d.notes) rec["notes"].push_back(n);
  if (d.actions.empty()) {
    for (const auto& n : d.notes) log::Warn("remediation: nothing done: {}", n);
  } else {
    for (const auto& n : d.notes) log::Warn("remediation: {}", n);
  }
  WriteRecord(in.run_root, rec);
  for (const auto& a : d.actions) {
    // The record first: a requeue ends this job step (our own process among them), and
    // slurmstepd's SIGKILL may come before scontrol's answer (KillWait after its SIGTERM). The
    // requeue is written as asked before it is, so that the next attempt counts it towards
    // --max-requeues (ReadHistory) even when this process never writes the outcome.
    if (a.kind == "requeue" && !policy.dry_run) WriteAsked(a, in.run_root, rec);
    ActionResult r = RunAction(a, in, policy.dry_run);
    if (a.kind == "requeue" && r.ran) rec["requeued_unix"] = Now();
    rec["actions"].push_back(ActionJson(r));
    LogAction(r, d, slurm.job_id, history, policy);
    WriteRecord(in.run_root, rec);
  }
  rec["finished_unix"] = Now();
  WriteRecord(in.run_root, rec);
  return rec;
}

}  // namespace sl::launcher
