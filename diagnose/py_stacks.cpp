#include "diagnose/py_stacks.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"

namespace sl::diagnose {

namespace {

std::uint64_t Number(std::string_view s) {
  auto v = ParseUint(s);
  return v.ok() ? *v : 0;
}

// `key=value` out of the safe-launch header ("pid=4242 rank=1 main_thread=0x...").
std::string HeaderValue(std::string_view line, std::string_view key) {
  for (std::string_view f : Fields(line)) {
    if (f.size() > key.size() && StartsWith(f, key) && f[key.size()] == '=') {
      return std::string(f.substr(key.size() + 1));
    }
  }
  return "";
}

// faulthandler: `  File "/x/train.py", line 29 in <module>` (line may be "???").
std::optional<PyFrame> FaulthandlerFrame(std::string_view t) {
  if (!StartsWith(t, "File \"")) return std::nullopt;
  const auto q = t.find("\", line ", 6);
  if (q == std::string_view::npos) return std::nullopt;
  PyFrame f;
  f.file = std::string(t.substr(6, q - 6));
  std::string_view rest = t.substr(q + 8);
  const auto in = rest.find(" in ");
  f.line = Number(rest.substr(0, in));
  f.function = in == std::string_view::npos ? "" : std::string(rest.substr(in + 4));
  return f;
}

// py-spy: `    <module> (train.py:29)`, `    all_reduce (torch/distributed/c10d.py:1536)`,
// native `    epoll_wait (libc.so.6)` or `    0x7f3a1c2fd640 (libtorch_cpu.so)`.
std::optional<PyFrame> PySpyFrame(std::string_view t) {
  if (t.empty() || t.back() != ')') return std::nullopt;
  const auto open = t.rfind(" (");
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  PyFrame f;
  f.function = std::string(t.substr(0, open));
  std::string_view where = t.substr(open + 2, t.size() - open - 3);
  const auto colon = where.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < where.size() &&
      std::all_of(where.begin() + colon + 1, where.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    f.file = std::string(where.substr(0, colon));
    f.line = Number(where.substr(colon + 1));
  } else {
    f.file = std::string(where);
    f.native = true;
  }
  return f;
}

// "Thread 0x00007f.. (most recent call first):" / "Current thread 0x.. (most recent call first):"
bool FaulthandlerThread(std::string_view t, PyThread* out) {
  bool current = false;
  if (StartsWith(t, "Current thread ")) {
    current = true;
    t.remove_prefix(15);
  } else if (StartsWith(t, "Thread ")) {
    t.remove_prefix(7);
  } else {
    return false;
  }
  if (!EndsWith(t, "(most recent call first):")) return false;
  out->id = std::string(Trim(t.substr(0, t.find(' '))));
  out->current = current;
  return true;
}

// py-spy: `Thread 4242 (idle): "MainThread"`, `Thread 0x7F3A (active+gil): "Thread-1"`.
bool PySpyThread(std::string_view t, PyThread* out) {
  if (!StartsWith(t, "Thread ") || EndsWith(t, "(most recent call first):")) return false;
  t.remove_prefix(7);
  const auto sp = t.find(' ');
  const auto paren = t.find("):");
  if (sp == std::string_view::npos || paren == std::string_view::npos || t[sp + 1] != '(')
    return false;
  out->id = std::string(t.substr(0, sp));
  std::string_view name = Trim(t.substr(paren + 2));
  if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
    name = name.substr(1, name.size() - 2);
  out->name = std::string(name);
  out->main = out->name == "MainThread";
  return true;
}

}  // namespace

std::string NormalThreadId(std::string_view id) {
  std::string s = ToLower(Trim(id));
  if (!StartsWith(s, "0x")) return s;
  std::size_t i = 2;
  while (i + 1 < s.size() && s[i] == '0') ++i;
  return "0x" + s.substr(i);
}

const PyThread* PyStacks::Main() const {
  for (const PyThread& t : threads) {
    if (t.main) return &t;
  }
  for (const PyThread& t : threads) {
    if (!t.frames.empty() && t.frames.back().function == "<module>") return &t;
  }
  for (const PyThread& t : threads) {
    if (t.current) return &t;
  }
  return threads.empty() ? nullptr : &threads.front();
}

PyStacks ParsePyStacks(std::string_view text) {
  PyStacks out;
  std::string main_id;
  PyThread* cur = nullptr;
  std::uint64_t line_no = 0;
  ForEachLine(text, [&](std::string_view raw) {
    ++line_no;
    const std::string_view t = Trim(raw);
    if (StartsWith(t, "# safe-launch python stacks:")) {
      if (auto pid = ParseInt(HeaderValue(t, "pid")); pid.ok()) out.pid = *pid;
      if (auto rank = ParseInt(HeaderValue(t, "rank")); rank.ok())
        out.rank = static_cast<int>(*rank);
      main_id = NormalThreadId(HeaderValue(t, "main_thread"));
      return;
    }
    if (StartsWith(t, "Process ") && out.pid < 0) {  // py-spy: "Process 4242: python train.py"
      const auto colon = t.find(':');
      if (auto pid = ParseInt(t.substr(8, colon - 8)); pid.ok()) out.pid = *pid;
      return;
    }
    PyThread th;
    const bool fh = FaulthandlerThread(t, &th);
    if (fh || PySpyThread(t, &th)) {
      if (out.format.empty()) out.format = fh ? "faulthandler" : "py-spy";
      const std::string id = NormalThreadId(th.id);
      // The same thread again: a later dump appended to the file; keep only that one.
      if (std::any_of(out.threads.begin(), out.threads.end(),
                      [&](const PyThread& x) { return NormalThreadId(x.id) == id; })) {
        out.threads.clear();
      }
      if (!main_id.empty()) th.main = id == main_id;
      out.threads.push_back(std::move(th));
      cur = &out.threads.back();
      return;
    }
    if (cur == nullptr || t.empty()) return;
    auto frame = out.format == "faulthandler" ? FaulthandlerFrame(t) : PySpyFrame(t);
    if (!frame) return;
    frame->text = std::string(t);
    frame->line_no = line_no;
    cur->frames.push_back(std::move(*frame));
  });
  return out;
}

}  // namespace sl::diagnose
