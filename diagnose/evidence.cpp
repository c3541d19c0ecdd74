#include "diagnose/evidence.h"

#include <algorithm>
#include <iterator>

#include "common/strings.h"

namespace sl::diagnose {

namespace {

// The desync check needs a signature row of its own so the verdict can point at it.
constexpr Signature kDesyncSignature = {
    "nccl.coll_desync",
    "",
    "",
    "",
    "",
    "desync_collective_mismatch",
    Severity::kError,
    85,
    "Ranks entered the same NCCL operation (same opCount) in different collectives or with "
    "different counts/datatypes/roots: "
    "an application bug in the order or arguments of collectives. Find the code path that "
    "differs between ranks (conditional collectives, uneven data, different model shapes).",
    EvidenceKind::kCause,
    "nccl src/enqueue.cc COLL INFO trace 2.10-2.28, compared across ranks"};

}  // namespace

// Ranks of one communicator at one opCount in different collectives (rank 2 in AllGather while
// ranks 0, 1 and 3 are in AllReduce). Lines of one process are not compared: a process has a
// communicator per group (tensor, data, pipeline parallel), each counting its own opCounts, so
// they differ by design; processes of another group of the same size can too, which is why the
// finding is evidence the model weighs, not a verdict by itself.
void Evidence::CheckCollectiveName(const Match& m) {
  const std::string pid = m.Field("pid");
  if (desync_ || pid.empty()) return;
  const std::string key = m.Field("opcount") + "|" + m.Field("nranks");
  auto [it, fresh] = op_first_.try_emplace(key, m);
  if (fresh || it->second.Field("coll") == m.Field("coll")) return;
  if (it->second.Field("pid") == pid && it->second.Field("host") == m.Field("host")) return;
  SetDesync(it->second, m, "coll");
}

// The desync finding: `m`, the line that differs from `first` in `field`, under the desync row.
void Evidence::SetDesync(const Match& first, const Match& m, const std::string& field) {
  Match d = m;
  d.signature = &kDesyncSignature;
  d.fields["first_line"] = first.line;
  d.fields[field + "_a"] = first.Field(field);
  d.fields[field + "_b"] = m.Field(field);
  desync_ = std::move(d);
}

void Evidence::Add(Match m) {
  ++total_;
  const Signature& sig = *m.signature;
  if (sig.id == "nccl.coll_trace") {
    std::string key = m.Field("opcount") + "|" + m.Field("coll") + "|" + m.Field("nranks") + "|" +
                      m.Field("root");
    auto [it, fresh] = coll_first_.try_emplace(key, m);
    if (!fresh && !desync_ &&
        (it->second.Field("count") != m.Field("count") ||
         it->second.Field("datatype") != m.Field("datatype"))) {
      SetDesync(it->second, m, "count");
    }
    CheckCollectiveName(m);
    // Bound the trace maps: a long job emits one line per collective.
    if (coll_first_.size() > 4096) coll_first_.erase(coll_first_.begin());
    if (op_first_.size() > 4096) op_first_.erase(op_first_.begin());
  }
  if (sig.category == "progress") AddProgress(m);
  if (sig.category == "collective_timeout") AddTimeout(m);
  AddDistinct(m);
  std::size_t& n = counts_[std::string(sig.id)];
  ++n;
  if (n <= kKeepPerSignature) matches_.push_back(std::move(m));
}

bool Evidence::CountRepeat(const Signature& sig) {
  // The rows whose every line updates a record (the desync map, a process's last progress
  // line, the timeout lists) go through Add each time.
  if (sig.id == "nccl.coll_trace" || sig.category == "progress" ||
      sig.category == "collective_timeout") {
    return false;
  }
  auto it = counts_.find(sig.id);
  if (it == counts_.end() || it->second < kKeepPerSignature) return false;
  // AddDistinct: every value of an identical Match is already kept (or the list is full).
  ++it->second;
  ++total_;
  return true;
}

namespace {
// The fields that tell nodes, ranks and links apart; the rest (sizes, pointers) are not kept
// per value.
constexpr std::string_view kDistinctFields[] = {
    "version",      "nccl_version", "gid_prefix", "local_gid", "opcount",       "count",
    "rank",         "host",         "ifname",     "addr",      "gid_index",     "gid_spn",
    "mtu",          "gdr",          "net",        "link",      "last_enqueued", "last_completed",
    "timeout_rank", "seq",          "error",      "exitcode",  "family",        "hca",
    "op",           "ran_ms",       "timeout_ms", "numel_in",  "signal_name",   "signal",
    "nccl_code",    "function",     "peer"};
}  // namespace

void Evidence::AddDistinct(const Match& m) {
  // A line has a few fields; looking each up in the short list costs no allocation.
  for (auto f = m.fields.begin(); f != m.fields.end(); ++f) {
    // Sizes first: otherwise every (field, name) pair costs a memcmp call, a dozen fields
    // against thirty names on every recognised line.
    const std::string_view name = f->first;
    if (std::none_of(std::begin(kDistinctFields), std::end(kDistinctFields),
                     [name](std::string_view k) { return k.size() == name.size() && k == name; })) {
      continue;
    }
    std::string key = std::string(m.signature->id) + "|" + f->first;
    auto& values = distinct_[key];
    if (values.size() >= kKeepDistinct) continue;
    bool seen = false;
    for (const auto& [v, first] : values) seen = seen || v == f->second;
    if (seen) continue;
    Match copy = m;
    if (copy.line.size() > 2048) copy.line.resize(2048);  // a cut line still names its file:line
    values.emplace_back(f->second, std::move(copy));
  }
}

std::string Evidence::Who(const Match& m) {
  if (std::string r = m.Field("rank"); !r.empty()) return r;
  if (std::string h = m.Field("host"); !h.empty()) return h + ":" + m.Field("pid");
  return m.Field("pod");
}

namespace {
Match Kept(const Match& m) {
  Match copy = m;
  if (copy.line.size() > 2048) copy.line.resize(2048);
  return copy;
}
}  // namespace

// One record per (file, process): a 100 MB log of iteration lines costs one record per rank,
// and the straggler rules need only where each rank's progress started and last stood.
void Evidence::AddProgress(const Match& m) {
  const std::string who = Who(m);
  const std::string key = m.source + "\n" + who;
  auto it = progress_index_.find(key);
  if (it == progress_index_.end()) {
    if (progress_.size() >= kKeepProgress) return;
    it = progress_index_.emplace(key, progress_.size()).first;
    progress_.push_back({m.source, who, 0, Kept(m), Kept(m), -1});
  }
  Progress& p = progress_[it->second];
  ++p.lines;
  p.last = Kept(m);
  if (auto step = ParseInt(m.Field("step")); step.ok())
    p.max_step = std::max<long long>(p.max_step, *step);
}

void Evidence::AddTimeout(const Match& m) {
  const std::string who = Who(m);
  if (timed_out_.size() < kKeepProgress &&
      std::find(timed_out_.begin(), timed_out_.end(), who) == timed_out_.end()) {
    timed_out_.push_back(who);
  }
  for (const TimeoutSeen& t : timeouts_) {
    if (t.source == m.source) return;
  }
  if (timeouts_.size() < kKeepProgress) timeouts_.push_back({m.source, Kept(m)});
}

std::vector<const Match*> Evidence::Distinct(std::string_view id, std::string_view field) const {
  std::vector<const Match*> out;
  auto it = distinct_.find(std::string(id) + "|" + std::string(field));
  if (it == distinct_.end()) return out;
  for (const auto& [v, first] : it->second) out.push_back(&first);
  return out;
}

void Evidence::AddText(const LineMatcher& matcher, std::string_view text,
                       const std::string& source) {
  matcher.ScanBlock(text, [&](std::string_view line, std::size_t index) {
    if (auto m = matcher.MatchLine(line)) {
      m->source = source;
      m->line_number = index + 1;
      Add(std::move(*m));
    }
  });
}

std::size_t Evidence::Count(std::string_view signature_id) const {
  auto it = counts_.find(signature_id);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace sl::diagnose
