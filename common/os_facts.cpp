// The facts the host checks decide on (sysctls, NVIDIA /proc files, /dev/kmsg, PCI bridges' ACS,
// IOMMU), each with the node path and raw text it came from. Read once per run through the
// FileReader, so checks never read files themselves and --sysroot trees work.
#include <unistd.h>

#include <string>
#include <vector>

#include "common/node_facts.h"
#include "common/parse/ib_sysfs.h"
#include "common/parse/kmsg.h"
#include "common/parse/pci_config.h"
#include "common/parse/sysctl.h"
#include "common/strings.h"

namespace sl {
namespace {

struct GatheredSysctl {
  const char* name;  ///< "net.core.rmem_max"
  const char* path;  ///< "/proc/sys/net/core/rmem_max"
  std::size_t fields;
};

// The sysctls os.sysctl judges, in the order it reports them.
constexpr GatheredSysctl kGatheredSysctls[] = {
    {"net.core.rmem_max", "/proc/sys/net/core/rmem_max", 1},
    {"net.core.wmem_max", "/proc/sys/net/core/wmem_max", 1},
    {"net.ipv4.tcp_rmem", "/proc/sys/net/ipv4/tcp_rmem", 3},
    {"net.ipv4.tcp_wmem", "/proc/sys/net/ipv4/tcp_wmem", 3},
    {"net.ipv4.ip_local_port_range", "/proc/sys/net/ipv4/ip_local_port_range", 2},
};

// A trimmed one-line file; unreadable stays an error.
Fact<std::string> ReadValue(const FileReader& fs, const char* path, std::size_t max) {
  auto text = fs.ReadFile(path, max);
  if (!text.ok()) return Fact<std::string>::Unreadable(path, text.error());
  std::string v(Trim(*text));
  return Fact<std::string>::Of(v, path, v);
}

void GatherSysctls(const FileReader& fs, HostEvidence* h) {
  for (const GatheredSysctl& s : kGatheredSysctls) {
    SysctlFact fact{s.name, {}};
    auto text = fs.ReadFile(s.path, 4096);
    if (!text.ok()) {
      fact.values = Fact<std::vector<std::uint64_t>>::Unreadable(s.path, text.error());
    } else {
      const std::string raw = Printable(Trim(*text));
      auto values = ParseSysctlValues(raw, s.fields);
      if (values.ok()) {
        fact.values = Fact<std::vector<std::uint64_t>>::Of(*values, s.path, raw);
      } else {
        Error e = values.error();
        e.where = fs.HostPath(s.path);
        fact.values = Fact<std::vector<std::uint64_t>>::Malformed(s.path, raw, e);
      }
    }
    h->sysctls.push_back(std::move(fact));
  }
}

void GatherNvidiaProc(const FileReader& fs, HostEvidence* h, std::vector<Error>* problems) {
  constexpr const char* kGpus = "/proc/driver/nvidia/gpus";
  constexpr const char* kVersion = "/proc/driver/nvidia/version";
  if (auto l = fs.ListDir(kGpus); l.ok()) {
    h->nvidia_gpu_dirs = Fact<std::vector<std::string>>::Of(*l, kGpus, std::to_string(l->size()));
  } else if (PathAbsent(fs, kGpus)) {
    // Nothing there: the driver lists no GPU (or is not loaded). gpu.inventory compares that.
    h->nvidia_gpu_dirs = Fact<std::vector<std::string>>::Of({}, kGpus, "absent");
  } else {
    // There but unreadable (a file, a dangling link): not "the driver lists no GPU", which would
    // turn every GPU on PCI into a false "fell off the bus".
    h->nvidia_gpu_dirs = Fact<std::vector<std::string>>::Unreadable(kGpus, l.error());
    problems->push_back(l.error());
  }
  h->nvidia_version_present = fs.Exists(kVersion);
  auto v = fs.ReadFile(kVersion, 4096);
  if (!v.ok()) {
    h->nvidia_version_line = Fact<std::string>::Unreadable(kVersion, v.error());
    return;
  }
  auto lines = SplitLines(*v);
  std::string first = lines.empty() ? std::string() : std::string(Trim(lines[0]));
  h->nvidia_version_line = Fact<std::string>::Of(first, kVersion, first);
}

void GatherKmsg(const FileReader& fs, HostEvidence* h, std::size_t max_bytes) {
  constexpr const char* kKmsg = "/dev/kmsg";
  h->dmesg_restrict = ReadValue(fs, "/proc/sys/kernel/dmesg_restrict", 64);
  auto read = ReadFileBounded(fs, kKmsg, max_bytes);
  if (!read.ok()) {
    h->kmsg = Fact<KmsgParse>::Unreadable(kKmsg, read.error());
    return;
  }
  std::string& text = read->text;
  // A cut ends inside a record: keep whole lines only, or the last would read as malformed.
  if (read->truncated) text.resize(text.rfind('\n') + 1);
  h->kmsg_bytes = text.size();
  h->kmsg_truncated = read->truncated;
  KmsgParse parsed = ParseKmsg(text);
  std::string first_bad;
  if (!parsed.bad_lines.empty()) {
    std::string_view first = text;
    for (int l = 1; l < parsed.bad_lines.front(); ++l) first = first.substr(first.find('\n') + 1);
    first_bad = Printable(first.substr(0, first.find('\n')), 200);
  }
  h->kmsg = Fact<KmsgParse>::Of(std::move(parsed), kKmsg, first_bad);
}

PciFunctionFact ReadPciFunction(const FileReader& fs, const std::string& bdf) {
  PciFunctionFact fn;
  fn.bdf = bdf;
  const std::string base = JoinPath("/sys/bus/pci/devices", bdf);
  const std::string class_path = JoinPath(base, "class");
  auto cls = fs.ReadFile(class_path, 64);
  if (!cls.ok()) {
    fn.pci_class = Fact<std::uint64_t>::Unreadable(class_path, cls.error());
    return fn;
  }
  const std::string raw = Printable(Trim(*cls));
  auto value = ParseUint(Trim(*cls));
  if (!value.ok()) {
    fn.pci_class = Fact<std::uint64_t>::Malformed(
        class_path, raw,
        MakeError("PCI class is not a number: \"" + raw + "\"", fs.HostPath(class_path)));
    return fn;
  }
  fn.pci_class = Fact<std::uint64_t>::Of(*value, class_path, raw);
  if (!fn.IsBridge()) return fn;  // ACS matters on PCI-to-PCI bridges (root/switch ports) only
  const std::string config_path = JoinPath(base, "config");
  auto config = fs.ReadFile(config_path, 4096);
  if (!config.ok()) {
    fn.acs = Fact<ConfigAcsResult>::Unreadable(config_path, config.error());
    return fn;
  }
  const std::string size = std::to_string(config->size()) + " bytes";
  auto acs = FindAcsInConfig(*config);
  if (!acs.ok()) {
    Error e = acs.error();
    e.where = fs.HostPath(config_path);
    fn.acs = Fact<ConfigAcsResult>::Malformed(config_path, size, e);
  } else {
    fn.acs = Fact<ConfigAcsResult>::Of(*acs, config_path, size);
  }
  return fn;
}

void GatherPci(const FileReader& fs, HostEvidence* h) {
  constexpr const char* kDevices = "/sys/bus/pci/devices";
  auto devices = fs.ListDir(kDevices);
  if (!devices.ok()) {
    h->pci = PathAbsent(fs, kDevices)
                 ? Fact<std::vector<PciFunctionFact>>::Absent(kDevices, devices.error())
                 : Fact<std::vector<PciFunctionFact>>::Unreadable(kDevices, devices.error());
  } else {
    std::vector<PciFunctionFact> fns;
    for (const auto& bdf : *devices) fns.push_back(ReadPciFunction(fs, bdf));
    h->pci = Fact<std::vector<PciFunctionFact>>::Of(std::move(fns), kDevices,
                                                    std::to_string(devices->size()));
  }
  if (auto l = fs.ListDir("/sys/class/iommu"); l.ok()) {
    h->iommu_units = *l;
  } else if (!PathAbsent(fs, "/sys/class/iommu")) {
    h->iommu_unreadable = l.error().Describe();  // there but not listed: not "no units"
  }
  h->cmdline = ReadValue(fs, "/proc/cmdline", 65536);
}

}  // namespace

void GatherIbCounters(const FileReader& fs, NodeFacts* facts) {
  for (const IbPort& p : facts->ib_ports) {
    for (const char* dir : {"counters", "hw_counters"}) {
      const std::string base =
          "/sys/class/infiniband/" + p.device + "/ports/" + std::to_string(p.port) + "/" + dir;
      auto names = fs.ListDir(base);
      if (!names.ok()) {
        if (PathAbsent(fs, base))
          continue;  // the provider has no such directory (rxe, old kernels)
        // There but not listable: the counters are unknown, not zero. "." stands for the
        // directory itself so ib.port.errors reports it as an error instead of passing.
        facts->ib_counters[base]["."] = Fact<std::uint64_t>::Unreadable(base, names.error());
        continue;
      }
      auto& files = facts->ib_counters[base];
      for (const auto& name : *names) {
        if (!IsIbErrorCounter(dir, name)) continue;  // traffic counters: nobody judges them
        const std::string path = base + "/" + name;
        auto text = fs.ReadFile(path, 64);
        if (!text.ok()) {
          files[name] = Fact<std::uint64_t>::Unreadable(path, text.error());
          continue;
        }
        const std::string raw = Printable(Trim(*text));
        auto v = ParseCounterValue(*text);
        if (v.ok()) {
          files[name] = Fact<std::uint64_t>::Of(*v, path, raw);
        } else {
          Error e = v.error();
          e.where = fs.HostPath(path);
          files[name] = Fact<std::uint64_t>::Malformed(path, raw, e);
        }
      }
    }
  }
}

namespace {

// gpu.leftover_procs (epilog): our own process is skipped on the live node only (under a
// sysroot the pids are the fixture's).
void GatherGpuHolders(const FileReader& fs, const std::string& root, HostEvidence* h) {
  auto holders = FindGpuHolders(fs, root, fs.IsSysroot() ? 0 : static_cast<int>(::getpid()));
  if (holders.ok()) {
    h->gpu_holders = Fact<std::vector<GpuHolder>>::Of(std::move(*holders), "/proc", "");
  } else {
    h->gpu_holders = Fact<std::vector<GpuHolder>>::Unreadable("/proc", holders.error());
  }
}

}  // namespace

void GatherHostEvidence(const FileReader& fs, NodeFacts* facts, const GatherOptions& options) {
  HostEvidence* h = &facts->host;
  GatherSysctls(fs, h);
  GatherNvidiaProc(fs, h, &facts->problems);
  if (options.kernel_log) GatherKmsg(fs, h, options.kmsg_max_bytes);
  GatherPci(fs, h);
  if (options.gpu_holders) GatherGpuHolders(fs, facts->root, h);
}

}  // namespace sl
