#include "common/parse/nccl_tests.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/strings.h"

namespace sl {

std::optional<double> NcclTestsRow::BestBusbw() const {
  std::optional<double> best = out_of_place.busbw_gbps;
  if (in_place.busbw_gbps && (!best || *in_place.busbw_gbps > *best)) best = in_place.busbw_gbps;
  return best;
}

std::int64_t NcclTestsRow::Wrong() const {
  return out_of_place.wrong.value_or(0) + in_place.wrong.value_or(0);
}

std::int64_t NcclTestsOutput::WrongTotal() const {
  std::int64_t total = out_of_bounds.value_or(0);
  for (const auto& r : rows) total += r.Wrong();
  return total;
}

namespace {

using Tokens = std::vector<std::string_view>;

// Finite decimal numbers only: a garbled "3.8e" or "nan" is a problem, not a figure.
std::optional<double> Number(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

template <typename T>
std::optional<T> Integer(std::string_view s) {
  T v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// srun --label ("12: ") and mpirun --tag-output ("[1,0]<stdout>:") prefixes go; the rest of the
// line is nccl-tests' own.
std::string_view StripLauncherPrefix(std::string_view line) {
  std::string_view t = Trim(line);
  if (StartsWith(t, "[")) {
    auto close = t.find("]<std");
    auto colon = t.find(">:");
    if (close != std::string_view::npos && colon != std::string_view::npos && colon > close)
      return t.substr(colon + 2);
  }
  std::size_t i = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  if (i > 0 && i < t.size() && t[i] == ':') return t.substr(i + 1);
  return line;
}

// Where each named column sits in a row (-1 = the layout has none).
struct Layout {
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  struct Half {
    int time = -1, algbw = -1, busbw = -1, wrong = -1, error = -1;
  } half[2];
  int needed = 0;  ///< tokens a row must have to hold every column found
};

Layout MapColumns(const Tokens& names) {
  Layout l;
  int times = 0, algbws = 0, busbws = 0, wrongs = 0, errors = 0;
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    std::string_view n = names[static_cast<std::size_t>(i)];
    auto slot = [&](int* seen, int Layout::Half::*field) {
      if (*seen < 2) l.half[*seen].*field = i;
      ++*seen;
    };
    if (n == "size")
      l.size = i;
    else if (n == "count")
      l.count = i;
    else if (n == "type")
      l.type = i;
    else if (n == "redop")
      l.redop = i;
    else if (n == "root")
      l.root = i;
    else if (n == "time" || n == "cputime")
      slot(&times, &Layout::Half::time);
    else if (n == "algbw")
      slot(&algbws, &Layout::Half::algbw);
    else if (n == "busbw")
      slot(&busbws, &Layout::Half::busbw);
    else if (n == "#wrong")
      slot(&wrongs, &Layout::Half::wrong);
    else if (n == "error")
      slot(&errors, &Layout::Half::error);
    else
      continue;
    l.needed = i + 1;
  }
  return l;
}

bool IsColumnHeader(const Tokens& t) {
  return std::find(t.begin(), t.end(), "size") != t.end() &&
         std::find(t.begin(), t.end(), "busbw") != t.end();
}

// One half's columns; false (with `why`) when a figure does not read.
bool ReadHalf(const Tokens& t, const Layout::Half& h, NcclTestsHalf* out, std::string* why) {
  auto num = [&](int col, std::optional<double>* dst, const char* name) {
    if (col < 0) return true;
    std::string_view s = t[static_cast<std::size_t>(col)];
    if (s == "N/A") return true;
    *dst = Number(s);
    if (!*dst) *why = std::string(name) + " '" + Printable(s, 40) + "' is not a number";
    return dst->has_value();
  };
  out->present = h.time >= 0 || h.busbw >= 0;
  if (!num(h.time, &out->time_us, "time") || !num(h.algbw, &out->algbw_gbps, "algbw") ||
      !num(h.busbw, &out->busbw_gbps, "busbw") || !num(h.error, &out->max_error, "error"))
    return false;
  if (h.wrong >= 0) {
    std::string_view s = t[static_cast<std::size_t>(h.wrong)];
    if (s != "N/A") {
      out->wrong = Integer<std::int64_t>(s);
      if (!out->wrong || *out->wrong < 0) {
        *why = "#wrong '" + Printable(s, 40) + "' is not a count";
        out->wrong.reset();
        return false;
      }
    }
  }
  return true;
}

std::optional<NcclTestsRow> ReadRow(const Tokens& t, const Layout& l, std::string* why) {
  if (static_cast<int>(t.size()) < l.needed) {
    *why = "row has " + std::to_string(t.size()) + " fields, the header names " +
           std::to_string(l.needed) + " (truncated?)";
    return std::nullopt;
  }
  NcclTestsRow r;
  auto bytes = Integer<std::uint64_t>(t[static_cast<std::size_t>(l.size)]);
  if (!bytes) {
    *why = "size '" + Printable(t[static_cast<std::size_t>(l.size)], 40) + "' is not a count";
    return std::nullopt;
  }
  r.bytes = *bytes;
  if (l.count >= 0) {
    auto count = Integer<std::uint64_t>(t[static_cast<std::size_t>(l.count)]);
    if (!count) {
      *why = "count '" + Printable(t[static_cast<std::size_t>(l.count)], 40) + "' is not a count";
      return std::nullopt;
    }
    r.count = *count;
  }
  if (l.type >= 0) r.type = std::string(t[static_cast<std::size_t>(l.type)]);
  if (l.redop >= 0) r.redop = std::string(t[static_cast<std::size_t>(l.redop)]);
  if (l.root >= 0) {
    auto root = Integer<int>(t[static_cast<std::size_t>(l.root)]);
    if (!root) {
      *why = "root '" + Printable(t[static_cast<std::size_t>(l.root)], 40) + "' is not a rank";
      return std::nullopt;
    }
    r.root = *root;
  }
  if (!ReadHalf(t, l.half[0], &r.out_of_place, why) || !ReadHalf(t, l.half[1], &r.in_place, why))
    return std::nullopt;
  return r;
}

// "#  Rank  0 Group  0 Pid  12345 on   node01 device  0 [0x07] NVIDIA A100-SXM4-80GB" (tokens
// after the '#'); Group is absent in older nccl-tests.
std::optional<NcclTestsRank> ReadRank(const Tokens& t) {
  NcclTestsRank r;
  std::size_t i = 0;
  auto expect_int = [&](std::string_view key, int* dst) {
    if (i + 1 >= t.size() || t[i] != key) return false;
    auto v = Integer<int>(t[i + 1]);
    if (!v) return false;
    *dst = *v;
    i += 2;
    return true;
  };
  if (!expect_int("Rank", &r.rank)) return std::nullopt;
  if (i < t.size() && t[i] == "Group" && !expect_int("Group", &r.group)) return std::nullopt;
  if (!expect_int("Pid", &r.pid)) return std::nullopt;
  if (i + 1 >= t.size() || t[i] != "on") return std::nullopt;
  r.host = std::string(t[i + 1]);
  i += 2;
  if (!expect_int("device", &r.device)) return std::nullopt;
  if (i < t.size() && StartsWith(t[i], "[")) {
    std::string_view bus = t[i];
    bus.remove_prefix(1);
    if (EndsWith(bus, "]")) bus.remove_suffix(1);
    r.bus_id = std::string(bus);
    ++i;
  }
  std::vector<std::string> name;
  for (; i < t.size(); ++i) name.emplace_back(t[i]);
  r.device_name = Join(name, " ");
  return r;
}

// "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20
// agg iters: 1 validation: 1 graph: 0".
void ReadRunLine(const Tokens& t, NcclTestsOutput* out) {
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    std::string_view k = t[i], v = t[i + 1];
    if (k == "nThread") out->nthread = Integer<int>(v).value_or(0);
    if (k == "nGpus") out->ngpus = Integer<int>(v).value_or(0);
    if (k == "minBytes") out->min_bytes = Integer<std::uint64_t>(v).value_or(0);
    if (k == "maxBytes") out->max_bytes = Integer<std::uint64_t>(v).value_or(0);
    if (k == "validation:") out->validation = Integer<int>(v);
    if (k == "iters:") {
      std::string_view before = i > 0 ? t[i - 1] : std::string_view();
      if (before == "warmup")
        out->warmup_iters = Integer<int>(v).value_or(0);
      else if (before != "agg")
        out->iters = Integer<int>(v).value_or(0);
    }
  }
}

// "./build/all_reduce_perf -b 8M ..." or "# Collective test starting: all_reduce_perf".
std::string ProgramName(const Tokens& t) {
  for (auto tok : t) {
    auto slash = tok.rfind('/');
    std::string_view base = slash == std::string_view::npos ? tok : tok.substr(slash + 1);
    if (EndsWith(base, "_perf") || EndsWith(base, "_perf_mpi")) return std::string(base);
  }
  return "";
}

// "# Avg bus bandwidth    : 3.85845 OK" -> the figure after the colon.
std::optional<std::string_view> AfterColon(std::string_view line) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto rest = Fields(line.substr(colon + 1));
  if (rest.empty()) return std::nullopt;
  return rest.front();
}

struct State {
  NcclTestsOutput out;
  std::optional<Layout> layout;
  int line_no = 0;
  void Problem(const std::string& why) {
    out.problems.push_back("line " + std::to_string(line_no) + ": " + why);
  }
};

void ReadCommentLine(std::string_view body, State* s) {
  Tokens t = Fields(body);
  if (t.empty()) return;
  NcclTestsOutput& out = s->out;
  if (IsColumnHeader(t)) {
    s->layout = MapColumns(t);
    out.columns.assign(t.begin(), t.end());
  } else if (t[0] == "Rank") {
    if (auto r = ReadRank(t))
      out.ranks.push_back(std::move(*r));
    else
      s->Problem("unreadable rank line");
  } else if (t[0] == "nThread") {
    ReadRunLine(t, &out);
  } else if (StartsWith(body, " nccl-tests version") || t[0] == "nccl-tests") {
    if (t.size() >= 3) out.version = std::string(t[2]);
  } else if (t.size() >= 3 && t[0] == "Collective" && t[1] == "test" && t[2] == "starting:") {
    if (out.program.empty()) out.program = ProgramName(t);
  } else if (t.size() >= 3 && t[0] == "Avg" && t[1] == "bus" && t[2] == "bandwidth") {
    auto v = AfterColon(body);
    auto n = v ? Number(*v) : std::nullopt;
    if (n)
      out.avg_busbw_gbps = n;
    else
      s->Problem("unreadable 'Avg bus bandwidth' line");
  } else if (t.size() >= 3 && t[0] == "Out" && t[1] == "of" && t[2] == "bounds") {
    auto v = AfterColon(body);
    auto n = v ? Integer<std::int64_t>(*v) : std::nullopt;
    if (n)
      out.out_of_bounds = n;
    else
      s->Problem("unreadable 'Out of bounds values' line");
  } else if (t[0] == "error:") {
    out.errors.emplace_back(Trim(body));
  }
}

}  // namespace

Result<NcclTestsOutput> ParseNcclTests(std::string_view text) {
  State s;
  ForEachLine(text, [&](std::string_view raw) {
    ++s.line_no;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    std::string_view line = Trim(StripLauncherPrefix(raw));
    if (line.empty()) return;
    if (line.front() == '#') {
      ReadCommentLine(line.substr(1), &s);
      return;
    }
    if (line.find("Test NCCL failure") != std::string_view::npos ||
        line.find("Test CUDA failure") != std::string_view::npos ||
        line.find("Test failure") != std::string_view::npos) {
      s.out.errors.emplace_back(line);
      return;
    }
    Tokens t = Fields(line);
    if (line.front() >= '0' && line.front() <= '9' && s.layout) {
      std::string why;
      if (auto row = ReadRow(t, *s.layout, &why)) {
        row->line = s.line_no;
        s.out.rows.push_back(std::move(*row));
      } else {
        s.Problem(why);
      }
      return;
    }
    if (s.out.program.empty()) s.out.program = ProgramName(t);
  });
  if (!s.layout && !s.out.Complete())
    return MakeError("no nccl-tests result table (no 'size ... busbw' column header)", "",
                     "pass the standard output of all_reduce_perf (or another *_perf)");
  if (s.out.rows.empty() && !s.out.Complete())
    return MakeError("nccl-tests output without a single result row" +
                         (s.out.errors.empty() ? std::string() : ": " + s.out.errors.front()),
                     "", "the run failed before its first size; look at its NCCL errors");
  return std::move(s.out);
}

}  // namespace sl
