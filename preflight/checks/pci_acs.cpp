// pci.acs: PCIe Access Control Services on bridges and switch ports. With ACS Request/Completion
// Redirect (or Source Validation / Upstream Forwarding) enabled, peer-to-peer TLPs between a GPU
// and a NIC (or two GPUs) under the same switch are sent up to the root complex instead of
// across the switch: GPUDirect RDMA and P2P crawl, or fail when the IOMMU blocks them. NCCL's
// troubleshooting guide asks for ACS off on every switch port. The IOMMU state is reported too,
// since ACS settings matter most with it on.
#include <cstdio>

#include "common/parse/pci_config.h"
#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

constexpr const char* kId = "pci.acs";

Finding Make(std::string entity, Outcome o, std::string message) {
  return MakeFinding(kId, std::move(entity), o, std::move(message));
}

std::string Hex(unsigned v, int width) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%0*x", width, v);
  return b;
}

std::string BitsOn(std::uint16_t control) {
  static constexpr std::pair<std::uint16_t, const char*> kBits[] = {
      {kAcsSrcValid, "SrcValid"},
      {kAcsReqRedir, "ReqRedir"},
      {kAcsCmpltRedir, "CmpltRedir"},
      {kAcsUpstreamFwd, "UpstreamFwd"}};
  std::string out;
  for (auto [bit, name] : kBits) {
    if (control & bit) out += (out.empty() ? "" : "/") + std::string(name);
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

Finding IommuFinding(const CheckContext& ctx) {
  std::vector<std::string> units;
  if (auto l = ctx.fs.ListDir("/sys/class/iommu"); l.ok()) units = *l;
  std::string cmdline;
  bool passthrough = false, off = false;
  std::string iommu_args;
  if (auto c = ctx.fs.ReadFile("/proc/cmdline", 65536); c.ok()) {
    cmdline = std::string(Trim(*c));
    for (const auto& tok : Split(cmdline, ' ')) {
      if (StartsWith(tok, "intel_iommu=") || StartsWith(tok, "amd_iommu=") ||
          StartsWith(tok, "iommu=") || StartsWith(tok, "iommu.passthrough=")) {
        iommu_args += (iommu_args.empty() ? "" : " ") + tok;
        if (tok == "iommu=pt" || tok == "iommu.passthrough=1" || tok == "amd_iommu=pt") {
          passthrough = true;
        }
        if (tok == "iommu=nopt" || tok == "iommu.passthrough=0") passthrough = false;
        if (tok == "intel_iommu=off" || tok == "amd_iommu=off" || tok == "iommu=off") off = true;
      }
    }
  }
  std::string args = iommu_args.empty() ? "no iommu arguments on the kernel command line"
                                        : "kernel command line: " + iommu_args;
  Finding f = Make("iommu", Outcome::kPass, "");
  f.With("/sys/class/iommu", units.empty() ? "(no units)" : Join(units));
  if (!cmdline.empty()) f.With("/proc/cmdline", cmdline);
  if (units.empty() || off) {
    f.message =
        "IOMMU off (" + std::to_string(units.size()) + " units in /sys/class/iommu; " + args + ")";
  } else if (passthrough) {
    f.message = "IOMMU on in passthrough mode (" + args + "): device DMA is not translated";
  } else {
    f.outcome = Outcome::kWarn;
    f.message = "IOMMU on and translating DMA (" + std::to_string(units.size()) + " units; " +
                args + "): GPUDirect RDMA/P2P traffic is remapped or blocked";
    f.next_step =
        "boot with `iommu=pt` (add it to GRUB_CMDLINE_LINUX, update-grub, reboot) or "
        "disable the IOMMU in the BIOS if nothing on the node needs it (VFIO, SR-IOV)";
  }
  return f;
}

}  // namespace

std::vector<Finding> CheckPciAcs(const CheckContext& ctx) {
  std::vector<Finding> out;
  auto devices = ctx.fs.ListDir("/sys/bus/pci/devices");
  if (!devices.ok()) {
    out.push_back(Make("node", Outcome::kSkip,
                       "no PCI devices visible (" + devices.error().Describe() +
                           "): ACS cannot be checked here (a container without /sys/bus/pci?)"));
    out.push_back(IommuFinding(ctx));
    return out;
  }
  int bridges = 0, with_acs = 0;
  std::vector<std::string> unprivileged, no_extended;
  for (const auto& bdf : *devices) {
    const std::string base = JoinPath("/sys/bus/pci/devices", bdf);
    auto cls = ctx.fs.ReadFile(JoinPath(base, "class"), 64);
    if (!cls.ok()) {
      Finding f =
          Make(bdf, Outcome::kError, "cannot read the PCI class: " + cls.error().Describe());
      out.push_back(std::move(f));
      continue;
    }
    auto cls_value = ParseUint(Trim(*cls));
    if (!cls_value.ok()) {
      out.push_back(Make(bdf, Outcome::kError,
                         "PCI class is not a number: \"" + Printable(Trim(*cls)) + "\" in " +
                             ctx.fs.HostPath(JoinPath(base, "class"))));
      continue;
    }
    if ((*cls_value >> 8) != 0x0604) continue;  // only PCI-to-PCI bridges (root/switch ports)
    ++bridges;
    const std::string config_path = JoinPath(base, "config");
    auto config = ctx.fs.ReadFile(config_path, 4096);
    if (!config.ok()) {
      Finding f =
          Make(bdf, Outcome::kError, "cannot read the config space: " + config.error().Describe());
      f.next_step = config.error().fix;
      out.push_back(std::move(f));
      continue;
    }
    auto acs = FindAcsInConfig(*config);
    if (!acs.ok()) {
      Finding f =
          Make(bdf, Outcome::kError, acs.error().message + " in " + ctx.fs.HostPath(config_path));
      f.With(config_path, std::to_string(config->size()) + " bytes");
      f.next_step = "read it again on the node as root (`lspci -vvv -s " + bdf + "`)";
      out.push_back(std::move(f));
      continue;
    }
    switch (acs->status) {
      case ConfigAcs::kUnprivileged:
        unprivileged.push_back(bdf);
        continue;
      case ConfigAcs::kNoExtended:
        no_extended.push_back(bdf);
        continue;
      case ConfigAcs::kAbsent:
        continue;
      case ConfigAcs::kFound:
        break;
    }
    ++with_acs;
    const std::uint16_t ctrl = acs->acs.control;
    if ((ctrl & kAcsP2pBreaking) == 0) continue;
    const bool redirect = ctrl & (kAcsReqRedir | kAcsCmpltRedir | kAcsUpstreamFwd);
    Finding f = Make(bdf, Outcome::kWarn,
                     "ACS " + BitsOn(ctrl) + " enabled on PCIe bridge " + bdf + " (" +
                         Hex(acs->vendor, 4) + ":" + Hex(acs->device, 4).substr(2) + "): " +
                         (redirect ? "peer-to-peer traffic below it (GPU<->NIC GPUDirect RDMA, "
                                     "GPU<->GPU) is redirected through the root complex"
                                   : "source validation checks every peer-to-peer request "
                                     "below it; NCCL wants ACS off on bridges between GPUs "
                                     "and NICs"));
    f.With(config_path, "ACSCtl: " + AcsControlText(ctrl) + " (ECAP_ACS at " +
                            Hex(acs->acs.offset, 3) + ", control " + Hex(ctrl, 4) + ")");
    f.next_step = "as root: `setpci -s " + bdf +
                  " ECAP_ACS+0x6.w=0000` (lost at reboot: run it from a boot-time unit for every "
                  "bridge, or turn ACS off in the BIOS); keep ACS on only where VFIO/SR-IOV "
                  "isolation needs it";
    out.push_back(std::move(f));
  }
  if (!unprivileged.empty()) {
    Finding f =
        Make("node", Outcome::kSkip,
             "ACS not checkable: sysfs returns only the first 64 bytes of config space "
             "of " +
                 std::to_string(unprivileged.size()) + " bridge(s) (e.g. " + unprivileged[0] +
                 ") to a non-root reader; the ACS capability lies in "
                 "the extended config space");
    f.With(JoinPath(JoinPath("/sys/bus/pci/devices", unprivileged[0]), "config"), "64 bytes");
    f.next_step =
        "run `sudo safe-launch preflight --only pci.acs` (or `sudo lspci -vvv | grep "
        "ACSCtl`)";
    out.push_back(std::move(f));
  }
  if (!no_extended.empty()) {
    Finding f = Make("node", Outcome::kSkip,
                     "ACS not checkable on " + std::to_string(no_extended.size()) +
                         " bridge(s) (e.g. " + no_extended[0] +
                         "): only 256 bytes of config space readable (no extended config "
                         "space: a VM, MMCONFIG/ECAM off, or not read as root)");
    f.With(JoinPath(JoinPath("/sys/bus/pci/devices", no_extended[0]), "config"), "256 bytes");
    f.next_step = "check as root on the host: `sudo lspci -vvv | grep ACSCtl`";
    out.push_back(std::move(f));
  }
  bool flagged = false;
  for (const auto& f : out) flagged |= f.outcome != Outcome::kSkip;
  if (!flagged) {
    if (bridges == 0) {
      out.push_back(Make("node", Outcome::kSkip, "no PCIe bridges in /sys/bus/pci/devices"));
    } else if (unprivileged.size() + no_extended.size() < static_cast<std::size_t>(bridges)) {
      out.push_back(Make("node", Outcome::kPass,
                         "ACS redirect/source validation off on all " + std::to_string(bridges) +
                             " PCIe bridges (" + std::to_string(with_acs) +
                             " have the ACS capability)"));
    }
  }
  out.push_back(IommuFinding(ctx));
  return out;
}

}  // namespace sl::preflight
