#include "diagnose/stacks_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/strings.h"

namespace sl::diagnose {

namespace {

// torch.distributed's Python entry points that block until the other ranks take part (and
// Work.wait / the autograd engine's wait for DDP's bucketed all-reduces).
constexpr std::string_view kCollectives[] = {"all_reduce",
                                             "all_gather",
                                             "all_gather_into_tensor",
                                             "_all_gather_base",
                                             "all_gather_object",
                                             "reduce_scatter",
                                             "reduce_scatter_tensor",
                                             "_reduce_scatter_base",
                                             "broadcast",
                                             "broadcast_object_list",
                                             "barrier",
                                             "monitored_barrier",
                                             "all_to_all",
                                             "all_to_all_single",
                                             "reduce",
                                             "gather",
                                             "gather_object",
                                             "scatter",
                                             "scatter_object_list",
                                             "send",
                                             "recv",
                                             "isend",
                                             "irecv",
                                             "batch_isend_irecv",
                                             "wait"};

bool InTorchDistributed(const PyFrame& f) {
  return f.file.find("torch/distributed/") != std::string::npos;
}

bool InTorch(const PyFrame& f) {
  return f.file.find("/torch/") != std::string::npos || StartsWith(f.file, "torch/");
}

// The collective a main thread waits in: the innermost torch.distributed frame named like one;
// DDP's backward waits for its all-reduces inside the autograd engine.
std::string CollectiveOf(const PyThread& t) {
  for (const PyFrame& f : t.frames) {
    if (f.native || !InTorchDistributed(f)) continue;
    for (std::string_view c : kCollectives) {
      if (f.function == c) return f.function;
    }
  }
  return "";
}

bool Contains(const std::string& s, std::initializer_list<std::string_view> words) {
  const std::string lc = ToLower(s);
  for (std::string_view w : words) {
    if (lc.find(w) != std::string::npos) return true;
  }
  return false;
}

// What a main thread outside a collective is busy with, from its frames (innermost first) and
// the kernel's wchan. Frames only hint: a user's own function names count too.
std::string ActivityOf(const PyThread& t, const std::string& wchan) {
  for (const PyFrame& f : t.frames) {
    if (f.file.find("torch/utils/data/") != std::string::npos) return "data loading";
    // Frameworks' own loaders (fairseq/data/iterators.py, a datasets/ module) iterating.
    if (!f.native && Contains(f.file, {"/data/", "dataloader", "dataset", "data_loader"}) &&
        (f.function == "__next__" || f.function == "__iter__" || f.function == "_next_data")) {
      return "data loading";
    }
    if (f.file.find("torch/serialization.py") != std::string::npos &&
        Contains(f.function, {"save"})) {
      return "checkpoint save";
    }
    if (f.file.find("torch/distributed/checkpoint/") != std::string::npos ||
        Contains(f.function, {"checkpoint", "save_model", "save_state"})) {
      return "checkpoint save";
    }
    if (Contains(f.function, {"evaluat", "validat"})) return "evaluation";
    if (f.native && Contains(f.function, {"nanosleep", "usleep"})) return "sleep";
  }
  if (Contains(wchan, {"nanosleep"})) return "sleep";
  if (Contains(wchan, {"nfs", "lustre", "gpfs", "fuse", "io_schedule", "folio", "page_bit", "jbd2",
                       "ext4", "xfs", "btrfs", "blk_"})) {
    return "file I/O";
  }
  for (const PyFrame& f : t.frames) {
    if (f.native && Contains(f.function, {"__libc_write", "__libc_read", "fsync", "pwrite", "pread",
                                          "__write", "__read"})) {
      return "file I/O";
    }
  }
  return "";
}

// "train.py:29 in <module>": the innermost frame that is the user's (outside torch).
std::string WhereOf(const PyThread& t) {
  const PyFrame* pick = nullptr;
  for (const PyFrame& f : t.frames) {
    if (f.native) continue;
    if (!pick) pick = &f;
    if (!InTorch(f)) {
      pick = &f;
      break;
    }
  }
  return pick ? fmt::format("{}:{} in {}", pick->file, pick->line, pick->function) : "";
}

std::string FirstFrameKey(const PyThread& t) {
  for (const PyFrame& f : t.frames) {
    if (!f.native) return fmt::format("{}:{}:{}", f.file, f.line, f.function);
  }
  return "(no Python frame)";
}

// How a claim names the process: "rank 3", or for stacks pasted into a log, which does not say
// the rank, "process 4242" (py-spy's pid) or "the process".
std::string Who(const RankStacks& r) {
  if (!r.pasted) return fmt::format("rank {}", r.rank);
  return r.pid > 0 ? fmt::format("process {}", r.pid) : std::string("the process");
}

// The rank's main-thread frames as cited lines (innermost first, at most `n`).
std::vector<EvidenceLine> StackLines(const RankStacks& r, std::size_t n) {
  std::vector<EvidenceLine> out;
  const PyThread* m = r.stacks.Main();
  if (!m) return out;
  for (const PyFrame& f : m->frames) {
    if (out.size() >= n) break;
    out.push_back({r.file, f.line_no, fmt::format("{} main thread: {}", Who(r), f.text), ""});
  }
  if (!r.wchan.empty() && out.size() < n + 1) {
    out.push_back(
        {r.file, 0, fmt::format("{} main thread in the kernel: wchan {}", Who(r), r.wchan), ""});
  }
  return out;
}

std::string RankList(const std::vector<const RankStacks*>& rs) {
  std::vector<int> ranks;
  for (const RankStacks* r : rs) {
    if (!r->pasted) ranks.push_back(r->rank);  // a pasted dump's place is not a rank
  }
  std::sort(ranks.begin(), ranks.end());
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

// "rank 3", "ranks 1-2, 5", "process 4242, process 4250".
std::string WhoList(const std::vector<const RankStacks*>& rs) {
  if (!rs.empty() && !rs.front()->pasted) {
    return fmt::format("{} {}", rs.size() == 1 ? "rank" : "ranks", RankList(rs));
  }
  std::vector<std::string> names;
  for (const RankStacks* r : rs) names.push_back(Who(*r));
  return Join(names, ", ");
}

std::string NodesOf(const std::vector<const RankStacks*>& rs) {
  std::set<std::string> nodes;
  for (const RankStacks* r : rs) {
    if (!r->node.empty()) nodes.insert(r->node);
  }
  return Join(std::vector<std::string>(nodes.begin(), nodes.end()), ", ");
}

struct Placed {
  const RankStacks* rank;
  MainPlace place;
};

}  // namespace

std::optional<MainPlace> PlaceOf(const RankStacks& r) {
  const PyThread* m = r.stacks.Main();
  if (!m) return std::nullopt;
  MainPlace p;
  p.collective = CollectiveOf(*m);
  p.waiting = !p.collective.empty();
  p.key = p.waiting ? "collective " + p.collective : FirstFrameKey(*m);
  p.activity = p.waiting ? "" : ActivityOf(*m, r.wchan);
  p.where = WhereOf(*m);
  return p;
}

namespace {

// Where the others wait: the collective most main threads are in, and one of them to cite.
struct Waiting {
  std::map<std::string, std::vector<const Placed*>> by_key;
  const std::vector<const Placed*>* major = nullptr;
  std::vector<const Placed*> elsewhere;
  const Placed* ref = nullptr;
  std::string text;  // "all_reduce (1 waiting: rank 0 at train.py:31 in step)"
  std::vector<EvidenceLine> ref_lines;
};

CauseClaim ElsewhereClaim(const Waiting& w) {
  std::vector<const RankStacks*> late;
  for (const Placed* p : w.elsewhere) late.push_back(p->rank);
  CauseClaim c;
  c.source = "stacks";
  c.rule = "stacks.main_thread_elsewhere";
  c.category = "straggler_or_slow_rank";
  // A minority elsewhere is the classic straggler; when most ranks are elsewhere the ones in
  // the collective are merely early, and the stacks say less.
  c.confidence = w.elsewhere.size() <= w.major->size() ? 0.75 : 0.45;
  c.entity.rank = RankList(late);
  c.entity.node = NodesOf(late);
  std::vector<std::string> doing;
  for (const Placed* p : w.elsewhere) {
    if (doing.size() >= 4) break;
    doing.push_back(fmt::format("{} at {}{}", Who(*p->rank), p->place.where,
                                p->place.activity.empty() ? "" : " (" + p->place.activity + ")"));
  }
  c.why = fmt::format(
      "The main thread of {} is not in a collective ({}) while the others wait in {}: the job "
      "waits for {}.",
      WhoList(late), Join(doing, "; "), w.text, late.size() == 1 ? "it" : "them");
  for (const Placed* p : w.elsewhere) {
    for (auto& l : StackLines(*p->rank, 6)) {
      if (c.evidence.size() < 10) c.evidence.push_back(std::move(l));
    }
  }
  for (const auto& l : w.ref_lines) c.evidence.push_back(l);
  return c;
}

CauseClaim DifferentCollectivesClaim(const Waiting& w) {
  std::vector<const RankStacks*> odd;
  std::vector<std::string> what;
  for (const auto& [key, ps] : w.by_key) {
    if (&ps == w.major) continue;
    for (const Placed* p : ps) {
      odd.push_back(p->rank);
      what.push_back(
          fmt::format("{} in {} at {}", Who(*p->rank), p->place.collective, p->place.where));
    }
  }
  CauseClaim c;
  c.source = "stacks";
  c.rule = "stacks.different_collectives";
  c.category = "desync_collective_mismatch";
  c.confidence = 0.6;
  c.entity.rank = RankList(odd);
  c.entity.node = NodesOf(odd);
  if (what.size() > 4) what.resize(4);
  c.why = fmt::format("Ranks wait in different collectives: {} while {} wait in {}.",
                      Join(what, "; "), w.major->size(), w.ref->place.collective);
  for (const RankStacks* r : odd) {
    for (auto& l : StackLines(*r, 3)) {
      if (c.evidence.size() < 9) c.evidence.push_back(std::move(l));
    }
  }
  for (const auto& l : w.ref_lines) c.evidence.push_back(l);
  return c;
}

CauseClaim SameCollectiveClaim(const Waiting& w, const std::vector<Placed>& placed) {
  std::vector<const RankStacks*> all;
  for (const Placed& p : placed) all.push_back(p.rank);
  CauseClaim c;
  c.source = "stacks";
  c.rule = "stacks.all_wait_in_same_collective";
  c.category = "retry_exceeded_network";
  c.confidence = 0.4;
  c.entity.rank = RankList(all);
  c.entity.node = NodesOf(all);
  c.why = fmt::format(
      "The main thread of every rank with stacks ({}) waits in {} and none is elsewhere: the "
      "program is consistent and made no progress, which points to the fabric between them.",
      placed.size(), w.ref->place.collective);
  c.evidence = w.ref_lines;
  return c;
}

}  // namespace

std::vector<CauseClaim> StacksClaims(const std::vector<RankStacks>& ranks) {
  std::vector<Placed> placed;
  for (const RankStacks& r : ranks) {
    if (auto p = PlaceOf(r)) placed.push_back({&r, std::move(*p)});
  }
  std::vector<CauseClaim> out;
  if (placed.size() < 2) return out;  // one rank waits for nobody: no comparison to make
  Waiting w;
  for (const Placed& p : placed) {
    (p.place.waiting ? w.by_key[p.place.key] : w.elsewhere).push_back(&p);
  }
  if (w.by_key.empty()) return out;  // nobody waits for anybody: the stacks do not decide
  // Ties go to the lower key, so the answer never depends on file order.
  for (const auto& [key, ps] : w.by_key) {
    if (!w.major || ps.size() > w.major->size()) w.major = &ps;
  }
  w.ref = w.major->front();
  w.text = fmt::format("{} ({} waiting: {} at {})", w.ref->place.collective, w.major->size(),
                       Who(*w.ref->rank), w.ref->place.where);
  w.ref_lines = StackLines(*w.ref->rank, 2);
  if (!w.elsewhere.empty()) out.push_back(ElsewhereClaim(w));
  if (w.by_key.size() > 1) out.push_back(DifferentCollectivesClaim(w));
  if (w.elsewhere.empty() && w.by_key.size() == 1) out.push_back(SameCollectiveClaim(w, placed));
  return out;
}

std::string WchanOf(std::string_view proc_text, long tid) {
  const std::string head = fmt::format("## tid {}", tid);
  bool in = false;
  std::string out;
  ForEachLine(proc_text, [&](std::string_view line) {
    if (StartsWith(line, "## tid ")) {
      in = Trim(line) == head;
      return;
    }
    if (in && out.empty() && StartsWith(line, "wchan: ")) {
      std::string_view w = Trim(line.substr(7));
      if (w != "0" && w != "(unreadable)") out = std::string(w);
    }
  });
  return out;
}

namespace {

// "rank_1_pid_4242.py.txt" / "rank_1_pid_4242.txt" -> rank, pid, python (faulthandler) or not.
bool StackFileName(std::string_view name, int* rank, long* pid, bool* python) {
  if (!StartsWith(name, "rank_") || !EndsWith(name, ".txt")) return false;
  *python = EndsWith(name, ".py.txt");
  name.remove_suffix(*python ? 7 : 4);
  name.remove_prefix(5);
  const auto p = name.find("_pid_");
  if (p == std::string_view::npos) return false;
  auto r = ParseInt(name.substr(0, p));
  auto q = ParseInt(name.substr(p + 5));
  if (!r.ok() || !q.ok()) return false;
  *rank = static_cast<int>(*r);
  *pid = static_cast<long>(*q);
  return true;
}

std::string ManifestHost(const FileReader& reader, const std::string& dir) {
  auto text = reader.ReadFile(dir + "/manifest.json", 4 << 20);
  if (!text.ok()) return "";
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("host") || !j["host"].is_string()) return "";
  return j["host"].get<std::string>();
}

void FindBundles(const FileReader& reader, const std::string& dir, int depth,
                 std::vector<std::string>* out) {
  if (reader.Exists(dir + "/manifest.json") && reader.IsDir(dir + "/stacks")) {
    out->push_back(dir);
    return;
  }
  if (depth >= 4) return;
  auto names = reader.ListDir(dir);
  if (!names.ok()) return;
  for (const std::string& n : *names) {
    const std::string p = dir + "/" + n;
    if (n.empty() || n[0] == '.' || !reader.IsDir(p)) continue;  // .partial bundles: incomplete
    FindBundles(reader, p, depth + 1, out);
  }
}

void ReadBundle(const FileReader& reader, const std::string& bundle,
                std::map<int, RankStacks>* by_rank) {
  const std::string host = ManifestHost(reader, bundle);
  auto names = reader.ListDir(bundle + "/stacks");
  if (!names.ok()) return;
  std::map<int, RankStacks> found;
  std::map<int, std::string> proc_text;
  for (const std::string& n : *names) {
    int rank = -1;
    long pid = -1;
    bool python = false;
    if (!StackFileName(n, &rank, &pid, &python)) continue;
    const std::string path = bundle + "/stacks/" + n;
    auto text = reader.ReadFile(path, 16u << 20);
    if (!text.ok()) continue;
    RankStacks& r = found[rank];
    r.rank = rank;
    r.pid = pid;
    r.node = host;
    if (!python) proc_text[rank] = *text;
    PyStacks parsed = ParsePyStacks(*text);
    // faulthandler's file (every thread, from the rank itself) before py-spy's section.
    const bool better = !parsed.threads.empty() &&
                        (r.stacks.threads.empty() || (python && r.stacks.format == "py-spy"));
    if (better) {
      r.stacks = std::move(parsed);
      r.file = path;
    }
  }
  for (auto& [rank, r] : found) {
    if (auto it = proc_text.find(rank); it != proc_text.end()) r.wchan = WchanOf(it->second, r.pid);
    if (!r.stacks.threads.empty()) (*by_rank)[rank] = std::move(r);
  }
}

}  // namespace

std::vector<RankStacks> StacksInLog(std::string_view text, const std::string& file) {
  std::vector<RankStacks> out;
  if (text.find("(most recent call first)") == std::string_view::npos &&
      text.find("): \"") == std::string_view::npos) {
    return out;  // neither faulthandler's nor py-spy's thread header
  }
  // Sections: each py-spy "Process N: ..." line opens one; before the first, one section.
  std::vector<std::pair<std::size_t, std::uint64_t>> starts = {{0, 0}};  // offset, lines before
  std::uint64_t line = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = Trim(text.substr(pos, end - pos));
    if (StartsWith(l, "Process ") && l.size() > 8 &&
        std::isdigit(static_cast<unsigned char>(l[8])) && l.find(':') != std::string_view::npos &&
        pos > 0) {
      starts.push_back({pos, line});
    }
    ++line;
    pos = end + 1;
  }
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t b = starts[i].first;
    const std::size_t e = i + 1 < starts.size() ? starts[i + 1].first : text.size();
    PyStacks parsed = ParsePyStacks(text.substr(b, e - b));
    if (parsed.threads.empty()) continue;
    for (PyThread& t : parsed.threads) {
      for (PyFrame& f : t.frames) f.line_no += starts[i].second;
    }
    RankStacks r;
    r.rank = static_cast<int>(out.size());
    r.pid = parsed.pid;
    r.file = file;
    r.pasted = true;
    r.stacks = std::move(parsed);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<CauseClaim> PastedStacksClaims(std::string_view text, const std::string& file) {
  std::vector<RankStacks> ranks = StacksInLog(text, file);
  if (ranks.size() != 1) return StacksClaims(ranks);
  const auto place = PlaceOf(ranks.front());
  if (!place || place->waiting || place->activity.empty()) return {};
  CauseClaim c;
  c.source = "stacks";
  c.rule = "stacks.pasted_main_thread_busy";
  c.category = "straggler_or_slow_rank";
  c.confidence = 0.45;
  c.why = fmt::format(
      "The pasted stacks show {}'s main thread in {} at {}, not in a collective: if the other "
      "ranks wait in one, this process holds them (the others' stacks would confirm it).",
      Who(ranks.front()), place->activity, place->where);
  c.evidence = StackLines(ranks.front(), 6);
  return {c};
}

std::vector<RankStacks> ReadBundleStacks(const std::vector<std::string>& paths,
                                         const FileReader& reader) {
  std::vector<std::string> bundles;
  for (const std::string& p : paths) {
    if (reader.IsDir(p)) FindBundles(reader, p, 0, &bundles);
  }
  // Bundle names end in their UTC stamp (hang-gpu07-20261130T010945Z): by stamp, a later
  // capture comes later, whatever its kind.
  std::sort(bundles.begin(), bundles.end(), [](const std::string& a, const std::string& b) {
    const auto stamp = [](const std::string& s) { return s.substr(s.rfind('-') + 1); };
    return stamp(a) != stamp(b) ? stamp(a) < stamp(b) : a < b;
  });
  std::map<int, RankStacks> by_rank;
  for (const std::string& b : bundles) ReadBundle(reader, b, &by_rank);
  std::vector<RankStacks> out;
  for (auto& [rank, r] : by_rank) out.push_back(std::move(r));
  return out;
}

}  // namespace sl::diagnose
