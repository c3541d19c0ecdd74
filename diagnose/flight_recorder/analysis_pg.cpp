// The per-process-group matching of AnalyseDumps (analysis.h explains the rules).
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "common/strings.h"
#include "diagnose/flight_recorder/analysis.h"

namespace sl::diagnose::fr {

namespace {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

// One member rank's entries of the group being analysed, in seq order.
struct View {
  int rank = -1;
  const RankDump* dump = nullptr;
  std::vector<std::uint32_t> idx;
  std::int64_t lo() const { return idx.empty() ? kNone : dump->entries[idx.front()].seq; }
  std::int64_t hi() const { return idx.empty() ? -1 : dump->entries[idx.back()].seq; }
  const Entry& at(std::size_t k) const { return dump->entries[idx[k]]; }
  // First position with seq >= s.
  std::size_t Lower(std::int64_t s) const {
    return std::lower_bound(
               idx.begin(), idx.end(), s,
               [&](std::uint32_t i, std::int64_t v) { return dump->entries[i].seq < v; }) -
           idx.begin();
  }
};

// What a rank entered under one seq: every entry of a coalesced group folded into one value.
// p2p ops differ by design (send on one side, recv on the other): only their shapes are compared.
struct Sig {
  std::uint64_t value = 0;
  std::size_t first = 0;  // position in View::idx
  bool completed = true;
  bool started = false;  // NCCL: an entry recorded as started on the GPU, not completed
};

std::optional<Sig> SigAt(const View& v, std::int64_t s, bool p2p, std::int64_t gloo_done_below) {
  std::size_t k = v.Lower(s);
  if (k >= v.idx.size() || v.at(k).seq != s) return std::nullopt;
  Sig sig;
  sig.first = k;
  for (; k < v.idx.size() && v.at(k).seq == s; ++k) {
    const Entry& e = v.at(k);
    std::uint64_t one = (std::uint64_t(p2p ? 0 : e.op) << 32) ^ e.shape;
    sig.value = sig.value * 1000003u + one + 1;
    bool done = v.dump->gloo ? s < gloo_done_below : e.state == State::kCompleted;
    sig.completed = sig.completed && done;
    sig.started = sig.started || (!v.dump->gloo && e.state == State::kStarted);
  }
  return sig;
}

// The first seq a rank has not completed (hi+1 when it completed all it holds).
std::int64_t FirstIncomplete(const View& v, bool p2p, std::int64_t gloo_done_below) {
  for (std::size_t k = 0; k < v.idx.size(); ++k) {
    const Entry& e = v.at(k);
    bool done = v.dump->gloo ? e.seq < gloo_done_below : e.state == State::kCompleted;
    if (!done) return e.seq;
  }
  return v.idx.empty() ? kNone : v.hi() + 1;
}

// The first seq in [lo, up_to] where two ranks entered different things, or kNone.
std::int64_t FirstMismatch(const std::vector<View>& views, std::int64_t lo, std::int64_t up_to,
                           bool p2p) {
  const View* ref = nullptr;
  for (const View& v : views) {
    if (!v.idx.empty()) {
      ref = &v;
      break;
    }
  }
  if (!ref || lo > up_to || up_to - lo > (1 << 24)) return kNone;
  std::vector<std::uint64_t> ref_sig(up_to - lo + 1, 0);
  std::vector<bool> has(up_to - lo + 1, false);
  for (std::int64_t s = lo; s <= up_to; ++s) {
    if (auto sig = SigAt(*ref, s, p2p, 0)) {
      ref_sig[s - lo] = sig->value;
      has[s - lo] = true;
    }
  }
  std::int64_t first = kNone;
  for (const View& v : views) {
    // One linear walk per rank, folding each seq's entries as SigAt does.
    std::size_t k = v.Lower(lo);
    while (k < v.idx.size() && v.at(k).seq <= up_to && v.at(k).seq < first) {
      std::int64_t s = v.at(k).seq;
      std::uint64_t value = 0;
      for (; k < v.idx.size() && v.at(k).seq == s; ++k) {
        const Entry& e = v.at(k);
        value = value * 1000003u + ((std::uint64_t(p2p ? 0 : e.op) << 32) ^ e.shape) + 1;
      }
      if (has[s - lo] && value != ref_sig[s - lo]) first = s;
    }
  }
  return first;
}

std::string ShapePart(const std::string& shape, int part) {
  auto parts = Split(shape, '|', false);
  return part < int(parts.size()) ? parts[part] : "";
}

// What a rank entered under seq `s`, as text ("op|shape" per entry, the shape alone for p2p as
// in SigAt): an order of signature groups that does not depend on the interning order.
std::vector<std::string> ContentOf(const FrAnalysis& a, const View& v, std::int64_t s, bool p2p) {
  std::vector<std::string> out;
  for (std::size_t k = v.Lower(s); k < v.idx.size() && v.at(k).seq == s; ++k) {
    out.push_back((p2p ? std::string() : a.Str(v.at(k).op)) + "|" + a.Str(v.at(k).shape));
  }
  return out;
}

// Classifies every member at seq f->seq and picks the verdict.
void Classify(const FrAnalysis& a, const std::vector<View>& views, std::int64_t gloo_below,
              PgFinding* f) {
  std::map<std::uint64_t, std::vector<std::pair<const View*, Sig>>> groups;
  std::vector<const View*> laggards;
  for (const View& v : views) {
    if (!v.idx.empty() && v.lo() > f->seq) continue;  // its ring buffer is past it: done
    auto sig = SigAt(v, f->seq, f->p2p, gloo_below);
    if (!sig) {
      f->never_entered.push_back(v.rank);
      laggards.push_back(&v);
      continue;
    }
    f->entered.push_back(v.rank);
    if (sig->completed) {
      f->completed.push_back(v.rank);
    } else if (sig->started) {
      f->started.push_back(v.rank);
    }
    groups[sig->value].push_back({&v, *sig});
  }
  // The majority is what the job meant; ties go to the larger content (op and shape text),
  // never to whichever file came first. The signature values fold interned ids, whose order
  // depends on which reader thread met a string first: they decide equality, never order.
  using Members = std::vector<std::pair<const View*, Sig>>;
  std::vector<std::pair<std::vector<std::string>, const Members*>> order;
  for (const auto& [value, members] : groups) {
    order.push_back({ContentOf(a, *members.front().first, f->seq, f->p2p), &members});
  }
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    if (x.second->size() != y.second->size()) return x.second->size() > y.second->size();
    return x.first > y.first;
  });
  const Members* major = order.empty() ? nullptr : order.front().second;
  if (major) {
    const auto& [v0, s0] = major->front();
    const Entry& e0 = v0->at(s0.first);
    f->op = e0.op;
    f->shape = e0.shape;
    f->first_created_ns = e0.t_created;
    for (const auto& [content, group] : order) {
      const Members& members = *group;
      for (const auto& [v, s] : members) {
        f->first_created_ns = std::min(f->first_created_ns, v->at(s.first).t_created);
        if (&members == major) continue;
        const Entry& e = v->at(s.first);
        f->odd.push_back({v->rank, e.op, e.shape});
        if (f->mismatch != "op") {
          if (e.op != e0.op && !f->p2p) {
            f->mismatch = "op";
          } else if (ShapePart(a.Str(e.shape), 1) != ShapePart(a.Str(e0.shape), 1) ||
                     ShapePart(a.Str(e.shape), 3) != ShapePart(a.Str(e0.shape), 3)) {
            f->mismatch = "dtypes";
          } else if (f->mismatch.empty()) {
            f->mismatch = "sizes";
          }
        }
        if (f->samples.empty()) f->samples.push_back({v->rank, v->idx[s.first]});
      }
    }
    if (!laggards.empty() && !laggards.front()->idx.empty()) {
      f->samples.insert(f->samples.begin(), {laggards.front()->rank, laggards.front()->idx.back()});
    }
    f->samples.push_back({v0->rank, v0->idx[s0.first]});
  }
  if (!f->odd.empty()) {
    f->verdict = PgVerdict::kDesync;
  } else if (!f->never_entered.empty()) {
    f->verdict = PgVerdict::kLaggard;
  } else if (!f->no_dump.empty()) {
    f->verdict = PgVerdict::kMissingDump;
  } else if (f->completed.empty()) {
    f->verdict = PgVerdict::kStuckAll;
  } else if (f->completed.size() < f->entered.size()) {
    f->verdict = PgVerdict::kPartial;
  }
}

using GroupKey = std::pair<std::uint32_t, bool>;  // pg name, p2p

PgFinding AnalysePg(const FrAnalysis& a, GroupKey key, std::vector<View> views) {
  PgFinding f;
  f.pg = a.Str(key.first);
  f.p2p = key.second;
  const bool p2p = key.second;
  auto info = a.pgs.find(f.pg);
  if (info != a.pgs.end()) {
    f.desc = info->second.desc;
    f.members = info->second.members;
  }
  if (f.members.empty()) {
    for (const View& v : views) f.members.push_back(v.rank);
  } else {
    // Members only; a member that dumped but holds no entry of this group is a view too.
    std::erase_if(views, [&](const View& v) {
      return !std::binary_search(f.members.begin(), f.members.end(), v.rank);
    });
    std::set<int> have;
    for (const View& v : views) have.insert(v.rank);
    for (int r : f.members) {
      if (const RankDump* d = a.DumpOf(r); d && !have.count(r)) views.push_back(View{r, d, {}});
    }
    std::sort(views.begin(), views.end(),
              [](const View& x, const View& y) { return x.rank < y.rank; });
  }
  for (int r : f.members) {
    if (!a.DumpOf(r)) f.no_dump.push_back(r);
  }
  // Gloo: seq s completed when any member already issued a later one (states are not kept).
  std::int64_t gloo_below = -1;
  std::int64_t seq = kNone, window_lo = -1, top = -1;
  for (const View& v : views) gloo_below = std::max(gloo_below, v.hi());
  for (const View& v : views) {
    seq = std::min(seq, FirstIncomplete(v, p2p, gloo_below));
    if (!v.idx.empty()) window_lo = std::max(window_lo, v.lo());
    top = std::max(top, v.hi());
  }
  f.window_lo = window_lo;
  std::int64_t mismatch = FirstMismatch(views, window_lo, std::min(seq, top), p2p);
  if (mismatch != kNone && mismatch <= seq) seq = mismatch;
  if (seq == kNone || seq > top) return f;  // nothing stuck: every rank completed all it holds
  f.seq = seq;
  for (const View& v : views) {
    if (v.dump->gloo) continue;
    f.states_kept = true;
    for (std::uint32_t i : v.idx) {
      const Entry& e = v.dump->entries[i];
      f.starts_recorded = f.starts_recorded || e.t_started > 0 || e.state == State::kStarted;
    }
  }
  Classify(a, views, gloo_below, &f);
  return f;
}

// Every rank's entries bucketed by (group, p2p) in one pass, each bucket in seq order.
std::map<GroupKey, std::vector<View>> Bucket(const FrAnalysis& a) {
  std::map<GroupKey, std::vector<View>> groups;
  for (const RankDump& d : a.dumps) {
    std::map<GroupKey, std::vector<std::uint32_t>> local;
    GroupKey last{0xffffffffu, false};
    std::vector<std::uint32_t>* bucket = nullptr;
    for (std::uint32_t i = 0; i < d.entries.size(); ++i) {
      const Entry& e = d.entries[i];
      if (e.seq < 0) continue;
      GroupKey k{e.pg, e.is_p2p};
      if (!bucket || k != last) {
        bucket = &local[k];
        last = k;
      }
      bucket->push_back(i);
    }
    for (auto& [k, idx] : local) {
      std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t x, std::uint32_t y) {
        return d.entries[x].seq < d.entries[y].seq;
      });
      groups[k].push_back(View{d.rank, &d, std::move(idx)});
    }
  }
  return groups;
}

int Priority(PgVerdict v) {
  switch (v) {
    case PgVerdict::kDesync:
      return 0;
    case PgVerdict::kLaggard:
      return 1;
    case PgVerdict::kMissingDump:
      return 2;
    case PgVerdict::kStuckAll:
      return 3;
    case PgVerdict::kPartial:
      return 4;
    case PgVerdict::kHealthy:
      return 5;
  }
  return 6;
}

}  // namespace

void AnalyseDumps(FrAnalysis* a) {
  for (auto& [name, pg] : a->pgs) {
    std::sort(pg.members.begin(), pg.members.end());
    pg.members.erase(std::unique(pg.members.begin(), pg.members.end()), pg.members.end());
  }
  std::set<int> world;
  for (const RankDump& d : a->dumps) world.insert(d.rank);
  for (const auto& [name, pg] : a->pgs) world.insert(pg.members.begin(), pg.members.end());
  a->world_size = static_cast<int>(world.size());
  a->missing.clear();
  for (int r : world) {
    if (!a->DumpOf(r)) a->missing.push_back(r);
  }
  a->findings.clear();
  for (auto& [key, views] : Bucket(*a)) a->findings.push_back(AnalysePg(*a, key, std::move(views)));
  std::stable_sort(a->findings.begin(), a->findings.end(),
                   [](const PgFinding& x, const PgFinding& y) {
                     if (Priority(x.verdict) != Priority(y.verdict)) {
                       return Priority(x.verdict) < Priority(y.verdict);
                     }
                     if (x.first_created_ns != y.first_created_ns) {
                       return x.first_created_ns < y.first_created_ns;
                     }
                     // Buckets come keyed by interned ids (reader-thread order): name them.
                     return std::tie(x.pg, x.p2p) < std::tie(y.pg, y.p2p);
                   });
}

}  // namespace sl::diagnose::fr
