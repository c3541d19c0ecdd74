// diagnosis.html: verdict and fix first, then the rank x collective grid of the deciding group
// (rows grouped by node, runs of identical rows folded), the per-node table, collapsible evidence.
// No script and no external resource: it opens from a bundle on an air-gapped cluster.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/strings.h"
#include "diagnose/flight_recorder/report.h"

namespace sl::diagnose::fr {

std::string EscapeHtml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

namespace {

std::string Esc(std::string_view s) { return EscapeHtml(s); }

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
.verdict{border-left:6px solid #c0392b;padding:.5em 1em;background:#fdf2f0}
.verdict.healthy{border-color:#27ae60;background:#eefaf2}
h1{font-size:1.4em;margin:.2em 0} h2{font-size:1.1em;margin-top:1.5em}
.fix{font-weight:600}
table{border-collapse:collapse} td,th{padding:2px 6px;border:1px solid #ddd;text-align:left}
table.grid td.c{width:14px;height:14px;padding:0}
.done{background:#2ecc71}.wait{background:#f39c12}.absent{background:#e74c3c}
.odd{background:#8e44ad}.nodump{background:#7f8c8d}.none{background:#ecf0f1}
th.stuck{outline:2px solid #c0392b}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
tr.node td{background:#f4f6f7;font-weight:600}
code{font-size:12px}
)";

struct Column {
  std::int64_t seq;
};

// One cell's class for rank `d` at `seq` of the finding's group.
std::string CellClass(const FrAnalysis& a, const PgFinding& f, const RankDump* d, std::int64_t seq,
                      std::int64_t gloo_below, const std::map<std::int64_t, const Entry*>& at) {
  if (!d) return "nodump";
  auto it = at.find(seq);
  if (it == at.end()) return seq < f.window_lo ? "none" : "absent";
  if (seq == f.seq) {
    for (const OddRank& o : f.odd) {
      if (o.rank == d->rank) return "odd";
    }
  }
  bool done = d->gloo ? seq < gloo_below : it->second->state == State::kCompleted;
  return done ? "done" : "wait";
}

std::string Grid(const FrAnalysis& a, const PgFinding& f) {
  std::int64_t gloo_below = -1;
  std::map<int, std::map<std::int64_t, const Entry*>> cells;
  std::int64_t lo = std::max<std::int64_t>(f.window_lo, f.seq - 9), hi = f.seq + 2;
  std::uint32_t pg = 0;
  for (const RankDump& d : a.dumps) {
    for (const Entry& e : d.entries) {
      if (a.Str(e.pg) != f.pg || e.is_p2p != f.p2p) continue;
      pg = e.pg;
      gloo_below = std::max(gloo_below, e.seq);
      if (e.seq >= lo && e.seq <= hi) cells[d.rank].emplace(e.seq, &e);
    }
  }
  (void)pg;
  hi = std::min(hi, gloo_below);
  std::string out = "<table class=\"grid\"><tr><th>node</th><th>ranks</th>";
  for (std::int64_t s = lo; s <= hi; ++s) {
    out += fmt::format("<th{}>#{}</th>", s == f.seq ? " class=\"stuck\"" : "", s);
  }
  out += "</tr>\n";
  std::map<std::string, std::vector<int>> by_host;
  for (int r : f.members) by_host[a.HostOf(r)].push_back(r);
  static const std::map<std::int64_t, const Entry*> kEmpty;
  for (const auto& [host, ranks] : by_host) {
    // Fold runs of ranks whose rows are identical: 4096 healthy rows say nothing.
    std::vector<std::pair<std::vector<int>, std::vector<std::string>>> rows;
    for (int r : ranks) {
      const RankDump* d = a.DumpOf(r);
      auto c = cells.find(r);
      std::vector<std::string> row;
      for (std::int64_t s = lo; s <= hi; ++s) {
        row.push_back(CellClass(a, f, d, s, gloo_below, c == cells.end() ? kEmpty : c->second));
      }
      if (!rows.empty() && rows.back().second == row && rows.back().first.back() == r - 1) {
        rows.back().first.push_back(r);
      } else {
        rows.push_back({{r}, row});
      }
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out += fmt::format("<tr><td>{}</td><td>{}</td>", i == 0 ? Esc(host.empty() ? "?" : host) : "",
                         RankRanges(rows[i].first));
      for (std::size_t k = 0; k < rows[i].second.size(); ++k) {
        const std::string& cls = rows[i].second[k];
        out += fmt::format("<td class=\"c {}\" title=\"ranks {} #{}: {}\"></td>", cls,
                           RankRanges(rows[i].first), lo + std::int64_t(k), cls);
      }
      out += "</tr>\n";
    }
  }
  out +=
      "</table>\n<p class=\"legend\"><span class=\"done\"></span>completed"
      "<span class=\"wait\"></span>entered, not completed<span class=\"absent\"></span>never "
      "entered<span class=\"odd\"></span>different op/size/dtype<span class=\"nodump\"></span>"
      "no dump<span class=\"none\"></span>not in the ring buffer</p>\n";
  return out;
}

std::string NodeTable(const FrAnalysis& a, const PgFinding& f) {
  std::set<int> never(f.never_entered.begin(), f.never_entered.end());
  std::set<int> entered(f.entered.begin(), f.entered.end());
  std::set<int> completed(f.completed.begin(), f.completed.end());
  std::set<int> odd;
  for (const OddRank& o : f.odd) odd.insert(o.rank);
  std::map<std::string, std::vector<int>> by_host;
  for (int r : f.members) by_host[a.HostOf(r)].push_back(r);
  std::string out = fmt::format(
      "<table class=\"nodes\"><tr><th>node</th><th>ranks</th><th>entered #{0}</th>"
      "<th>completed #{0}</th><th>never entered</th><th>different op/size</th><th>no dump</th>"
      "<th>finding</th></tr>\n",
      f.seq);
  for (const auto& [host, ranks] : by_host) {
    std::vector<int> n_never, n_odd, n_nodump;
    int n_entered = 0, n_completed = 0;
    for (int r : ranks) {
      n_entered += entered.count(r);
      n_completed += completed.count(r);
      if (never.count(r)) n_never.push_back(r);
      if (odd.count(r)) n_odd.push_back(r);
      if (!a.DumpOf(r)) n_nodump.push_back(r);
    }
    std::string finding = !n_odd.empty()      ? "desync: " + a.DescribeRanks(n_odd)
                          : !n_never.empty()  ? "never entered: " + a.DescribeRanks(n_never)
                          : !n_nodump.empty() ? "no dump: " + RankRanges(n_nodump)
                                              : "";
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        Esc(host.empty() ? "?" : host), RankRanges(ranks), n_entered, n_completed,
        RankRanges(n_never), RankRanges(n_odd), RankRanges(n_nodump), Esc(finding));
  }
  return out + "</table>\n";
}

std::string CauseBlock(const Cause& c, bool first) {
  std::string out = fmt::format(
      "<section class=\"{}\"><h{}>{}{} <small>(confidence {:.2f})</small></h{}>"
      "<p class=\"message\">{}</p><p class=\"fix\">Fix: {}</p>",
      first ? "verdict" : "cause", first ? 1 : 2, first ? "Verdict: " : "", Esc(c.category),
      c.confidence, first ? 1 : 2, Esc(c.message), Esc(c.fix));
  out += fmt::format("<details><summary>evidence ({})</summary><ul>", c.evidence.size());
  for (const auto& e : c.evidence) {
    out += fmt::format("<li><code>{}{}</code></li>", e.file.empty() ? "" : Esc(e.file) + ": ",
                       Esc(e.text));
  }
  return out + "</ul></details></section>\n";
}

}  // namespace

std::string_view PageStyle() { return kStyle; }

std::string GridHtml(const FrAnalysis& a) {
  const PgFinding* f = a.Top();
  if (f == nullptr) return "";
  std::string out = fmt::format("<h2>Ranks x collectives of {}</h2>\n", Esc(CollectiveName(a, *f)));
  out += Grid(a, *f);
  return out + "<h2>Per node</h2>\n" + NodeTable(a, *f);
}

std::string DiagnosisHtml(const FrAnalysis& a, const std::vector<Cause>& causes) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>safe-launch diagnosis</title><style>";
  out += kStyle;
  out += "</style></head><body>\n";
  if (causes.empty()) {
    out +=
        "<section class=\"verdict healthy\"><h1>Verdict: healthy</h1><p class=\"message\">"
        "every collective in the dumps completed on every rank</p></section>\n";
  }
  for (std::size_t i = 0; i < causes.size(); ++i) out += CauseBlock(causes[i], i == 0);
  out += fmt::format("<p>{} dumps read, {} unreadable, world of {} ranks, {} without a dump.</p>\n",
                     a.dumps.size(), a.errors.size(), a.world_size, a.missing.size());
  out += GridHtml(a);
  if (!a.errors.empty() || !a.notes.empty()) {
    out += "<h2>Files</h2><details open><summary>unreadable dumps and notes</summary><ul>";
    for (const auto& e : a.errors) {
      out += fmt::format("<li><code>{}</code>{}: {}</li>", Esc(e.file),
                         e.offset >= 0 ? fmt::format(" at byte {}", e.offset) : "", Esc(e.message));
    }
    for (const auto& n : a.notes) out += "<li>" + Esc(n) + "</li>";
    out += "</ul></details>\n";
  }
  return out + "</body></html>\n";
}

}  // namespace sl::diagnose::fr
