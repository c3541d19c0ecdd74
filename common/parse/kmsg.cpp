#include "common/parse/kmsg.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/strings.h"

namespace sl {
namespace {

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// First "dddd:bb:dd.f" PCI address in `s` (domain:bus:device.function, hex), "" when none.
std::string FindBdf(std::string_view s) {
  for (std::size_t i = 0; i + 12 <= s.size(); ++i) {
    std::string_view c = s.substr(i, 12);
    if (IsHex(c[0]) && IsHex(c[1]) && IsHex(c[2]) && IsHex(c[3]) && c[4] == ':' && IsHex(c[5]) &&
        IsHex(c[6]) && c[7] == ':' && IsHex(c[8]) && IsHex(c[9]) && c[10] == '.' && c[11] >= '0' &&
        c[11] <= '7' && (i == 0 || !IsHex(s[i - 1]))) {
      return ToLower(c);
    }
  }
  return {};
}

std::string DecodeKmsgEscapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' && IsHex(s[i + 2]) && IsHex(s[i + 3])) {
      auto hexval = [](char c) {
        return std::isdigit(static_cast<unsigned char>(c))
                   ? c - '0'
                   : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
      };
      out.push_back(static_cast<char>(hexval(s[i + 2]) * 16 + hexval(s[i + 3])));
      i += 3;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The word right before `marker` ("mlx5_5" in "... mlx5_5: Port: 1 Link DOWN").
std::string WordBefore(std::string_view s, std::size_t marker) {
  std::size_t end = marker;
  while (end > 0 && (s[end - 1] == ':' || s[end - 1] == ' ')) --end;
  std::size_t start = end;
  while (start > 0 && s[start - 1] != ' ') --start;
  return std::string(s.substr(start, end - start));
}

KernelEvent Ev(KernelEventKind kind, std::string entity, std::string what) {
  KernelEvent e;
  e.kind = kind;
  e.entity = std::move(entity);
  e.what = std::move(what);
  return e;
}

}  // namespace

KmsgParse ParseKmsg(std::string_view text) {
  KmsgParse out;
  int line_no = 0;
  std::size_t pos = 0;
  bool after_record = false;  // dictionary lines belong to the record right above them
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.empty()) continue;
    if (line[0] == ' ') {
      // Dictionary line of the record above (" SUBSYSTEM=pci", " DEVICE=+pci:0000:41:00.0").
      if (!after_record) {
        out.bad_lines.push_back(line_no);
      } else if (StartsWith(line, " DEVICE=")) {
        out.records.back().device = std::string(line.substr(8));
      }
      continue;
    }
    after_record = false;
    std::size_t semi = line.find(';');
    if (semi == std::string_view::npos) {
      out.bad_lines.push_back(line_no);
      continue;
    }
    auto head = Split(line.substr(0, semi), ',', false);
    if (head.size() < 4) {
      out.bad_lines.push_back(line_no);
      continue;
    }
    auto prio = ParseUint(head[0]);
    auto seq = ParseUint(head[1]);
    auto usec = ParseUint(head[2]);
    if (!prio.ok() || !seq.ok() || !usec.ok() || *prio > 1023 ||
        *usec > static_cast<std::uint64_t>(INT64_MAX)) {
      out.bad_lines.push_back(line_no);
      continue;
    }
    KmsgRecord r;
    r.level = static_cast<int>(*prio & 7);
    r.facility = static_cast<int>(*prio >> 3);
    r.seq = *seq;
    r.usec = static_cast<std::int64_t>(*usec);
    r.message = DecodeKmsgEscapes(line.substr(semi + 1));
    r.line = line_no;
    out.records.push_back(std::move(r));
    after_record = true;
  }
  return out;
}

std::string KmsgDmesgLine(const KmsgRecord& r) {
  char stamp[48];
  std::snprintf(stamp, sizeof stamp, "[%5lld.%06lld] ", static_cast<long long>(r.usec / 1000000),
                static_cast<long long>(r.usec % 1000000));
  std::string_view msg = r.message;
  msg = msg.substr(0, msg.find('\n'));
  return stamp + Printable(msg, 400);
}

namespace {

// NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors), the codes safe-launch explains.
// `fatal`: the GPU (or its NVLink/memory) needs attention before it is used again.
constexpr XidInfo kXids[] = {
    {13, false, "graphics engine exception (usually the application)"},
    {31, false, "GPU memory page fault (usually the application)"},
    {43, false, "GPU stopped processing (usually the application)"},
    {45, false, "preemptive cleanup after an earlier error"},
    {48, true, "double-bit ECC error"},
    {61, true, "internal micro-controller breakpoint/warning"},
    {62, true, "internal micro-controller halt"},
    {63, true, "ECC page retirement / row remapping event (reset to apply)"},
    {64, true, "ECC page retirement / row remapping failure"},
    {74, true, "NVLink error"},
    {79, true, "GPU has fallen off the bus"},
    {92, true, "high single-bit ECC error rate"},
    {94, true, "contained ECC error"},
    {95, true, "uncontained ECC error"},
    {119, true, "GSP RPC timeout"},
    {120, true, "GSP error"},
    {121, true, "C2C link error"},
    {140, true, "unrecovered ECC error"},
    {143, true, "GPU initialization failure"},
    {154, true, "GPU recovery action changed (reset or reboot required)"},
};

}  // namespace

const XidInfo* FindXid(int xid) {
  for (const XidInfo& x : kXids) {
    if (x.code == xid) return &x;
  }
  return nullptr;
}

bool IsFatalXid(int xid) {
  const XidInfo* x = FindXid(xid);
  return x != nullptr && x->fatal;
}

std::string XidMeaning(int xid) {
  const XidInfo* x = FindXid(xid);
  return x != nullptr ? std::string(x->meaning) : std::string();
}

namespace {

// NVIDIA: "NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus." and "GPU has
// fallen off the bus" without an Xid line.
std::optional<KernelEvent> ClassifyNvidia(std::string_view m) {
  if (std::size_t x = m.find("NVRM: Xid ("); x != std::string_view::npos) {
    std::size_t close = m.find("): ", x);
    if (close != std::string_view::npos) {
      KernelEvent e = Ev(KernelEventKind::kXid, "", "");
      std::string_view where = m.substr(x + 11, close - x - 11);
      if (StartsWith(where, "PCI:")) where.remove_prefix(4);
      e.entity = ToLower(where);
      if (e.entity.size() == 10 && e.entity[4] == ':' && e.entity[7] == ':') e.entity += ".0";
      std::string_view num = m.substr(close + 3);
      num = num.substr(0, std::min(num.find(','), num.find(' ')));
      auto v = ParseInt(num);
      if (!v.ok() || *v < 0 || *v > 100000) return std::nullopt;
      e.xid = static_cast<int>(*v);
      e.fatal = IsFatalXid(e.xid);
      e.what = "Xid " + std::to_string(e.xid);
      if (auto meaning = XidMeaning(e.xid); !meaning.empty()) e.what += " (" + meaning + ")";
      return e;
    }
  }
  if (Contains(m, "NVRM") && Contains(m, "fallen off the bus")) {
    return Ev(KernelEventKind::kGpuFellOffBus, FindBdf(m), "GPU has fallen off the bus");
  }
  return std::nullopt;
}

// Ratelimit notes: "mlx5_cmd_out_err: 353031 callbacks suppressed".
std::optional<KernelEvent> ClassifySuppressed(std::string_view m) {
  std::size_t cs = m.find(" callbacks suppressed");
  if (cs == std::string_view::npos) return std::nullopt;
  std::size_t colon = m.find(": ");
  if (colon == std::string_view::npos || colon >= cs) return std::nullopt;
  auto n = ParseUint(m.substr(colon + 2, cs - colon - 2));
  if (!n.ok()) return std::nullopt;
  KernelEvent e = Ev(KernelEventKind::kSuppressed, "", "");
  e.suppressed_func = std::string(m.substr(0, colon));
  e.count = *n;
  return e;
}

// InfiniBand core on every port state change ("<drv> <bdf> mlx5_5: Port: 1 Link DOWN"); netdev
// carrier: mlx5e "mlx5_core 0000:ab:00.0 ens1np0: Link down", Intel/Broadcom "eth0: NIC Link is
// Down". `*decided` is set when the line is an IB port line (matched or not).
std::optional<KernelEvent> ClassifyLink(std::string_view m, bool* decided) {
  *decided = false;
  if (std::size_t p = m.find(": Port: "); p != std::string_view::npos) {
    std::string_view rest = m.substr(p + 8);
    std::size_t sp = rest.find(' ');
    if (sp != std::string_view::npos && StartsWith(rest.substr(sp), " Link ")) {
      *decided = true;
      std::string state(Trim(rest.substr(sp + 6)));
      std::string entity = WordBefore(m, p) + ":" + std::string(rest.substr(0, sp));
      if (state == "DOWN") return Ev(KernelEventKind::kLinkDown, entity, "Link DOWN");
      if (state == "ACTIVE") return Ev(KernelEventKind::kLinkUp, entity, "Link ACTIVE");
      return std::nullopt;
    }
  }
  for (auto [marker, up] : {std::pair<std::string_view, bool>{": Link down", false},
                            {": Link up", true},
                            {": NIC Link is Down", false},
                            {": NIC Link is Up", true}}) {
    std::size_t at = m.find(marker);
    if (at == std::string_view::npos) continue;
    std::size_t end = at + marker.size();
    if (end != m.size() && m[end] != ',' && m[end] != ' ') continue;
    std::string entity = WordBefore(m, at);
    if (entity.empty()) continue;
    return Ev(up ? KernelEventKind::kLinkUp : KernelEventKind::kLinkDown, entity,
              up ? "Link up" : "Link down");
  }
  return std::nullopt;
}

// PCIe AER: "pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0".
std::optional<KernelEvent> ClassifyAer(std::string_view m) {
  std::size_t a = m.find("AER: ");
  if (a == std::string_view::npos || !Contains(m.substr(a), "error received")) return std::nullopt;
  std::string_view after = m.substr(a);
  std::size_t recv = after.find("received: ");
  std::string entity = recv != std::string_view::npos ? FindBdf(after.substr(recv)) : "";
  if (entity.empty()) entity = FindBdf(m);
  if (Contains(after, "Uncorrected")) {
    KernelEvent e = Ev(KernelEventKind::kPcieAerUncorrected, entity, "");
    e.fatal = Contains(after, "(Fatal)");
    e.what = e.fatal ? "PCIe AER uncorrected (fatal) error" : "PCIe AER uncorrected error";
    return e;
  }
  if (Contains(after, "Corrected")) {
    return Ev(KernelEventKind::kPcieAerCorrected, entity, "PCIe AER corrected error");
  }
  return std::nullopt;
}

// mlx5 memory registration: "infiniband mlx5_0: create_mkey_warn:158:(pid 0): async reg mr
// failed. status -121"; firmware commands: "mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid
// 233522): CREATE_MKEY(0x200) op_mod(0x0) failed, status limits exceeded(0x8), ...", older kernels
// "mlx5_cmd_check", timeouts from "cmd_work_handler", resets and health reports.
std::optional<KernelEvent> ClassifyMlx5(std::string_view m) {
  if (Contains(m, "create_mkey_warn") && Contains(m, "failed")) {
    std::size_t at = m.find("create_mkey_warn");
    std::string_view what =
        m.substr(m.find("): ", at) == std::string_view::npos ? at : m.find("): ", at) + 3);
    return Ev(KernelEventKind::kMlx5MrFailure, WordBefore(m, at), std::string(what));
  }
  if (!StartsWith(m, "mlx5_core ") && !StartsWith(m, "mlx5_ib ")) return std::nullopt;
  bool failure = Contains(m, "cmd_work_handler") || Contains(m, "SW reset") ||
                 (Contains(m, "op_mod(") && Contains(m, "failed")) ||
                 (Contains(m, "RULE_ADD") && Contains(m, "failed")) ||
                 Contains(m, "health compromised") || Contains(m, "internal error");
  if (!failure) return std::nullopt;
  std::string_view what = m;
  if (std::size_t pid = m.find("(pid "); pid != std::string_view::npos) {
    std::size_t close = m.find("): ", pid);
    if (close != std::string_view::npos) what = m.substr(close + 3);
  } else if (std::size_t colon = m.find(": "); colon != std::string_view::npos) {
    what = m.substr(colon + 2);
  }
  std::string entity = FindBdf(m);
  return Ev(KernelEventKind::kMlx5CommandFailure, entity.empty() ? std::string("mlx5") : entity,
            std::string(what));
}

}  // namespace

std::optional<KernelEvent> ClassifyKernelRecord(const KmsgRecord& r) {
  std::string_view m = r.message;
  if (auto e = ClassifyNvidia(m)) return e;
  if (auto e = ClassifySuppressed(m)) return e;
  bool port_line = false;
  if (auto e = ClassifyLink(m, &port_line)) return e;
  if (port_line) return std::nullopt;
  if (auto e = ClassifyAer(m)) return e;
  return ClassifyMlx5(m);
}

}  // namespace sl
