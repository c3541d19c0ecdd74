#pragma once
// An in-memory sysroot of IB/RoCE devices, for the tests of the IB gatherer and the ib.* checks:
// one call writes a port's files as sysfs lays them out (a healthy ACTIVE/LinkUp port), so that a
// test states only what differs from it. The trees on disk are tests/fixtures/ (gen/ib.py).
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/file_reader.h"

namespace sl::test {

/// One used GID row of a RoCE port: index, GID text, type ("RoCE v2", "IB/RoCE v1").
using GidRow = std::tuple<int, std::string, std::string>;

class IbSysroot {
 public:
  /// "/sys/class/infiniband/<dev>/ports/<port>" (node path).
  static std::string PortDir(const std::string& dev, int port = 1) {
    return "/sys/class/infiniband/" + dev + "/ports/" + std::to_string(port);
  }

  /// Port 1 of `dev`: its state ("4: ACTIVE"), phys_state ("5: LinkUp"), rate and link_layer.
  IbSysroot& Port(const std::string& dev, const std::string& rate,
                  const std::string& link_layer = "InfiniBand") {
    const std::string p = PortDir(dev);
    fs_->AddFile(p + "/state", "4: ACTIVE\n")
        .AddFile(p + "/phys_state", "5: LinkUp\n")
        .AddFile(p + "/rate", rate + "\n")
        .AddFile(p + "/link_layer", link_layer + "\n");
    return *this;
  }

  /// A one-port RoCE device: Port(dev, 200 Gb/s, "Ethernet"), a GID table of `table_len` empty
  /// slots with `rows` filled in (their types, and ndevs naming `ifname`), and `ifname`'s MTU.
  IbSysroot& RocePort(const std::string& dev, const std::string& ifname, int mtu,
                      const std::vector<GidRow>& rows, int table_len = 8) {
    Port(dev, "200 Gb/sec (4X HDR)", "Ethernet");
    const std::string p = PortDir(dev);
    for (int i = 0; i < table_len; ++i) {
      fs_->AddFile(p + "/gids/" + std::to_string(i), "0000:0000:0000:0000:0000:0000:0000:0000\n");
    }
    for (const auto& [i, gid, type] : rows) {
      const std::string idx = std::to_string(i);
      fs_->AddFile(p + "/gids/" + idx, gid + "\n")
          .AddFile(p + "/gid_attrs/types/" + idx, type + "\n")
          .AddFile(p + "/gid_attrs/ndevs/" + idx, ifname + "\n");
    }
    return File("/sys/class/net/" + ifname + "/mtu", std::to_string(mtu) + "\n");
  }

  /// Any other file, in place of what is there.
  IbSysroot& File(const std::string& path, const std::string& text) {
    fs_->AddFile(path, text);
    return *this;
  }

  MemFileReader& fs() const { return *fs_; }
  std::shared_ptr<MemFileReader> shared() const { return fs_; }

 private:
  std::shared_ptr<MemFileReader> fs_ = std::make_shared<MemFileReader>();
};

}  // namespace sl::test
