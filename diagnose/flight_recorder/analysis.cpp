#include "diagnose/flight_recorder/analysis.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/input_file.h"
#include "common/strings.h"
#include "diagnose/flight_recorder/dump.h"

namespace sl::diagnose::fr {

namespace {

using Clock = std::chrono::steady_clock;

struct Candidate {
  std::string path;
  bool explicit_file = false;  // named on the command line: an error when not a dump
  std::string host;
  std::string root, rel;                 // found by the walk: read below root, no link followed
  uid_t owner = static_cast<uid_t>(-1);  // the walked root's owner
};

// Files in a bundle that are never dumps; a dump's name ends in its rank.
bool LooksLikeDumpName(std::string_view name) {
  for (std::string_view ext : {".txt", ".log", ".md", ".py", ".gz", ".tar", ".sh", ".html"}) {
    if (EndsWith(name, ext)) return false;
  }
  return RankFromFileName(name) >= 0;
}

// A hang bundle's manifest.json: its host, and the ranks its Flight Recorder collector looked
// for (collectors[id=flight_recorder].details.dumps[].rank), collected or missing, so that a rank
// whose dump never appeared is still placed on its node.
struct Bundle {
  std::string host;
  std::vector<int> ranks;
};

// A manifest of the wrong shape (a string where a list is, a number for the host) is read as
// far as it goes: nlohmann's value()/get() throw on a type mismatch, so every access checks first.
Bundle ParseManifest(std::string_view text) {
  Bundle b;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return b;
  auto host = j.find("host");
  if (host == j.end() || !host->is_string()) return b;
  b.host = host->get<std::string>();
  auto collectors = j.find("collectors");
  if (collectors == j.end() || !collectors->is_array()) return b;
  for (const auto& c : *collectors) {
    if (!c.is_object()) continue;
    auto id = c.find("id");
    if (id == c.end() || !id->is_string() || id->get<std::string>() != "flight_recorder") continue;
    auto details = c.find("details");
    if (details == c.end() || !details->is_object()) continue;
    auto dumps = details->find("dumps");
    if (dumps == details->end() || !dumps->is_array()) continue;
    for (const auto& d : *dumps) {
      if (!d.is_object()) continue;
      auto r = d.find("rank");
      if (r != d.end() && r->is_number_integer()) {
        const auto v = r->get<std::int64_t>();
        if (v >= 0 && v < (1 << 24)) b.ranks.push_back(static_cast<int>(v));
      }
    }
  }
  return b;
}

Bundle ReadManifest(const FileReader* reader, const std::string& dir) {
  Result<std::string> text = MakeError("");
  if (reader != nullptr) {
    text = reader->ReadFile(dir + "/manifest.json", InputCap(InputKind::kManifest));
  } else {
    InputRule rule;
    rule.kind = InputKind::kManifest;
    text = ReadInputFile(dir + "/manifest.json", rule);
  }
  if (!text) return Bundle{};
  return ParseManifest(*text);
}

// The host of a dump: the manifest in its directory or the one above (a bundle keeps dumps in fr/).
std::string BundleHost(const FileReader* reader, const std::string& dir,
                       std::map<std::string, Bundle>* cache, std::map<int, std::string>* hosts) {
  for (const std::string& d : {dir, std::filesystem::path(dir).parent_path().string()}) {
    auto it = cache->find(d);
    if (it == cache->end()) {
      it = cache->emplace(d, ReadManifest(reader, d)).first;
      for (int r : it->second.ranks) hosts->emplace(r, it->second.host);
    }
    if (!it->second.host.empty()) return it->second.host;
  }
  return "";
}

void Walk(const FileReader& reader, const std::string& dir, int depth, std::vector<Candidate>* out,
          std::vector<std::string>* manifests) {
  auto names = reader.ListDir(dir);
  if (!names) return;
  for (const std::string& n : *names) {
    std::string p = dir + "/" + n;
    if (reader.IsDir(p)) {
      if (depth < 4) Walk(reader, p, depth + 1, out, manifests);
    } else if (n == "manifest.json") {
      manifests->push_back(dir);
    } else if (LooksLikeDumpName(n)) {
      out->push_back({p, false, "", "", "", static_cast<uid_t>(-1)});
    }
  }
}

// The live walk: the one directory walk (WalkInputs), which follows no link and opens nothing
// but regular files below `root`.
void WalkLive(const std::string& root, std::vector<Candidate>* out,
              std::vector<std::string>* manifests, std::vector<std::string>* notes) {
  WalkOptions o;
  o.max_depth = 4;
  o.skip_dirs = {".events"};
  auto walk = WalkInputs(root, o);
  if (!walk) {
    notes->push_back(walk.error().Describe());
    return;
  }
  for (const std::string& d : walk->unreadable_dirs) notes->push_back(d + " (directory not read)");
  for (const WalkedFile& f : walk->files) {
    const std::size_t slash = f.path.rfind('/');
    const std::string name = f.path.substr(slash + 1);
    if (name == "manifest.json") {
      manifests->push_back(f.path.substr(0, slash));
    } else if (LooksLikeDumpName(name)) {
      out->push_back({f.path, false, "", root, f.rel, walk->owner});
    }
  }
  // A link, FIFO or device with a dump's name is said, not opened.
  for (const std::string& s : walk->skipped) {
    const std::string path = s.substr(0, s.find(": "));
    if (LooksLikeDumpName(path.substr(path.rfind('/') + 1))) notes->push_back(s);
  }
}

struct ReadOutcome {
  std::optional<RankDump> dump;
  std::optional<DumpError> error;
  bool skipped = false;
};

// A dump through the input reader: regular files only, capped (a sparse 30 GB file is refused
// by its size before any byte is read), under a deadline, no link followed below a walked root.
Result<InputBytes> ReadLive(const Candidate& c) {
  InputRule rule;
  rule.kind = InputKind::kDump;
  if (c.explicit_file) return ReadInputFileBytes(c.path, InputRule::Named(InputKind::kDump));
  rule.trusted_uid = c.owner;
  return ReadInputUnderBytes(c.root, c.rel, rule);
}

ReadOutcome ReadOne(const FileReader* reader, DumpReader& dr, const Candidate& c) {
  ReadOutcome out;
  // Through a FileReader (a sysroot, the tests' fakes) the bytes come as a string; live, as a
  // buffer that is not zero-filled first.
  std::string text;
  InputBytes live;
  if (reader != nullptr) {
    auto got = reader->ReadFile(c.path, InputCap(InputKind::kDump));
    if (!got) {
      out.error = DumpError{c.path, -1, got.error().message};
      return out;
    }
    text = std::move(got).value();
  } else {
    auto got = ReadLive(c);
    if (!got) {
      out.error = DumpError{c.path, -1, got.error().message};
      return out;
    }
    live = std::move(got).value();
  }
  const std::string_view bytes = reader != nullptr ? std::string_view(text) : live.view();
  int rank = RankFromFileName(c.path);
  if (!c.explicit_file && !bytes.empty() && std::uint8_t(bytes[0]) != 0x80 && bytes[0] != '{') {
    out.skipped = true;  // some other file of a bundle
    return out;
  }
  if (rank < 0) {
    out.error =
        DumpError{c.path, -1, "no rank in the file name (torch names dumps <prefix><rank>)"};
    return out;
  }
  auto d = dr.Read(bytes);
  if (!d) {
    std::int64_t off = -1;
    if (StartsWith(d.error().where, "byte ")) {
      off = std::strtoll(d.error().where.c_str() + 5, nullptr, 10);
    }
    out.error = DumpError{c.path, off, d.error().message};
    return out;
  }
  d->rank = rank;
  d->file = c.path;
  d->host = c.host;
  out.dump = std::move(d).value();
  return out;
}

std::vector<ReadOutcome> ReadAll(const FileReader* reader, const std::vector<Candidate>& cands,
                                 FrAnalysis* a, PgRegistry* pgs, int threads) {
  std::vector<ReadOutcome> outcomes(cands.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    DumpReader dr(a->strings.get(), a->stacks.get(), pgs);
    for (std::size_t i = next++; i < cands.size(); i = next++) {
      // No exception leaves a reader thread (std::terminate would take the whole diagnosis):
      // whatever one file throws (bad_alloc, a parser's) becomes that file's error.
      try {
        outcomes[i] = ReadOne(reader, dr, cands[i]);
      } catch (const std::exception& e) {
        outcomes[i] = ReadOutcome{};
        outcomes[i].error = DumpError{cands[i].path, -1, std::string("cannot read: ") + e.what()};
        dr = DumpReader(a->strings.get(), a->stacks.get(), pgs);
      } catch (...) {
        outcomes[i] = ReadOutcome{};
        outcomes[i].error = DumpError{cands[i].path, -1, "cannot read: unknown failure"};
        dr = DumpReader(a->strings.get(), a->stacks.get(), pgs);
      }
    }
  };
  // A file per thread at a time, its buffers released before the next (a few MB a thread at 16384
  // ranks), so a node's cores are used up to 16: 16384 dumps are minutes of CPU.
  int n = threads > 0 ? threads : std::clamp(int(std::thread::hardware_concurrency()), 1, 16);
  n = std::min<int>(n, std::max<std::size_t>(cands.size(), 1));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return outcomes;
}

}  // namespace

std::string_view PgVerdictName(PgVerdict v) {
  switch (v) {
    case PgVerdict::kHealthy:
      return "healthy";
    case PgVerdict::kDesync:
      return "desync";
    case PgVerdict::kLaggard:
      return "laggard";
    case PgVerdict::kMissingDump:
      return "missing_dump";
    case PgVerdict::kStuckAll:
      return "stuck_all";
    case PgVerdict::kPartial:
      return "partial";
  }
  return "?";
}

std::string RankRanges(const std::vector<int>& ranks) {
  std::vector<int> r(ranks);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  std::string out;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(r[i]) : fmt::format("{}-{}", r[i], r[j]);
    i = j + 1;
  }
  return out;
}

const RankDump* FrAnalysis::DumpOf(int rank) const {
  auto it = by_rank.find(rank);
  return it == by_rank.end() ? nullptr : &dumps[it->second];
}

std::string FrAnalysis::HostOf(int rank) const {
  auto e = extra_hosts.find(rank);
  if (e != extra_hosts.end()) return e->second;
  const RankDump* d = DumpOf(rank);
  return d ? d->host : "";
}

std::string FrAnalysis::DescribeRanks(const std::vector<int>& ranks) const {
  std::map<std::string, std::vector<int>> by_host;
  for (int r : ranks) by_host[HostOf(r)].push_back(r);
  if (by_host.size() == 1 && by_host.begin()->first.empty()) {
    return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", RankRanges(ranks));
  }
  // How many ranks each host has in all, to say "node X" when all of them are in the set.
  std::set<int> known;
  for (const RankDump& d : dumps) known.insert(d.rank);
  for (const auto& [rank, host] : extra_hosts) known.insert(rank);
  std::map<std::string, int> host_size;
  for (int r : known) {
    if (!HostOf(r).empty()) ++host_size[HostOf(r)];
  }
  std::vector<std::string> parts;
  for (const auto& [host, rs] : by_host) {
    std::string set = fmt::format("{} {}", rs.size() == 1 ? "rank" : "ranks", RankRanges(rs));
    if (host.empty()) {
      parts.push_back(set);
    } else if (host_size[host] == int(rs.size())) {
      parts.push_back(fmt::format("node {} ({})", host, set));
    } else {
      parts.push_back(fmt::format("{} on {}", set, host));
    }
  }
  return Join(parts, "; ");
}

const PgFinding* FrAnalysis::Top() const {
  for (const PgFinding& f : findings) {
    if (f.verdict != PgVerdict::kHealthy) return &f;
  }
  return nullptr;
}

Result<FrAnalysis> AnalyzeFlightRecorder(const std::vector<std::string>& paths,
                                         const FrOptions& options) {
  RootedFileReader live("/");
  const FileReader& reader = options.reader ? *options.reader : live;
  auto t0 = Clock::now();
  std::vector<Candidate> cands;
  std::vector<std::string> manifest_dirs;  // bundles, also those whose ranks wrote no dump
  std::vector<std::string> walk_notes;
  for (const std::string& p : paths) {
    std::string abs = options.reader ? p : std::filesystem::absolute(p).lexically_normal().string();
    if (reader.IsDir(abs)) {
      if (options.reader) {
        Walk(reader, abs, 0, &cands, &manifest_dirs);
      } else {
        WalkLive(abs, &cands, &manifest_dirs, &walk_notes);
      }
    } else {
      cands.push_back({abs, true, "", "", "", static_cast<uid_t>(-1)});
    }
  }
  if (cands.empty()) {
    return MakeError("no Flight Recorder dump found", Join(paths, " "),
                     "name the dump files or their directory (torch writes "
                     "$TORCH_FR_DUMP_TEMP_FILE<rank>; a hang bundle keeps them in fr/)");
  }
  FrAnalysis a;
  a.notes = std::move(walk_notes);
  a.extra_hosts = options.hosts;
  std::map<std::string, Bundle> bundles;
  std::map<int, std::string> bundle_hosts;
  for (Candidate& c : cands) {
    c.host = BundleHost(options.reader, std::filesystem::path(c.path).parent_path().string(),
                        &bundles, &bundle_hosts);
  }
  for (const std::string& d : manifest_dirs) {
    if (bundles.count(d)) continue;
    Bundle b = ReadManifest(options.reader, d);
    for (int r : b.ranks) bundle_hosts.emplace(r, b.host);
  }
  a.extra_hosts.insert(bundle_hosts.begin(), bundle_hosts.end());  // --host wins
  PgRegistry pgs;
  std::vector<ReadOutcome> outcomes = ReadAll(options.reader, cands, &a, &pgs, options.threads);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    ReadOutcome& o = outcomes[i];
    if (o.error) a.errors.push_back(*o.error);
    if (o.skipped) a.notes.push_back(cands[i].path + ": not a pickle or JSON file, skipped");
    if (!o.dump) continue;
    auto dup = a.by_rank.find(o.dump->rank);
    if (dup != a.by_rank.end()) {
      // The same rank twice (fr_rank_0.pkl and fr_rank_0.json): keep the pickle torch wrote.
      RankDump& kept = a.dumps[dup->second];
      bool replace = EndsWith(kept.file, ".json") && !EndsWith(o.dump->file, ".json");
      a.notes.push_back(fmt::format("rank {}: two dumps ({}, {}); using {}", o.dump->rank,
                                    kept.file, o.dump->file, replace ? o.dump->file : kept.file));
      if (replace) kept = std::move(*o.dump);
      continue;
    }
    a.by_rank[o.dump->rank] = a.dumps.size();
    a.dumps.push_back(std::move(*o.dump));
  }
  std::sort(a.dumps.begin(), a.dumps.end(),
            [](const RankDump& x, const RankDump& y) { return x.rank < y.rank; });
  a.by_rank.clear();
  for (std::size_t i = 0; i < a.dumps.size(); ++i) a.by_rank[a.dumps[i].rank] = i;
  a.pgs = std::move(pgs.all());
  auto t1 = Clock::now();
  AnalyseDumps(&a);
  a.read_s = std::chrono::duration<double>(t1 - t0).count();
  a.analyse_s = std::chrono::duration<double>(Clock::now() - t1).count();
  return a;
}

}  // namespace sl::diagnose::fr
