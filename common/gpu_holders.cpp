#include "common/gpu_holders.h"

#include <pwd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "common/strings.h"

namespace sl {
namespace {

constexpr std::string_view kGpuDaemons[] = {
    "nvidia-persistenced", "nv-hostengine", "nvidia-fabricmanager",
    "nv-fabricmanager",    "dcgm-exporter", "nvidia-dcgm",
};

std::string UserName(const FileReader& fs, std::int64_t uid) {
  if (!fs.IsSysroot()) {
    // NSS: LDAP/SSSD users are not in /etc/passwd.
    struct passwd pw, *found = nullptr;
    char buf[4096];
    if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf, sizeof buf, &found) == 0 && found)
      return found->pw_name;
    return std::to_string(uid);
  }
  auto passwd = fs.ReadFile("/etc/passwd");
  if (passwd.ok()) {
    for (const auto& line : SplitLines(*passwd)) {
      auto f = Split(line, ':', false);
      if (f.size() > 2 && f[2] == std::to_string(uid)) return f[0];
    }
  }
  return std::to_string(uid);
}

// The node path an fd link names: under a sysroot a real process's link points into it.
std::string NodePath(std::string target, std::string_view sysroot) {
  std::string root(sysroot);
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.size() > 1 && StartsWith(target, root + "/")) target.erase(0, root.size());
  return target;
}

bool IsNvidiaDevice(std::string_view path) {
  return StartsWith(path, "/dev/nvidia") && path.find(" (deleted)") == std::string_view::npos;
}

// One process's NVIDIA device links; empty when it holds none (or vanished meanwhile).
std::vector<std::string> NvidiaLinks(const FileReader& fs, std::string_view sysroot,
                                     const std::string& pid) {
  std::set<std::string> devices;
  auto fds = fs.ListDir("/proc/" + pid + "/fd");
  if (!fds.ok()) return {};
  for (const auto& fd : *fds) {
    auto target = fs.ReadLink("/proc/" + pid + "/fd/" + fd);
    if (!target.ok()) continue;
    std::string path = NodePath(*target, sysroot);
    if (IsNvidiaDevice(path)) devices.insert(path);
  }
  return {devices.begin(), devices.end()};
}

std::int64_t StatusUid(const std::string& status) {
  for (const auto& line : SplitLines(status)) {
    if (!StartsWith(line, "Uid:")) continue;
    auto f = Fields(std::string_view(line).substr(4));
    if (!f.empty()) {
      auto uid = ParseInt(f.front());
      if (uid.ok()) return *uid;
    }
  }
  return -1;
}

}  // namespace

bool IsGpuDaemon(std::string_view comm) {
  return std::find(std::begin(kGpuDaemons), std::end(kGpuDaemons), comm) != std::end(kGpuDaemons);
}

Result<std::vector<GpuHolder>> FindGpuHolders(const FileReader& fs, std::string_view sysroot,
                                              int self_pid) {
  std::vector<GpuHolder> out;
  auto pids = fs.ListDir("/proc");
  if (!pids.ok()) return pids.error();
  for (const auto& pid : *pids) {
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    if (pid == std::to_string(self_pid)) continue;
    auto devices = NvidiaLinks(fs, sysroot, pid);
    if (devices.empty()) continue;
    auto comm = fs.ReadFile("/proc/" + pid + "/comm");
    if (comm.ok() && IsGpuDaemon(Trim(*comm))) continue;
    GpuHolder h;
    h.pid = std::stoi(pid);
    h.devices = std::move(devices);
    auto status = fs.ReadFile("/proc/" + pid + "/status");
    const std::int64_t uid = status.ok() ? StatusUid(*status) : -1;
    h.user = uid >= 0 ? UserName(fs, uid) : "?";
    auto cmdline = fs.ReadFile("/proc/" + pid + "/cmdline", 4096);
    std::string cmd = cmdline.ok() ? *cmdline : "";
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    cmd = std::string(Trim(cmd));
    if (cmd.empty() && comm.ok()) cmd = "[" + std::string(Trim(*comm)) + "]";
    h.command = Printable(cmd, 120);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace sl
