#include "diagnose/flight_recorder/report.h"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace sl::diagnose::fr {

namespace {

std::string PgLabel(const PgFinding& f) {
  return f.desc.empty() || f.desc == f.pg ? fmt::format("PG {}", f.pg)
                                          : fmt::format("PG {} ({})", f.pg, f.desc);
}

// "nccl:all_reduce" -> "ALLREDUCE", as NCCL's own logs name collectives.
std::string OpLabel(std::string_view op) {
  std::size_t colon = op.find(':');
  if (colon != std::string_view::npos) op.remove_prefix(colon + 1);
  std::string out;
  for (char c : op) {
    if (c == ' ') break;
    if (c != '_') out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

// "[[6553600]] Float -> [[6553600]] Float" from "in_sizes|in_dtypes|out_sizes|out_dtypes".
std::string ShapeLabel(const std::string& shape) {
  auto p = Split(shape, '|', false);
  while (p.size() < 4) p.emplace_back();
  auto strip = [](std::string s) {
    if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
    return s;
  };
  return fmt::format("{} {} -> {} {}", p[0], strip(p[1]), p[2], strip(p[3]));
}

// The frame a person would look at: the innermost one outside torch itself.
std::string UserFrame(const FrAnalysis& a, std::uint32_t stack) {
  const auto& frames = a.stacks->at(stack);
  if (frames.empty()) return "";
  const Frame* pick = &frames.front();
  for (const Frame& fr : frames) {
    if (a.Str(fr.file).find("/torch/") == std::string::npos) {
      pick = &fr;
      break;
    }
  }
  return fmt::format("{}:{} in {}", a.Str(pick->file), pick->line, a.Str(pick->name));
}

std::vector<EvidenceItem> Samples(const FrAnalysis& a, const PgFinding& f) {
  std::vector<EvidenceItem> out;
  for (const auto& [rank, index] : f.samples) {
    const RankDump* d = a.DumpOf(rank);
    if (!d || index >= d->entries.size()) continue;
    std::string text = fmt::format("rank {}: {}", rank, DescribeEntry(a, *d, index));
    std::string where = UserFrame(a, d->entries[index].frames);
    if (!where.empty()) text += " at " + where;
    out.push_back({d->file, index, text});
  }
  return out;
}

Cause DesyncCause(const FrAnalysis& a, const PgFinding& f) {
  std::vector<int> odd;
  for (const OddRank& o : f.odd) odd.push_back(o.rank);
  const OddRank& o = f.odd.front();
  Cause c;
  c.rule = "fr.desync";
  c.category = "desync_collective_mismatch";
  c.confidence = 0.9;
  c.entity = a.DescribeRanks(odd);
  c.message =
      fmt::format("{} entered {} {} at #{} of {} where {} other ranks entered {} {} ({} differ)",
                  c.entity, a.Str(o.op), ShapeLabel(a.Str(o.shape)), f.seq, PgLabel(f),
                  f.entered.size() - f.odd.size(), a.Str(f.op), ShapeLabel(a.Str(f.shape)),
                  f.mismatch == "op" ? "the ops" : "the " + f.mismatch);
  c.fix =
      "make every rank call the same collectives in the same order with the same sizes and "
      "dtypes (a rank-dependent branch, data-dependent shapes, or an unbalanced uneven last "
      "batch); the Python frames of both sides are in the evidence";
  c.evidence = Samples(a, f);
  return c;
}

Cause LaggardCause(const FrAnalysis& a, const PgFinding& f) {
  Cause c;
  c.rule = "fr.laggard";
  c.category = "straggler_or_slow_rank";
  c.confidence = 0.8;
  c.entity = a.DescribeRanks(f.never_entered);
  c.message = fmt::format("{} never entered {}; {} ranks entered it and are waiting ({} completed)",
                          c.entity, CollectiveName(a, f), f.entered.size(), f.completed.size());
  c.fix =
      "find what the late rank was doing instead (its stack in the hang bundle, its last "
      "Flight Recorder entry below): evaluation, checkpointing or data loading on one rank; "
      "move that work or raise the process-group timeout where it is expected";
  c.evidence = Samples(a, f);
  return c;
}

Cause MissingCause(const FrAnalysis& a, const PgFinding& f, double confidence) {
  Cause c;
  c.rule = "fr.missing_dump";
  c.category = "oom_or_crash_other_rank";
  c.confidence = confidence;
  c.entity = a.DescribeRanks(f.no_dump);
  c.message = fmt::format(
      "{} wrote no readable Flight Recorder dump while every rank that did ({}) is in {}: "
      "they probably died (OOM, crash) or hung before dumping",
      c.entity, f.entered.size(), CollectiveName(a, f));
  c.fix =
      "look at the first rank that died: its log (the first error), the kernel log of its "
      "node (OOM killer, Xid), its exit status in the job's output";
  c.evidence = Samples(a, f);
  for (int r : f.no_dump) {
    if (c.evidence.size() >= 6) break;
    c.evidence.push_back({"", -1, fmt::format("rank {}: no dump", r)});
  }
  return c;
}

std::string TimingNote(const PgFinding& f) {
  return f.starts_recorded ? ""
                           : " (torch records a GPU start only with TORCH_NCCL_ENABLE_TIMING=1; "
                             "without it \"scheduled\" means not completed yet)";
}

// A group of one rank: nothing goes over the network, so the rank's own GPU holds it.
void OneRankCauses(const FrAnalysis& a, const PgFinding& f, std::vector<Cause>* out) {
  const std::string coll = CollectiveName(a, f);
  const std::string timing_note = TimingNote(f);
  const bool started = !f.started.empty();
  const std::string entity = a.DescribeRanks(f.members);
  {
    Cause c;
    c.category = started ? "gpu_xid_or_driver" : "straggler_or_slow_rank";
    c.rule = started ? "fr.one_rank_started_not_completed" : "fr.one_rank_not_started";
    c.confidence = started ? 0.45 : 0.55;
    c.entity = entity;
    c.message = started ? fmt::format(
                              "{} is a group of one rank ({}): {} started on its GPU and never "
                              "completed; with no peer to wait for, the GPU or driver is stuck",
                              PgLabel(f), c.entity, coll)
                        : fmt::format(
                              "{} is a group of one rank ({}): {} never started on its GPU "
                              "(state {}){}, so it waits behind the rank's own earlier work on "
                              "its stream (a long or hung kernel), not in the transport: a "
                              "one-rank collective sends nothing over the network",
                              PgLabel(f), c.entity, coll, f.states_kept ? "scheduled" : "unknown",
                              timing_note);
    c.fix = started ? "check the GPU: nvidia-smi, Xid lines in the kernel log; reset or drain the "
                      "node when it does not recover"
                    : "find the GPU work queued before the collective on this rank (its stack "
                      "in the hang bundle, a profiler trace): a kernel that runs long or never "
                      "ends; raise the process-group timeout where long work is expected";
    c.evidence = Samples(a, f);
    out->push_back(std::move(c));
    if (!started) {
      Cause g;
      g.category = "gpu_xid_or_driver";
      g.rule = "fr.one_rank_not_started_gpu";
      g.confidence = 0.25;
      g.entity = entity;
      g.message = fmt::format("a wedged GPU or driver would also keep {} from starting on {}'s GPU",
                              coll, entity);
      g.fix =
          "nvidia-smi and the kernel log (Xid, NVRM) on the rank's node tell a hung GPU "
          "from long work";
      g.evidence = Samples(a, f);
      out->push_back(std::move(g));
    }
  }
}

// Every member entered and none completed. Where the time goes is in the entries' states
// (NCCL keeps them, Gloo does not): a collective "started" on every GPU and not completed is
// stuck in the transport; one still "scheduled" on some ranks while others started it is queued
// behind their own GPU work; and a group of one rank has no transport to be stuck in.
void StuckCauses(const FrAnalysis& a, const PgFinding& f, std::vector<Cause>* out) {
  if (f.members.size() == 1) {
    OneRankCauses(a, f, out);
    return;
  }
  const std::string coll = CollectiveName(a, f);
  const std::string timing_note = TimingNote(f);
  std::vector<int> queued;  // entered, neither started nor completed on its GPU
  for (int r : f.entered) {
    if (!std::binary_search(f.started.begin(), f.started.end(), r)) queued.push_back(r);
  }
  if (f.states_kept && !f.started.empty() && !queued.empty()) {
    Cause c;
    c.category = "straggler_or_slow_rank";
    c.rule = "fr.not_started_on_some_gpus";
    c.confidence = 0.7;
    c.entity = a.DescribeRanks(queued);
    c.message = fmt::format(
        "{} entered {} but it never started on their GPU (state scheduled) while {} started it "
        "and wait: the late ranks' streams are busy with earlier work",
        c.entity, coll, a.DescribeRanks(f.started));
    c.fix =
        "find the GPU work queued before the collective on the late ranks (their stacks in "
        "the hang bundle, a profiler trace): uneven compute, a long kernel, a slow GPU";
    c.evidence = Samples(a, f);
    out->push_back(std::move(c));
    return;
  }
  if (f.states_kept && f.starts_recorded && f.started.empty()) {
    Cause c;
    c.category = "gpu_xid_or_driver";
    c.rule = "fr.not_started_on_any_gpu";
    c.confidence = 0.3;
    c.entity = fmt::format("{} ({} ranks)", PgLabel(f), f.entered.size());
    c.message = fmt::format(
        "every rank of {} entered {} and it started on none of their GPUs (state scheduled, "
        "starts recorded): the GPUs are busy with earlier work, not the transport",
        PgLabel(f), coll);
    c.fix =
        "look at what runs on the GPUs before the collective (stacks, nvidia-smi, a "
        "profiler trace) and at the kernel log (Xid)";
    c.evidence = Samples(a, f);
    out->push_back(std::move(c));
    return;
  }
  Cause c;
  c.rule = "fr.stuck_all";
  c.category = "retry_exceeded_network";
  c.confidence = f.states_kept && !f.started.empty() ? 0.55 : 0.5;
  c.entity = fmt::format("{} ({} ranks)", PgLabel(f), f.entered.size());
  c.message = f.states_kept && !f.started.empty()
                  ? fmt::format(
                        "every rank of {} entered {} with the same op and sizes, it started on "
                        "every GPU and none completed it: the collective is stuck in the "
                        "transport (network/fabric suspect)",
                        PgLabel(f), coll)
                  : fmt::format(
                        "every rank of {} entered {} with the same op and sizes and none "
                        "completed it: the program is consistent, the collective is stuck in the "
                        "transport (network/fabric suspect){}",
                        PgLabel(f), coll, f.states_kept ? timing_note : "");
  c.fix =
      "check the fabric between these ranks' nodes: IB port state and error counters "
      "(`safe-launch preflight` on every node), NCCL_DEBUG=INFO transport and retry lines, "
      "NCCL_IB_TIMEOUT; the dumps alone cannot name the link";
  c.evidence = Samples(a, f);
  out->push_back(std::move(c));
}

Cause PartialCause(const FrAnalysis& a, const PgFinding& f) {
  std::vector<int> waiting;
  for (int r : f.entered) {
    if (!std::binary_search(f.completed.begin(), f.completed.end(), r)) waiting.push_back(r);
  }
  Cause c;
  c.rule = "fr.partial";
  c.category = "unknown";
  c.confidence = 0.3;
  c.entity = a.DescribeRanks(waiting);
  c.message = fmt::format("{} have not completed {} while {} ranks did", c.entity,
                          CollectiveName(a, f), f.completed.size());
  c.fix = "evidence that would decide: the stacks of the waiting ranks, NCCL_DEBUG=INFO logs";
  c.evidence = Samples(a, f);
  return c;
}

}  // namespace

std::string CollectiveName(const FrAnalysis& a, const PgFinding& f) {
  if (f.p2p) return fmt::format("p2p #{} ({}) in {}", f.seq, a.Str(f.op), PgLabel(f));
  return fmt::format("{} #{} in {}", OpLabel(a.Str(f.op)), f.seq, PgLabel(f));
}

std::string DescribeEntry(const FrAnalysis& a, const RankDump& d, std::uint32_t index) {
  const Entry& e = d.entries[index];
  return fmt::format("entries[{}] PG {} {}#{} {} {} {}", index, a.Str(e.pg), e.is_p2p ? "p2p " : "",
                     e.seq, a.Str(e.op), d.gloo ? "(gloo: state not kept)" : StateName(e.state),
                     ShapeLabel(a.Str(e.shape)));
}

std::vector<Cause> FlightRecorderCauses(const FrAnalysis& a) {
  std::vector<Cause> out;
  for (const PgFinding& f : a.findings) {
    switch (f.verdict) {
      case PgVerdict::kDesync:
        out.push_back(DesyncCause(a, f));
        break;
      case PgVerdict::kLaggard:
        out.push_back(LaggardCause(a, f));
        break;
      case PgVerdict::kMissingDump:
        out.push_back(MissingCause(a, f, 0.6));
        break;
      case PgVerdict::kStuckAll:
        StuckCauses(a, f, &out);
        break;
      case PgVerdict::kPartial:
        out.push_back(PartialCause(a, f));
        break;
      case PgVerdict::kHealthy:
        break;
    }
    // Ranks without a dump next to another finding: named, at lower confidence.
    if (f.verdict != PgVerdict::kHealthy && f.verdict != PgVerdict::kMissingDump &&
        !f.no_dump.empty()) {
      out.push_back(MissingCause(a, f, 0.4));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Cause& x, const Cause& y) { return x.confidence > y.confidence; });
  return out;
}

nlohmann::json DiagnosisJson(const FrAnalysis& a, const std::vector<Cause>& causes) {
  nlohmann::json j;
  j["schema"] = "safe-launch.diagnosis/1";
  j["source"] = "flight_recorder";
  j["verdict"] = causes.empty() ? "healthy" : causes.front().category;
  j["causes"] = nlohmann::json::array();
  for (const Cause& c : causes) {
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : c.evidence)
      ev.push_back({{"file", e.file}, {"line", e.line}, {"text", e.text}});
    j["causes"].push_back({{"category", c.category},
                           {"confidence", c.confidence},
                           {"entity", c.entity},
                           {"message", c.message},
                           {"evidence", ev},
                           {"fix", c.fix}});
  }
  nlohmann::json fr;
  fr["dumps"] = a.dumps.size();
  fr["world_size"] = a.world_size;
  fr["missing_ranks"] = a.missing;
  fr["errors"] = nlohmann::json::array();
  for (const auto& e : a.errors) {
    fr["errors"].push_back({{"file", e.file}, {"offset", e.offset}, {"message", e.message}});
  }
  fr["notes"] = a.notes;
  fr["process_groups"] = nlohmann::json::array();
  for (const PgFinding& f : a.findings) {
    nlohmann::json odd = nlohmann::json::array();
    for (const OddRank& o : f.odd) {
      odd.push_back({{"rank", o.rank}, {"op", a.Str(o.op)}, {"shape", a.Str(o.shape)}});
    }
    fr["process_groups"].push_back({{"pg", f.pg},
                                    {"desc", f.desc},
                                    {"p2p", f.p2p},
                                    {"verdict", PgVerdictName(f.verdict)},
                                    {"seq", f.seq},
                                    {"op", f.seq < 0 ? "" : a.Str(f.op)},
                                    {"shape", f.seq < 0 ? "" : a.Str(f.shape)},
                                    {"members", f.members.size()},
                                    {"entered", f.entered.size()},
                                    {"completed", f.completed.size()},
                                    {"never_entered", f.never_entered},
                                    {"no_dump", f.no_dump},
                                    {"odd", odd}});
  }
  fr["ranks"] = nlohmann::json::array();
  for (const RankDump& d : a.dumps) {
    nlohmann::json last = nlohmann::json::object();
    for (const PgStatus& s : d.status) {
      last[a.Str(s.pg)] = {
          {"enqueued", s.enqueued}, {"started", s.started}, {"completed", s.completed}};
    }
    fr["ranks"].push_back({{"rank", d.rank},
                           {"host", d.host},
                           {"file", d.file},
                           {"version", d.version},
                           {"entries", d.entries.size()},
                           {"last", last}});
  }
  fr["timing_s"] = {{"read", a.read_s}, {"analyse", a.analyse_s}};
  j["flight_recorder"] = std::move(fr);
  return j;
}

std::string DiagnosisText(const FrAnalysis& a, const std::vector<Cause>& causes) {
  std::string out = fmt::format(
      "Flight Recorder: {} dumps read ({} unreadable), world of {} ranks, {} without a dump\n",
      a.dumps.size(), a.errors.size(), a.world_size, a.missing.size());
  if (causes.empty()) {
    out += "VERDICT: no stuck collective: every collective in the dumps completed on every rank\n";
  }
  for (std::size_t i = 0; i < causes.size(); ++i) {
    const Cause& c = causes[i];
    out += fmt::format("{} {} (confidence {:.2f}): {}\n", i == 0 ? "VERDICT:" : "also:", c.category,
                       c.confidence, c.message);
    out += fmt::format("  fix: {}\n", c.fix);
    for (const auto& e : c.evidence) {
      out += e.file.empty() ? fmt::format("  - {}\n", e.text)
                            : fmt::format("  - {}: {}\n", e.file, e.text);
    }
  }
  std::size_t healthy = 0;
  for (const PgFinding& f : a.findings) {
    if (f.verdict == PgVerdict::kHealthy) {
      ++healthy;
      continue;
    }
    out += fmt::format("{}{}: {} at {}: {} members, {} entered, {} completed\n", PgLabel(f),
                       f.p2p ? " p2p" : "", PgVerdictName(f.verdict), CollectiveName(a, f),
                       f.members.size(), f.entered.size(), f.completed.size());
  }
  if (healthy) out += fmt::format("{} other process group(s): healthy\n", healthy);
  if (const PgFinding* top = a.Top()) {
    // pg_status of the ranks the verdict names: where each one's own counters stopped.
    std::vector<int> named = top->never_entered;
    for (const OddRank& o : top->odd) named.push_back(o.rank);
    if (named.size() > 8) named.resize(8);
    for (int r : named) {
      const RankDump* d = a.DumpOf(r);
      if (!d) continue;
      for (const PgStatus& st : d->status) {
        if (a.Str(st.pg) != top->pg) continue;
        out += fmt::format("rank {} PG {}: last enqueued #{}, started #{}, completed #{}\n", r,
                           top->pg, st.enqueued, st.started, st.completed);
      }
    }
  }
  if (!a.missing.empty()) out += fmt::format("no dump: ranks {}\n", RankRanges(a.missing));
  for (const auto& e : a.errors) {
    out += e.offset >= 0
               ? fmt::format("unreadable: {} at byte {}: {}\n", e.file, e.offset, e.message)
               : fmt::format("unreadable: {}: {}\n", e.file, e.message);
  }
  for (const auto& n : a.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace sl::diagnose::fr
