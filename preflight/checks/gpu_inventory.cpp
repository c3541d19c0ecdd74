// gpu.inventory: the NVIDIA GPUs of this node as PCI and the driver see them, and the driver
// version. A GPU on PCI that the driver does not list (fell off the bus, excluded, failed probe)
// means this node has fewer ranks' worth of GPUs than the job expects.
#include <map>
#include <set>

#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"gpu.inventory/file_unreadable", Outcome::kError, Outcome::kError,
     "a file behind the facts could not be read", kFixReadSource},
    {"gpu.inventory/no_gpu", Outcome::kSkip, Outcome::kSkip, "no NVIDIA GPU or driver on this node",
     ""},
    {"gpu.inventory/driver_not_loaded", Outcome::kFail, Outcome::kFail,
     "GPUs on PCI but the NVIDIA driver is not loaded", kFixInFinding},
    {"gpu.inventory/gpu_missing_from_driver", Outcome::kFail, Outcome::kFail,
     "a GPU on PCI is missing from the driver", kFixInFinding},
    {"gpu.inventory/mixed_models", Outcome::kWarn, Outcome::kWarn, "GPU models differ on one node",
     kFixInFinding},
    {"gpu.inventory/ok", Outcome::kPass, Outcome::kPass, "the check passed", ""},
};

constexpr const char* kId = "gpu.inventory";

Finding Make(std::string entity, Outcome o, std::string message) {
  return MakeFinding(kId, std::move(entity), o, std::move(message));
}

bool Under(const NodeFacts& facts, const std::string& where, const char* node_dir) {
  return StartsWith(where, facts.HostPath(node_dir));
}

// The node summary: a warn for mixed models, else a pass when nothing failed.
void AddSummary(const NodeFacts& facts, const std::vector<GpuInfo>& gpus,
                const std::set<std::string>& seen, bool container_subset,
                std::size_t driver_gpu_count, const std::string& version_line,
                std::vector<Finding>* out_list) {
  std::vector<Finding>& out = *out_list;
  const bool have_driver = !facts.nvidia_driver.empty();
  // The GPUs this node (or container) actually uses.
  std::vector<GpuInfo> used;
  for (const auto& g : gpus) {
    if (!container_subset || seen.count(g.pci_address)) used.push_back(g);
  }
  std::map<std::string, int> models;
  for (const auto& g : used) models[g.model.empty() ? "device " + g.device_id : g.model]++;
  std::string model_text;
  for (const auto& [m, n] : models) {
    model_text += (model_text.empty() ? "" : ", ") + std::to_string(n) + " x " + m;
  }
  const std::size_t count = used.empty() ? driver_gpu_count : used.size();
  std::string driver = have_driver ? "driver " + facts.nvidia_driver +
                                         (facts.nvidia_open_kernel ? " (open kernel modules)"
                                                                   : " (proprietary modules)")
                                   : "driver version unknown";
  if (models.size() > 1) {
    Finding f = Coded(
        Make("node", Outcome::kWarn, "mixed GPU models on one node: " + model_text + "; " + driver),
        "gpu.inventory/mixed_models");
    f.next_step =
        "NCCL runs at the pace of the slowest GPU; use identical GPUs per job or pin "
        "CUDA_VISIBLE_DEVICES to one model";
    for (const auto& g : used) {
      f.With("/proc/driver/nvidia/gpus/" + g.pci_address + "/information", "Model: " + g.model);
    }
    out.push_back(std::move(f));
  }
  bool failed = false;
  for (const auto& f : out) failed |= f.outcome == Outcome::kFail || f.outcome == Outcome::kError;
  if (!failed && models.size() <= 1) {
    Finding f = Coded(Make("node", Outcome::kPass,
                           std::to_string(count) + " NVIDIA GPU(s)" +
                               (model_text.empty() ? "" : ": " + model_text) + "; " + driver),
                      "gpu.inventory/ok");
    if (!version_line.empty()) f.With("/proc/driver/nvidia/version", version_line);
    for (const auto& g : used) {
      f.With("/sys/bus/pci/devices/" + g.pci_address + "/device",
             g.device_id + (g.model.empty() ? "" : " (" + g.model + ")"));
    }
    out.push_back(std::move(f));
  }
}

std::vector<Finding> CheckGpuInventory(const CheckContext& ctx) {
  std::vector<Finding> out;
  const auto& gpus = ctx.facts.gpus;
  // Files about GPUs that could not be read or parsed while gathering.
  for (const Error& e : ctx.facts.problems) {
    if (Under(ctx.facts, e.where, "/proc/driver/nvidia") ||
        (Under(ctx.facts, e.where, "/sys/bus/pci") || Under(ctx.facts, e.where, "/sys/devices"))) {
      Finding f = Coded(Make("node", Outcome::kError, e.where + ": " + e.message),
                        "gpu.inventory/file_unreadable");
      f.next_step =
          e.fix.empty() ? "check the file on the node (driver loaded? sysfs mounted?)" : e.fix;
      out.push_back(std::move(f));
    }
  }
  std::vector<std::string> driver_gpus;
  if (const auto& l = ctx.facts.host.nvidia_gpu_dirs; l.ok()) driver_gpus = *l;
  const bool version_file = ctx.facts.host.nvidia_version_present;
  if (gpus.empty() && driver_gpus.empty() && !version_file) {
    if (out.empty()) {
      out.push_back(Coded(Make("node", Outcome::kSkip,
                               "no NVIDIA GPU on this node (no vendor 0x10de display/3D device in "
                               "/sys/bus/pci/devices, no /proc/driver/nvidia)"),
                          "gpu.inventory/no_gpu"));
    }
    return out;
  }
  const std::string version_line = ctx.facts.host.nvidia_version_line.value.value_or("");
  if (!gpus.empty() && !version_file) {
    Finding f =
        Coded(Make("node", Outcome::kFail,
                   std::to_string(gpus.size()) + " NVIDIA GPU(s) on PCI but the NVIDIA driver "
                                                 "is not loaded (no /proc/driver/nvidia/version)"),
              "gpu.inventory/driver_not_loaded");
    f.With("/sys/bus/pci/devices/" + gpus[0].pci_address + "/vendor", "0x10de");
    f.next_step =
        "load the driver (`modprobe nvidia`; check `dmesg | grep NVRM` for why it did "
        "not load, e.g. a kernel update without a rebuilt module)";
    out.push_back(std::move(f));
    return out;
  }
  // GPUs PCI lists that the driver does not. Inside a GPU container /sys/bus/pci shows every
  // GPU of the host while /proc/driver/nvidia/gpus lists only the ones given to the container
  // (NVIDIA_VISIBLE_DEVICES): there a missing GPU is expected, not a fault.
  const bool container_subset =
      Lookup(ctx.env, "NVIDIA_VISIBLE_DEVICES").has_value() && !driver_gpus.empty();
  std::set<std::string> seen(driver_gpus.begin(), driver_gpus.end());
  int index = 0;
  // The driver's list could not be read (the error is reported above): comparing against it
  // would call every GPU "fell off the bus".
  const bool driver_list_read = ctx.facts.host.nvidia_gpu_dirs.ok();
  for (const auto& g : gpus) {
    if (version_file && driver_list_read && !container_subset && !seen.count(g.pci_address)) {
      Finding f =
          Coded(Make("gpu" + std::to_string(index), Outcome::kFail,
                     "GPU at " + g.pci_address + " (" + g.device_id +
                         ") is on PCI but the NVIDIA driver does not list it: it fell off the "
                         "bus, failed to initialise or is excluded"),
                "gpu.inventory/gpu_missing_from_driver");
      f.With("/sys/bus/pci/devices/" + g.pci_address + "/device", g.device_id);
      f.With("/proc/driver/nvidia/gpus", std::to_string(driver_gpus.size()) + " entries");
      f.next_step = "check `dmesg | grep -e NVRM -e Xid` and `nvidia-smi -q -i " + g.pci_address +
                    "`; reset the GPU or drain the node";
      out.push_back(std::move(f));
    }
    ++index;
  }
  AddSummary(ctx.facts, gpus, seen, container_subset, driver_gpus.size(), version_line, &out);
  return out;
}

}  // namespace

extern const CheckInfo kGpuInventoryCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kGpuInventoryCheck = {"gpu.inventory", "NVIDIA driver version and GPU count",
                                          CheckGpuInventory, kCodes};

}  // namespace sl::preflight
