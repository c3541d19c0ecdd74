// pci.acs: PCIe Access Control Services on bridges and switch ports. With ACS Request/Completion
// Redirect (or Source Validation / Upstream Forwarding) enabled, peer-to-peer TLPs between a GPU
// and a NIC (or two GPUs) under the same switch are sent up to the root complex instead of
// across the switch: GPUDirect RDMA and P2P crawl, or fail when the IOMMU blocks them. NCCL's
// troubleshooting guide asks for ACS off on every switch port. The IOMMU state is reported too,
// since ACS settings matter most with it on.
#include <cstdio>
#include <optional>

#include "common/parse/pci_config.h"
#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"pci.acs/iommu_unknown", Outcome::kError, Outcome::kError, "the IOMMU state could not be read",
     kFixReadSource},
    {"pci.acs/iommu_off_or_passthrough", Outcome::kPass, Outcome::kPass,
     "the IOMMU is off or in passthrough mode", ""},
    {"pci.acs/iommu_translating", Outcome::kWarn, Outcome::kWarn, "the IOMMU translates DMA",
     kFixInFinding},
    {"pci.acs/class_unreadable", Outcome::kError, Outcome::kError,
     "a PCI class file could not be read", kFixReadSource},
    {"pci.acs/class_malformed", Outcome::kError, Outcome::kError, "a PCI class is not a number",
     kFixReadSource},
    {"pci.acs/config_unreadable", Outcome::kError, Outcome::kError,
     "a bridge config space could not be read", kFixReadSource},
    {"pci.acs/config_malformed", Outcome::kError, Outcome::kError,
     "a bridge config space is truncated or malformed", kFixReadSource},
    {"pci.acs/acs_p2p_enabled", Outcome::kWarn, Outcome::kWarn,
     "ACS redirect/source validation is on on a PCIe bridge", kFixInFinding},
    {"pci.acs/unprivileged", Outcome::kSkip, Outcome::kSkip,
     "config space hidden from a non-root reader", ""},
    {"pci.acs/no_extended", Outcome::kSkip, Outcome::kSkip, "no extended config space readable",
     ""},
    {"pci.acs/no_bridges", Outcome::kSkip, Outcome::kSkip, "no PCIe bridges", ""},
    {"pci.acs/acs_off", Outcome::kPass, Outcome::kPass,
     "ACS redirect/source validation is off on all bridges", ""},
    {"pci.acs/devices_unreadable", Outcome::kError, Outcome::kError,
     "/sys/bus/pci/devices is there but could not be listed", kFixInFinding},
    {"pci.acs/no_pci", Outcome::kSkip, Outcome::kSkip, "no PCI devices visible", ""},
};

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

Finding IommuFinding(const CheckContext& ctx) {
  const HostEvidence& h = ctx.facts.host;
  const std::vector<std::string>& units = h.iommu_units;
  if (!h.cmdline.ok() && units.empty()) {
    // Neither source read: "IOMMU off" would rest on nothing.
    Finding f = Coded(Make("iommu", Outcome::kError,
                           "cannot tell the IOMMU state: " + h.cmdline.error.Describe() +
                               " and no units in /sys/class/iommu"),
                      "pci.acs/iommu_unknown");
    f.next_step = "check that /proc is mounted (`cat /proc/cmdline`)";
    return f;
  }
  std::string cmdline;
  bool passthrough = false, off = false;
  std::string iommu_args;
  if (h.cmdline.ok()) {
    cmdline = *h.cmdline;
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
  if (!h.iommu_unreadable.empty() && !off) {
    // The units could not be listed: "no units, IOMMU off" would rest on a read that failed.
    Finding u = Coded(Make("iommu", Outcome::kError,
                           "could not check the IOMMU: /sys/class/iommu is there but cannot be "
                           "read (" +
                               h.iommu_unreadable + "; " + args + ")"),
                      "pci.acs/iommu_unknown");
    u.next_step = "run preflight as root, or check /sys/class/iommu is readable (ls -l)";
    return u;
  }
  Finding f = Coded(Make("iommu", Outcome::kPass, ""), "pci.acs/iommu_off_or_passthrough");
  f.With("/sys/class/iommu", units.empty() ? "(no units)" : Join(units, " "));
  if (!cmdline.empty()) f.With("/proc/cmdline", cmdline);
  if (units.empty() || off) {
    f.message =
        "IOMMU off (" + std::to_string(units.size()) + " units in /sys/class/iommu; " + args + ")";
  } else if (passthrough) {
    f.message = "IOMMU on in passthrough mode (" + args + "): device DMA is not translated";
  } else {
    f.outcome = Outcome::kWarn;
    f.code = "pci.acs/iommu_translating";
    f.message = "IOMMU on and translating DMA (" + std::to_string(units.size()) + " units; " +
                args + "): GPUDirect RDMA/P2P traffic is remapped or blocked";
    f.next_step =
        "boot with `iommu=pt` (add it to GRUB_CMDLINE_LINUX, update-grub, reboot) or "
        "disable the IOMMU in the BIOS if nothing on the node needs it (VFIO, SR-IOV)";
  }
  return f;
}

// Unprivileged/no-extended bridges and how many bridges (and with ACS) were seen.
struct AcsTally {
  int bridges = 0, with_acs = 0;
  std::vector<std::string> unprivileged, no_extended;
};

// The finding for one PCI function, if it needs one (a bridge with P2P-breaking ACS, or a file
// that could not be read).
std::optional<Finding> JudgeFunction(const PciFunctionFact& fn, AcsTally* tally) {
  const std::string& bdf = fn.bdf;
  if (!fn.pci_class.ok()) {
    if (fn.pci_class.unreadable) {
      return Coded(
          Make(bdf, Outcome::kError, "cannot read the PCI class: " + fn.pci_class.error.Describe()),
          "pci.acs/class_unreadable");
    }
    return Coded(
        Make(bdf, Outcome::kError, fn.pci_class.error.message + " in " + fn.pci_class.error.where),
        "pci.acs/class_malformed");
  }
  if (!fn.IsBridge()) return std::nullopt;  // only PCI-to-PCI bridges (root/switch ports)
  ++tally->bridges;
  const auto& acs = fn.acs;
  if (acs.unreadable) {
    Finding f =
        Coded(Make(bdf, Outcome::kError, "cannot read the config space: " + acs.error.Describe()),
              "pci.acs/config_unreadable");
    f.next_step = acs.error.fix;
    return f;
  }
  if (!acs.ok()) {
    Finding f = Coded(Make(bdf, Outcome::kError, acs.error.message + " in " + acs.error.where),
                      "pci.acs/config_malformed");
    f.With(acs.path, acs.raw);
    f.next_step = "read it again on the node as root (`lspci -vvv -s " + bdf + "`)";
    return f;
  }
  switch (acs->status) {
    case ConfigAcs::kUnprivileged:
      tally->unprivileged.push_back(bdf);
      return std::nullopt;
    case ConfigAcs::kNoExtended:
      tally->no_extended.push_back(bdf);
      return std::nullopt;
    case ConfigAcs::kAbsent:
      return std::nullopt;
    case ConfigAcs::kFound:
      break;
  }
  ++tally->with_acs;
  const std::uint16_t ctrl = acs->acs.control;
  if ((ctrl & kAcsP2pBreaking) == 0) return std::nullopt;
  const bool redirect = ctrl & (kAcsReqRedir | kAcsCmpltRedir | kAcsUpstreamFwd);
  Finding f = Coded(Make(bdf, Outcome::kWarn,
                         "ACS " + BitsOn(ctrl) + " enabled on PCIe bridge " + bdf + " (" +
                             Hex(acs->vendor, 4) + ":" + Hex(acs->device, 4).substr(2) + "): " +
                             (redirect ? "peer-to-peer traffic below it (GPU<->NIC GPUDirect RDMA, "
                                         "GPU<->GPU) is redirected through the root complex"
                                       : "source validation checks every peer-to-peer request "
                                         "below it; NCCL wants ACS off on bridges between GPUs "
                                         "and NICs")),
                    "pci.acs/acs_p2p_enabled");
  f.With(acs.path, "ACSCtl: " + AcsControlText(ctrl) + " (ECAP_ACS at " + Hex(acs->acs.offset, 3) +
                       ", control " + Hex(ctrl, 4) + ")");
  f.next_step = "as root: `setpci -s " + bdf +
                " ECAP_ACS+0x6.w=0000` (lost at reboot: run it from a boot-time unit for every "
                "bridge, or turn ACS off in the BIOS); keep ACS on only where VFIO/SR-IOV "
                "isolation needs it";
  return f;
}

// Skips for bridges whose ACS could not be seen, and the node-level verdict.
void Summarise(const AcsTally& t, std::vector<Finding>* out) {
  const auto& unprivileged = t.unprivileged;
  const auto& no_extended = t.no_extended;
  const int bridges = t.bridges;
  const int with_acs = t.with_acs;
  if (!unprivileged.empty()) {
    Finding f =
        Coded(Make("node", Outcome::kSkip,
                   "ACS not checkable: sysfs returns only the first 64 bytes of config space "
                   "of " +
                       std::to_string(unprivileged.size()) + " bridge(s) (e.g. " + unprivileged[0] +
                       ") to a non-root reader; the ACS capability lies in "
                       "the extended config space"),
              "pci.acs/unprivileged");
    f.With(JoinPath(JoinPath("/sys/bus/pci/devices", unprivileged[0]), "config"), "64 bytes");
    f.next_step =
        "run `sudo safe-launch preflight --only pci.acs` (or `sudo lspci -vvv | grep "
        "ACSCtl`)";
    out->push_back(std::move(f));
  }
  if (!no_extended.empty()) {
    Finding f = Coded(Make("node", Outcome::kSkip,
                           "ACS not checkable on " + std::to_string(no_extended.size()) +
                               " bridge(s) (e.g. " + no_extended[0] +
                               "): only 256 bytes of config space readable (no extended config "
                               "space: a VM, MMCONFIG/ECAM off, or not read as root)"),
                      "pci.acs/no_extended");
    f.With(JoinPath(JoinPath("/sys/bus/pci/devices", no_extended[0]), "config"), "256 bytes");
    f.next_step = "check as root on the host: `sudo lspci -vvv | grep ACSCtl`";
    out->push_back(std::move(f));
  }
  bool flagged = false;
  for (const auto& f : *out) flagged |= f.outcome != Outcome::kSkip;
  if (!flagged) {
    if (bridges == 0) {
      out->push_back(Coded(Make("node", Outcome::kSkip, "no PCIe bridges in /sys/bus/pci/devices"),
                           "pci.acs/no_bridges"));
    } else if (unprivileged.size() + no_extended.size() < static_cast<std::size_t>(bridges)) {
      out->push_back(Coded(
          Make("node", Outcome::kPass,
               "ACS redirect/source validation off on all " + std::to_string(bridges) +
                   " PCIe bridges (" + std::to_string(with_acs) + " have the ACS capability)"),
          "pci.acs/acs_off"));
    }
  }
}

std::vector<Finding> CheckPciAcs(const CheckContext& ctx) {
  std::vector<Finding> out;
  const auto& pci = ctx.facts.host.pci;
  if (!pci.ok() && !pci.absent) {
    // There but not listable (a file, a dangling link): ACS is unknown, not "no PCI here".
    Finding f =
        Coded(Make("node", Outcome::kError, "cannot list the PCI devices: " + pci.error.Describe()),
              "pci.acs/devices_unreadable");
    f.With(pci.path, "unreadable: " + pci.error.message);
    f.next_step = "check that sysfs is mounted on /sys (or regenerate the --sysroot tree)";
    out.push_back(std::move(f));
    out.push_back(IommuFinding(ctx));
    return out;
  }
  if (!pci.ok()) {
    out.push_back(
        Coded(Make("node", Outcome::kSkip,
                   "no PCI devices visible (" + pci.error.Describe() +
                       "): ACS cannot be checked here (a container without /sys/bus/pci?)"),
              "pci.acs/no_pci"));
    out.push_back(IommuFinding(ctx));
    return out;
  }
  AcsTally tally;
  for (const PciFunctionFact& fn : *pci) {
    if (auto f = JudgeFunction(fn, &tally)) out.push_back(std::move(*f));
  }
  Summarise(tally, &out);
  out.push_back(IommuFinding(ctx));
  return out;
}

}  // namespace

extern const CheckInfo kPciAcsCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kPciAcsCheck = {"pci.acs", "ACS redirect is off on PCIe bridges; IOMMU state",
                                    CheckPciAcs, kCodes};

}  // namespace sl::preflight
