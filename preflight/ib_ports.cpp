#include "preflight/ib_ports.h"

namespace sl::preflight {

std::string IbPortPath(const IbPort& port, std::string_view rel) {
  return "/sys/class/infiniband/" + port.device + "/ports/" + std::to_string(port.port) + "/" +
         std::string(rel);
}

std::vector<IbReadError> IbStateReadErrors(const IbPort& port) {
  std::vector<IbReadError> out;
  AddReadError(port.sysfs.state, &out);
  AddReadError(port.sysfs.phys_state, &out);
  AddReadError(port.sysfs.rate, &out);
  AddReadError(port.sysfs.link_layer, &out);
  return out;
}

std::vector<IbReadError> IbGidReadErrors(const IbPort& port) {
  std::vector<IbReadError> out;
  AddReadError(port.sysfs.gid_indices, &out);
  for (const auto& [index, g] : port.sysfs.gids) AddReadError(g, &out);
  return out;
}

Finding IbReadErrorFinding(std::string_view check_id, const IbPort& port,
                           const std::vector<IbReadError>& problems) {
  Finding f;
  f.check_id = std::string(check_id);
  f.entity = port.Name();
  f.outcome = Outcome::kError;
  f.code = f.check_id + "/port_unreadable";
  std::string what;
  for (const auto& p : problems) {
    if (!what.empty()) what += "; ";
    what += p.message;
    f.With(p.path, "unreadable: " + p.message);
  }
  f.message = "cannot decide: " + what;
  f.next_step = "look at the file(s) named above (cat them; `ibstat " + port.device +
                "` and `ibv_devinfo -d " + port.device +
                "` show the same data); a driver in a bad state needs `mlxfwreset` or a reboot, "
                "a broken --sysroot tree needs regenerating";
  return f;
}

std::vector<Finding> IbDeviceErrorFindings(std::string_view check_id, const NodeFacts& facts) {
  std::vector<Finding> out;
  for (const auto& p : IbProblems(facts)) {
    if (p.port != 0) continue;
    Finding f;
    f.check_id = std::string(check_id);
    f.entity = p.device.empty() ? "node" : p.device;
    f.outcome = Outcome::kError;
    f.code = f.check_id + "/device_unreadable";
    f.message = "cannot read " + p.path + ": " + p.message;
    f.next_step = "check permissions and the RDMA driver (`lsmod | grep mlx5_ib`, `ibv_devices`)";
    f.With(p.path, "unreadable: " + p.message);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace sl::preflight
