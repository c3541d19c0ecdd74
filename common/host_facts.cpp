// The host part of NodeFacts (everything but IB/RoCE ports): the readers that fetch text through
// the FileReader (so a --sysroot tree in the real layout gives the facts of the machine it was
// built from) and hand it to the parsers in common/parse/.
#include "common/host_facts.h"

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

#include "common/log.h"
#include "common/node_facts.h"
#include "common/parse/limits.h"
#include "common/parse/modules.h"
#include "common/parse/mounts.h"
#include "common/parse/net_proc.h"
#include "common/parse/nvidia_proc.h"
#include "common/strings.h"

namespace sl {

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

std::vector<GpuInfo> ScanNvidiaGpus(const FileReader& fs, std::vector<Error>* problems) {
  std::vector<GpuInfo> gpus;
  auto devices = fs.ListDir("/sys/bus/pci/devices");
  if (!devices.ok()) {
    // No PCI bus in sysfs (some containers): nothing to scan, and not a problem of the node.
    // There but unreadable: the GPU list is unknown, not empty.
    if (!PathAbsent(fs, "/sys/bus/pci/devices")) problems->push_back(devices.error());
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

// ---- gathering ---------------------------------------------------------------------------------

namespace {

void GatherLimits(const FileReader& fs, NodeFacts* facts) {
  constexpr const char* kPath = "/proc/self/limits";
  auto text = fs.ReadFile(kPath);
  if (!text.ok()) {
    facts->problems.push_back(text.error());
    facts->host.memlock = facts->host.nofile = Fact<ProcLimit>::Unreadable(kPath, text.error());
    return;
  }
  auto add = [&](const char* name, Fact<ProcLimit>* fact) {
    auto row = FindLimit(*text, name);
    if (!row.ok()) {
      Error e = row.error();
      e.where = fs.HostPath(kPath) + (e.where.empty() ? "" : ":" + e.where);
      facts->problems.push_back(e);
      *fact = Fact<ProcLimit>::Malformed(kPath, "", e);
      return;
    }
    *fact = Fact<ProcLimit>::Of(*row, kPath, row->raw);
  };
  add("Max locked memory", &facts->host.memlock);
  add("Max open files", &facts->host.nofile);
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
  // One that is there but unreadable (a directory, a dangling link) is an error, not a driver.
  if (!version.ok() && !PathAbsent(fs, "/proc/driver/nvidia/version")) {
    facts->problems.push_back(version.error());
  }
  auto modules = fs.ReadFile("/proc/modules");
  if (modules.ok()) {
    facts->host.modules = Fact<std::vector<std::string>>::Of(
        SplitLines(*modules), "/proc/modules", std::to_string(modules->size()) + " bytes");
  } else {
    facts->host.modules =
        PathAbsent(fs, "/proc/modules")
            ? Fact<std::vector<std::string>>::Absent("/proc/modules", modules.error())
            : Fact<std::vector<std::string>>::Unreadable("/proc/modules", modules.error());
  }
  if (modules.ok()) {
    facts->host.peermem = Fact<std::string>::Of("", "/proc/modules", "");
    for (const char* m : {"nvidia_peermem", "nv_peer_mem"}) {
      if (!ModuleListed(*modules, m)) continue;
      std::string line;
      for (const auto& l : *facts->host.modules) {
        if (StartsWith(l, std::string(m) + " ")) line = l;
      }
      facts->host.peermem = Fact<std::string>::Of(m, "/proc/modules", line);
      break;
    }
  } else {
    facts->host.peermem = Fact<std::string>::Unreadable("/proc/modules", modules.error());
  }
  if (!modules.ok() && (fs.IsSysroot() || fs.Exists("/proc/modules"))) {
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

// A procfs file the sysroot's addresses come from: its text, absent when it is not in the tree
// (no problem), or the read error (a problem).
Fact<std::string> ReadNetProc(const FileReader& fs, const std::string& path,
                              std::vector<Error>* problems) {
  auto text = fs.ReadFile(path);
  if (text.ok()) return Fact<std::string>::Of(*text, path, "");
  if (!fs.Exists(path)) return Fact<std::string>::Absent(path, text.error());
  problems->push_back(text.error());
  return Fact<std::string>::Unreadable(path, text.error());
}

// Under a sysroot: IPv4 local addresses from fib_trie mapped to interfaces through the
// directly connected routes; IPv6 from if_inet6.
void SysrootAddresses(const FileReader& fs, std::map<std::string, std::vector<std::string>>* out,
                      NodeFacts* facts) {
  NetFacts& net = facts->net;
  net.fib_trie = ReadNetProc(fs, "/proc/net/fib_trie", &facts->problems);
  net.route = ReadNetProc(fs, "/proc/net/route", &facts->problems);
  if (net.fib_trie.ok() && net.route.ok()) {
    auto routes = ParseProcRoute(*net.route);
    if (routes.ok()) {
      for (const auto& addr : ParseFibTrieLocal(*net.fib_trie)) {
        std::string ifname = InterfaceForIpv4(*routes, addr);
        if (!ifname.empty()) (*out)[ifname].push_back(addr);
      }
    } else {
      Error e = routes.error();
      e.where = fs.HostPath("/proc/net/route") + ":" + e.where.substr(5);
      facts->problems.push_back(e);
      net.route = Fact<std::string>::Malformed("/proc/net/route", "", std::move(e));
    }
  }
  if (auto v6 = fs.ReadFile("/proc/net/if_inet6"); v6.ok()) {
    for (const auto& a : ParseIfInet6(*v6)) (*out)[a.iface].push_back(a.address);
  }
}

// One file of /sys/class/net/<if> into a fact: `parse` of its trimmed text, or why not. A
// failure is a gather problem when `problems` is given.
template <typename T, typename Parse>
Fact<T> ReadNetFile(const FileReader& fs, const std::string& path, Parse parse,
                    std::vector<Error>* problems) {
  auto text = fs.ReadFile(path, 64);
  if (!text.ok()) {
    if (problems) problems->push_back(text.error());
    return Fact<T>::Unreadable(path, text.error());
  }
  std::string raw(Trim(*text));
  Result<T> v = parse(raw);
  if (!v.ok()) {
    if (problems) problems->push_back(v.error());
    return Fact<T>::Malformed(path, Printable(raw), v.error());
  }
  return Fact<T>::Of(std::move(v).value(), path, Printable(raw));
}

NetInterface ReadInterface(const FileReader& fs, const std::string& name,
                           std::vector<Error>* problems) {
  const std::string base = JoinPath("/sys/class/net", name);
  NetInterface nif;
  nif.name = name;
  NetInterfaceFacts& f = nif.sysfs;
  f.operstate = ReadNetFile<std::string>(
      fs, JoinPath(base, "operstate"), [](const std::string& t) { return Result<std::string>(t); },
      problems);
  const std::string mtu_path = JoinPath(base, "mtu");
  f.mtu = ReadNetFile<int>(
      fs, mtu_path,
      [&](const std::string& t) -> Result<int> {
        auto v = ParseInt(t, "mtu");
        if (!v.ok()) {
          return MakeError("MTU is not a number: \"" + Printable(t) + "\"", fs.HostPath(mtu_path));
        }
        return static_cast<int>(*v);
      },
      problems);
  f.flags = ReadNetFile<std::uint32_t>(
      fs, JoinPath(base, "flags"),
      [](const std::string& t) -> Result<std::uint32_t> {
        auto v = ParseUint(t, "flags");
        if (!v.ok()) return v.error();
        return static_cast<std::uint32_t>(*v);
      },
      nullptr);
  f.ifindex = ReadNetFile<int>(
      fs, JoinPath(base, "ifindex"),
      [](const std::string& t) -> Result<int> {
        auto v = ParseInt(t, "ifindex");
        if (!v.ok()) return v.error();
        return static_cast<int>(*v);
      },
      nullptr);
  if (f.operstate.ok()) nif.operstate = *f.operstate;
  if (f.mtu.ok()) nif.mtu = *f.mtu;
  if (f.flags.ok()) nif.flags = *f.flags;
  if (f.ifindex.ok()) nif.ifindex = *f.ifindex;
  return nif;
}

void GatherInterfaces(const FileReader& fs, NodeFacts* facts) {
  const std::string dir = "/sys/class/net";
  auto names = fs.ListDir(dir);
  if (!names.ok()) {
    facts->problems.push_back(names.error());
    facts->net.class_net = Fact<std::vector<std::string>>::Unreadable(dir, names.error());
    return;
  }
  facts->net.class_net = Fact<std::vector<std::string>>::Of(*names, dir, Join(*names, " "));
  std::map<std::string, std::vector<std::string>> addrs;
  if (fs.IsSysroot()) {
    SysrootAddresses(fs, &addrs, facts);
  } else {
    LiveAddresses(&addrs);
  }
  for (const auto& name : *names) {
    const std::string base = JoinPath(dir, name);
    if (!fs.IsDir(base)) {
      // bonding_masters and other plain files are not interfaces; an entry that leads nowhere
      // (a dangling or refused link) is an interface we could not read, not one that is absent.
      if (!fs.Exists(base)) {
        Error e =
            MakeError("cannot read the interface: its entry leads nowhere", fs.HostPath(base));
        facts->problems.push_back(e);
        facts->net.unreadable_entries[name] = Fact<std::string>::Unreadable(base, std::move(e));
      }
      continue;
    }
    NetInterface nif = ReadInterface(fs, name, &facts->problems);
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
    facts->host.shm = Fact<ShmSize>::Of(*shm, shm->source, shm->raw);
  } else {
    facts->problems.push_back(shm.error());
    facts->host.shm = Fact<ShmSize>::Malformed("/proc/mounts", "", shm.error());
  }
  GatherNvidia(fs, facts);
  GatherInterfaces(fs, facts);
}

std::vector<Error> NetReadErrors(const NodeFacts& facts) {
  std::vector<Error> out;
  auto add = [&](const auto& fact) {
    if (!fact.ok() && !fact.absent && !fact.path.empty()) out.push_back(fact.error);
  };
  const NetFacts& net = facts.net;
  add(net.class_net);
  add(net.fib_trie);
  add(net.route);
  if (!net.class_net.ok()) return out;
  for (const std::string& name : *net.class_net) {
    if (auto e = net.unreadable_entries.find(name); e != net.unreadable_entries.end()) {
      add(e->second);
      continue;
    }
    for (const NetInterface& i : facts.interfaces) {
      if (i.name != name) continue;
      add(i.sysfs.operstate);
      add(i.sysfs.mtu);
    }
  }
  return out;
}

}  // namespace sl
