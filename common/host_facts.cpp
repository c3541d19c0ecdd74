// The host part of NodeFacts (everything but IB/RoCE ports) and the pure parsers behind it
// (declared in common/host_parse.h). Reading goes through the FileReader, so a --sysroot tree in
// the real layout gives the facts of the machine it was built from.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "common/host_parse.h"
#include "common/log.h"
#include "common/node_facts.h"
#include "common/strings.h"

namespace sl {
namespace {

// Whitespace-separated fields of a line.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string LineWhere(int line) { return "line " + std::to_string(line); }

Result<std::uint64_t> ParseLimitValue(std::string_view v) {
  if (v == "unlimited") return kUnlimited;
  return ParseUint(v, "limit");
}

// /proc/mounts escapes space, tab, newline and backslash as \ooo (fs/proc_namespace.c).
std::string UnescapeMountField(std::string_view s) {
  std::string out;
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::string Printable(std::string_view s, std::size_t max) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out.push_back(' ');
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    }
  }
  return out;
}

// ---- /proc/self/limits -------------------------------------------------------------------------

Result<std::vector<ProcLimit>> ParseProcLimits(std::string_view text) {
  // Columns are fixed by seq_printf("%-25s %-20s %-20s %-10s"), but names contain spaces, so
  // parse from the right: [units] hard soft, the rest is the name.
  std::vector<ProcLimit> out;
  auto lines = SplitLines(text);
  bool header = false;
  int line_no = 0;
  for (const auto& line : lines) {
    ++line_no;
    std::string_view t = Trim(line);
    if (t.empty()) continue;
    if (!header) {
      if (!StartsWith(t, "Limit") || t.find("Soft Limit") == std::string_view::npos) {
        return MakeError(
            "not a limits table: the first line is not the \"Limit  Soft Limit  "
            "Hard Limit  Units\" header",
            LineWhere(line_no));
      }
      header = true;
      continue;
    }
    auto f = Fields(t);
    // Find the soft/hard pair: the last two fields that are numbers or "unlimited".
    auto is_value = [](std::string_view v) {
      return v == "unlimited" || (!v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
               return std::isdigit(static_cast<unsigned char>(c));
             }));
    };
    ProcLimit row;
    row.raw = Printable(t);
    std::size_t n = f.size();
    std::size_t hard_at;
    if (n >= 3 && is_value(f[n - 1]) && is_value(f[n - 2])) {
      hard_at = n - 1;
    } else if (n >= 4 && !is_value(f[n - 1]) && is_value(f[n - 2]) && is_value(f[n - 3])) {
      hard_at = n - 2;
      row.units = std::string(f[n - 1]);
    } else {
      return MakeError("malformed limits row \"" + Printable(t) +
                           "\" (expected: name, soft, hard, units; values are numbers or "
                           "\"unlimited\")",
                       LineWhere(line_no));
    }
    std::string name;
    for (std::size_t i = 0; i + 1 < hard_at; ++i) {
      if (!name.empty()) name.push_back(' ');
      name.append(f[i]);
    }
    if (name.empty()) {
      return MakeError("limits row without a name: \"" + Printable(t) + "\"", LineWhere(line_no));
    }
    row.name = std::move(name);
    auto soft = ParseLimitValue(f[hard_at - 1]);
    auto hard = ParseLimitValue(f[hard_at]);
    if (!soft.ok() || !hard.ok()) {
      return MakeError("limit value out of range in \"" + Printable(t) + "\"", LineWhere(line_no));
    }
    row.soft = *soft;
    row.hard = *hard;
    out.push_back(std::move(row));
  }
  if (!header) return MakeError("empty limits file (no \"Limit\" header)");
  return out;
}

Result<ProcLimit> FindLimit(std::string_view text, std::string_view name) {
  // Rows are parsed one by one so that garbage in an unrelated row does not hide this one, but
  // garbage in the wanted row is an error.
  auto lines = SplitLines(text);
  if (lines.empty() || !StartsWith(Trim(lines[0]), "Limit")) {
    auto all = ParseProcLimits(text);
    if (!all.ok()) return all.error();
  }
  int line_no = 0;
  for (const auto& line : lines) {
    ++line_no;
    std::string_view t = Trim(line);
    if (!StartsWith(t, name)) continue;
    std::string one = "Limit Soft Limit Hard Limit Units\n" + std::string(t) + "\n";
    auto rows = ParseProcLimits(one);
    if (!rows.ok()) {
      Error e = rows.error();
      e.where = LineWhere(line_no);
      return e;
    }
    if (rows->size() == 1 && (*rows)[0].name == name) return (*rows)[0];
    return MakeError("malformed \"" + std::string(name) + "\" row: \"" + Printable(t) + "\"",
                     LineWhere(line_no));
  }
  return MakeError("no \"" + std::string(name) + "\" row");
}

// ---- /proc/mounts, /proc/meminfo, /dev/shm -----------------------------------------------------

Result<std::vector<MountEntry>> ParseProcMounts(std::string_view text) {
  std::vector<MountEntry> out;
  int line_no = 0;
  for (const auto& line : SplitLines(text)) {
    ++line_no;
    std::string_view t = Trim(line);
    if (t.empty()) continue;
    auto f = Fields(t);
    if (f.size() < 4) {
      return MakeError("malformed mount line \"" + Printable(t) +
                           "\" (expected: source mountpoint type options dump pass)",
                       LineWhere(line_no));
    }
    MountEntry m;
    m.source = UnescapeMountField(f[0]);
    m.mount_point = UnescapeMountField(f[1]);
    m.fs_type = std::string(f[2]);
    m.options = std::string(f[3]);
    m.raw = Printable(t);
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<std::string> MountOption(std::string_view options, std::string_view key) {
  for (const auto& opt : Split(options, ',')) {
    if (opt.size() > key.size() && opt.compare(0, key.size(), key) == 0 && opt[key.size()] == '=') {
      return opt.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

Result<std::uint64_t> ParseTmpfsSize(std::string_view value, std::uint64_t ram_bytes) {
  std::string_view v = Trim(value);
  if (v.empty()) return MakeError("empty tmpfs size");
  if (v.back() == '%') {
    auto pct = ParseUint(v.substr(0, v.size() - 1), "tmpfs size percentage");
    if (!pct.ok()) return pct.error();
    if (ram_bytes == 0) return MakeError("tmpfs size in % of RAM, but RAM size unknown");
    return ram_bytes / 100 * *pct;
  }
  std::uint64_t mult = 1;
  char last = static_cast<char>(std::tolower(static_cast<unsigned char>(v.back())));
  const char* units = "kmgtpe";
  if (const char* p = std::strchr(units, last); p != nullptr && last != '\0') {
    mult = 1ull << (10 * (p - units + 1));
    v.remove_suffix(1);
  }
  auto n = ParseUint(v, "tmpfs size");
  if (!n.ok()) return n.error();
  if (*n != 0 && mult > kUnlimited / *n) return MakeError("tmpfs size overflows");
  return *n * mult;
}

Result<std::uint64_t> ParseMemTotal(std::string_view meminfo) {
  for (const auto& line : SplitLines(meminfo)) {
    std::string_view t = Trim(line);
    if (!StartsWith(t, "MemTotal:")) continue;
    auto f = Fields(t.substr(9));
    if (f.empty()) break;
    auto kb = ParseUint(f[0], "MemTotal");
    if (!kb.ok()) return kb.error();
    return *kb * 1024;
  }
  return MakeError("no MemTotal line");
}

Result<ShmSize> ReadShmSize(const FileReader& fs) {
  ShmSize out;
  if (!fs.IsSysroot()) {
    auto size = fs.FsSizeBytes("/dev/shm");
    if (!size.ok()) return size.error();
    out.bytes = *size;
    out.source = "statvfs(/dev/shm)";
    out.raw = std::to_string(*size) + " bytes";
    out.how = "statvfs";
    return out;
  }
  auto text = fs.ReadFile("/proc/mounts");
  if (!text.ok()) return text.error();
  auto mounts = ParseProcMounts(*text);
  if (!mounts.ok()) {
    Error e = mounts.error();
    e.where = fs.HostPath("/proc/mounts") + ":" + e.where.substr(5);
    return e;
  }
  const MountEntry* shm = nullptr;
  for (const auto& m : *mounts) {
    if (m.mount_point == "/dev/shm") shm = &m;  // the last mount on a path is the visible one
  }
  if (shm == nullptr) {
    return MakeError("/dev/shm is not mounted", fs.HostPath("/proc/mounts"),
                     "mount a tmpfs on /dev/shm (containers: --shm-size=16g or --ipc=host)");
  }
  out.source = "/proc/mounts";
  out.raw = shm->raw;
  std::uint64_t ram = 0;
  std::string mem_problem;
  if (auto mi = fs.ReadFile("/proc/meminfo"); mi.ok()) {
    if (auto r = ParseMemTotal(*mi); r.ok())
      ram = *r;
    else
      mem_problem = r.error().message;
  } else {
    mem_problem = mi.error().message;
  }
  if (auto size = MountOption(shm->options, "size")) {
    auto bytes = ParseTmpfsSize(*size, ram);
    if (!bytes.ok()) {
      return MakeError(
          "bad size option \"size=" + *size + "\" of /dev/shm: " + bytes.error().message,
          fs.HostPath("/proc/mounts"));
    }
    out.bytes = *bytes;
    out.how = "size=" + *size;
    return out;
  }
  if (shm->fs_type != "tmpfs") {
    return MakeError("/dev/shm is " + shm->fs_type + " without a size option; size unknown",
                     fs.HostPath("/proc/mounts"));
  }
  if (ram == 0) {
    return MakeError("/dev/shm has no size= option and MemTotal is unknown (" + mem_problem + ")",
                     fs.HostPath("/proc/meminfo"));
  }
  out.bytes = ram / 2;  // tmpfs default: half of RAM (mm/shmem.c shmem_default_max_blocks)
  out.how =
      "no size= option: tmpfs default, half of MemTotal " + std::to_string(ram / 1024) + " kB";
  return out;
}

// ---- modules, NVIDIA driver, GPUs --------------------------------------------------------------

bool ModuleListed(std::string_view proc_modules, std::string_view module) {
  for (const auto& line : SplitLines(proc_modules)) {
    auto f = Fields(line);
    if (!f.empty() && f[0] == module) return true;
  }
  return false;
}

Result<NvidiaDriverVersion> ParseNvidiaVersion(std::string_view text) {
  auto lines = SplitLines(text);
  std::string_view first = lines.empty() ? std::string_view{} : Trim(lines[0]);
  if (!StartsWith(first, "NVRM version:")) {
    return MakeError("first line is not \"NVRM version: ...\"");
  }
  NvidiaDriverVersion v;
  v.open_kernel = first.find("Open Kernel Module") != std::string_view::npos;
  // The version is the first field shaped like N.N[.N] after "Kernel Module".
  std::size_t km = first.find("Kernel Module");
  std::string_view rest = km == std::string_view::npos ? first.substr(13) : first.substr(km);
  for (auto f : Fields(rest)) {
    if (f.empty() || !std::isdigit(static_cast<unsigned char>(f[0]))) continue;
    if (f.find('.') == std::string_view::npos) continue;
    if (!std::all_of(f.begin(), f.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
        })) {
      continue;
    }
    v.version = std::string(f);
    auto major = ParseInt(f.substr(0, f.find('.')));
    v.major = major.ok() ? static_cast<int>(*major) : 0;
    return v;
  }
  return MakeError("no driver version number in \"" + Printable(first) + "\"");
}

std::string ParseGpuInformationModel(std::string_view text) {
  for (const auto& line : SplitLines(text)) {
    std::string_view t = Trim(line);
    if (StartsWith(t, "Model:")) return std::string(Trim(t.substr(6)));
  }
  return {};
}

std::vector<GpuInfo> ScanNvidiaGpus(const FileReader& fs, std::vector<Error>* problems) {
  std::vector<GpuInfo> gpus;
  auto devices = fs.ListDir("/sys/bus/pci/devices");
  if (!devices.ok()) {
    // No PCI bus in sysfs (some containers): nothing to scan, and not a problem of the node.
    return gpus;
  }
  for (const auto& bdf : *devices) {
    const std::string base = JoinPath("/sys/bus/pci/devices", bdf);
    auto vendor = fs.ReadFile(JoinPath(base, "vendor"), 64);
    if (!vendor.ok()) {
      problems->push_back(vendor.error());
      continue;
    }
    if (Trim(*vendor) != "0x10de") continue;
    auto cls = fs.ReadFile(JoinPath(base, "class"), 64);
    if (!cls.ok()) {
      problems->push_back(cls.error());
      continue;
    }
    auto cls_value = ParseUint(Trim(*cls), "PCI class");
    if (!cls_value.ok()) {
      problems->push_back(MakeError("PCI class is not a number: \"" + Printable(Trim(*cls)) + "\"",
                                    fs.HostPath(JoinPath(base, "class"))));
      continue;
    }
    // 0x0300 VGA controller, 0x0302 3D controller (data-centre GPUs); not audio/USB functions.
    std::uint64_t sub = *cls_value >> 8;
    if (sub != 0x0300 && sub != 0x0302) continue;
    GpuInfo g;
    g.pci_address = bdf;
    if (auto dev = fs.ReadFile(JoinPath(base, "device"), 64); dev.ok()) {
      g.device_id = std::string(Trim(*dev));
    }
    std::string info_path = JoinPath(JoinPath("/proc/driver/nvidia/gpus", bdf), "information");
    if (auto info = fs.ReadFile(info_path, 1 << 16); info.ok()) {
      g.model = ParseGpuInformationModel(*info);
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

// ---- /proc/net ---------------------------------------------------------------------------------

std::vector<std::string> ParseFibTrieLocal(std::string_view text) {
  std::vector<std::string> out;
  std::string leaf;
  for (const auto& line : SplitLines(text)) {
    std::string_view t = Trim(line);
    if (StartsWith(t, "|--")) {
      leaf = std::string(Trim(t.substr(3)));
      in_addr probe;
      if (::inet_pton(AF_INET, leaf.c_str(), &probe) != 1) leaf.clear();
      continue;
    }
    if (StartsWith(t, "+--") || EndsWith(t, ":")) {
      leaf.clear();
      continue;
    }
    // Alias line of the current leaf: "/32 host LOCAL".
    if (!leaf.empty() && StartsWith(t, "/32 ") && EndsWith(t, " LOCAL") &&
        t.find(" host ") != std::string_view::npos) {
      if (std::find(out.begin(), out.end(), leaf) == out.end()) out.push_back(leaf);
    }
  }
  return out;
}

Result<std::vector<Ipv4Route>> ParseProcRoute(std::string_view text) {
  std::vector<Ipv4Route> out;
  int line_no = 0;
  for (const auto& line : SplitLines(text)) {
    ++line_no;
    std::string_view t = Trim(line);
    if (t.empty() || StartsWith(t, "Iface")) continue;
    auto f = Fields(t);
    if (f.size() < 8) {
      return MakeError("malformed route row \"" + Printable(t) + "\"", LineWhere(line_no));
    }
    Ipv4Route r;
    r.iface = std::string(f[0]);
    auto hex = [](std::string_view s, std::uint32_t* v) {
      if (s.size() != 8) return false;
      std::uint32_t x = 0;
      for (char c : s) {
        int d = std::isdigit(static_cast<unsigned char>(c))
                    ? c - '0'
                    : (std::tolower(static_cast<unsigned char>(c)) >= 'a' &&
                               std::tolower(static_cast<unsigned char>(c)) <= 'f'
                           ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                           : -1);
        if (d < 0) return false;
        x = x * 16 + static_cast<std::uint32_t>(d);
      }
      *v = x;
      return true;
    };
    std::uint32_t flags = 0;
    if (!hex(f[1], &r.destination) || !hex(f[2], &r.gateway) || !hex(f[7], &r.mask) ||
        f[3].size() > 8 || !hex(std::string(8 - f[3].size(), '0') + std::string(f[3]), &flags)) {
      return MakeError("malformed route row \"" + Printable(t) + "\"", LineWhere(line_no));
    }
    r.flags = flags;
    out.push_back(std::move(r));
  }
  return out;
}

std::string InterfaceForIpv4(const std::vector<Ipv4Route>& routes, std::string_view ipv4) {
  in_addr a;
  if (::inet_pton(AF_INET, std::string(ipv4).c_str(), &a) != 1) return {};
  // /proc/net/route prints the in-memory (network order) value as a host number, so comparing
  // the raw s_addr against the parsed numbers works on any endianness of this machine.
  std::uint32_t addr = a.s_addr;
  if ((ntohl(addr) >> 24) == 127) return "lo";
  std::string best;
  int best_bits = -1;
  for (const auto& r : routes) {
    if (r.flags & 0x2) continue;  // RTF_GATEWAY: not a directly connected subnet
    if ((addr & r.mask) != r.destination) continue;
    int bits = __builtin_popcount(r.mask);
    if (bits > best_bits) {
      best_bits = bits;
      best = r.iface;
    }
  }
  return best;
}

std::vector<Inet6Address> ParseIfInet6(std::string_view text) {
  std::vector<Inet6Address> out;
  for (const auto& line : SplitLines(text)) {
    auto f = Fields(line);
    if (f.size() < 6 || f[0].size() != 32) continue;
    in6_addr a;
    bool ok = true;
    for (int i = 0; i < 16 && ok; ++i) {
      auto byte = ParseUint("0x" + std::string(f[0].substr(2 * i, 2)));
      ok = byte.ok();
      if (ok) a.s6_addr[i] = static_cast<unsigned char>(*byte);
    }
    auto plen = ParseUint("0x" + std::string(f[2]));
    if (!ok || !plen.ok()) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
    out.push_back({std::string(f[5]), buf, static_cast<int>(*plen)});
  }
  return out;
}

// ---- gathering ---------------------------------------------------------------------------------

namespace {

void GatherLimits(const FileReader& fs, NodeFacts* facts) {
  auto text = fs.ReadFile("/proc/self/limits");
  if (!text.ok()) {
    facts->problems.push_back(text.error());
    return;
  }
  auto add = [&](const char* name, std::uint64_t* soft, std::uint64_t* hard) {
    auto row = FindLimit(*text, name);
    if (!row.ok()) {
      Error e = row.error();
      e.where = fs.HostPath("/proc/self/limits") + (e.where.empty() ? "" : ":" + e.where);
      facts->problems.push_back(e);
      return;
    }
    *soft = row->soft;
    *hard = row->hard;
  };
  add("Max locked memory", &facts->memlock_soft, &facts->memlock_hard);
  add("Max open files", &facts->nofile_soft, &facts->nofile_hard);
}

void GatherNvidia(const FileReader& fs, NodeFacts* facts) {
  facts->gpus = ScanNvidiaGpus(fs, &facts->problems);
  auto version = fs.ReadFile("/proc/driver/nvidia/version", 1 << 16);
  if (version.ok()) {
    auto v = ParseNvidiaVersion(*version);
    if (v.ok()) {
      facts->nvidia_driver = v->version;
      facts->nvidia_open_kernel = v->open_kernel;
    } else {
      facts->problems.push_back(
          MakeError(v.error().message, fs.HostPath("/proc/driver/nvidia/version")));
    }
  }
  // A missing version file just means no NVIDIA driver: gpu.inventory decides what that means.
  auto modules = fs.ReadFile("/proc/modules");
  if (modules.ok()) {
    for (const char* m : {"nvidia_peermem", "nv_peer_mem"}) {
      if (ModuleListed(*modules, m)) {
        facts->peermem_loaded = true;
        facts->peermem_module = m;
        break;
      }
    }
  } else if (fs.IsSysroot() || fs.Exists("/proc/modules")) {
    facts->problems.push_back(modules.error());
  }
}

// Live addresses from getifaddrs(): the same list NCCL's findInterfaces() walks.
void LiveAddresses(std::map<std::string, std::vector<std::string>>* out) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_name == nullptr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, buf,
                  sizeof buf);
    } else {
      continue;
    }
    (*out)[i->ifa_name].push_back(buf);
  }
  ::freeifaddrs(list);
}

// Under a sysroot: IPv4 local addresses from fib_trie mapped to interfaces through the
// directly connected routes; IPv6 from if_inet6.
void SysrootAddresses(const FileReader& fs, std::map<std::string, std::vector<std::string>>* out,
                      std::vector<Error>* problems) {
  auto trie = fs.ReadFile("/proc/net/fib_trie");
  auto route = fs.ReadFile("/proc/net/route");
  if (trie.ok() && route.ok()) {
    auto routes = ParseProcRoute(*route);
    if (routes.ok()) {
      for (const auto& addr : ParseFibTrieLocal(*trie)) {
        std::string ifname = InterfaceForIpv4(*routes, addr);
        if (!ifname.empty()) (*out)[ifname].push_back(addr);
      }
    } else {
      Error e = routes.error();
      e.where = fs.HostPath("/proc/net/route") + ":" + e.where.substr(5);
      problems->push_back(e);
    }
  } else {
    if (!trie.ok() && fs.Exists("/proc/net/fib_trie")) problems->push_back(trie.error());
    if (!route.ok() && fs.Exists("/proc/net/route")) problems->push_back(route.error());
  }
  if (auto v6 = fs.ReadFile("/proc/net/if_inet6"); v6.ok()) {
    for (const auto& a : ParseIfInet6(*v6)) (*out)[a.iface].push_back(a.address);
  }
}

void GatherInterfaces(const FileReader& fs, NodeFacts* facts) {
  auto names = fs.ListDir("/sys/class/net");
  if (!names.ok()) {
    facts->problems.push_back(names.error());
    return;
  }
  std::map<std::string, std::vector<std::string>> addrs;
  if (fs.IsSysroot()) {
    SysrootAddresses(fs, &addrs, &facts->problems);
  } else {
    LiveAddresses(&addrs);
  }
  for (const auto& name : *names) {
    const std::string base = JoinPath("/sys/class/net", name);
    if (!fs.IsDir(base)) continue;  // bonding_masters and other plain files
    NetInterface nif;
    nif.name = name;
    if (auto s = fs.ReadFile(JoinPath(base, "operstate"), 64); s.ok()) {
      nif.operstate = std::string(Trim(*s));
    } else {
      facts->problems.push_back(s.error());
    }
    if (auto s = fs.ReadFile(JoinPath(base, "mtu"), 64); s.ok()) {
      auto v = ParseInt(Trim(*s), "mtu");
      if (v.ok()) {
        nif.mtu = static_cast<int>(*v);
      } else {
        facts->problems.push_back(MakeError("MTU is not a number: \"" + Printable(Trim(*s)) + "\"",
                                            fs.HostPath(JoinPath(base, "mtu"))));
      }
    } else {
      facts->problems.push_back(s.error());
    }
    if (auto s = fs.ReadFile(JoinPath(base, "flags"), 64); s.ok()) {
      if (auto v = ParseUint(Trim(*s), "flags"); v.ok()) nif.flags = static_cast<std::uint32_t>(*v);
    }
    if (auto s = fs.ReadFile(JoinPath(base, "ifindex"), 64); s.ok()) {
      if (auto v = ParseInt(Trim(*s), "ifindex"); v.ok()) nif.ifindex = static_cast<int>(*v);
    }
    if (auto it = addrs.find(name); it != addrs.end()) nif.addresses = it->second;
    facts->interfaces.push_back(std::move(nif));
  }
  // getifaddrs() (and so NCCL) lists interfaces by ifindex; keep that order.
  std::stable_sort(facts->interfaces.begin(), facts->interfaces.end(),
                   [](const NetInterface& a, const NetInterface& b) {
                     // Unknown ifindex (0) sorts last, keeping a strict weak order.
                     auto key = [](const NetInterface& n) {
                       return n.ifindex > 0 ? n.ifindex : std::numeric_limits<int>::max();
                     };
                     return key(a) < key(b);
                   });
}

}  // namespace

void GatherHostFacts(const FileReader& fs, NodeFacts* facts) {
  if (fs.IsSysroot()) {
    auto h = fs.ReadFile("/proc/sys/kernel/hostname", 256);
    if (h.ok() && !Trim(*h).empty()) {
      facts->hostname = std::string(Trim(*h));
    } else {
      facts->hostname = "sysroot";
      if (!h.ok()) facts->problems.push_back(h.error());
    }
  } else {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) == 0 && buf[0] != '\0') {
      facts->hostname = buf;
    } else {
      facts->hostname = log::HostName();
    }
  }
  GatherLimits(fs, facts);
  if (auto shm = ReadShmSize(fs); shm.ok()) {
    facts->shm_bytes = shm->bytes;
  } else {
    facts->problems.push_back(shm.error());
  }
  GatherNvidia(fs, facts);
  GatherInterfaces(fs, facts);
}

}  // namespace sl
