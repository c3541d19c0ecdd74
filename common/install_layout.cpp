#include "common/install_layout.h"

#include <filesystem>
#include <system_error>

namespace sl {

namespace fs = std::filesystem;

InstallLayout LayoutForBinary(std::string_view exe) {
  const fs::path bin = fs::path(exe).lexically_normal().parent_path();
  if (bin.empty() || bin == bin.root_path()) return {};
  const fs::path prefix = bin.parent_path();
  InstallLayout l;
  l.bin_dir = bin.string();
  l.prefix = prefix.string();
  l.libexec_dir = (prefix / "libexec" / "safe-launch").string();
  l.data_dir = (prefix / "share" / "safe-launch").string();
  l.doc_dir = (prefix / "share" / "doc" / "safe-launch").string();
  // The FHS puts /usr's configuration in /etc, not /usr/etc. Applying the same rule to any
  // R/usr keeps a package unpacked into a throwaway root (dpkg-deb -x) self-contained: R/etc.
  const fs::path etc = prefix.filename() == "usr" ? prefix.parent_path() / "etc" : prefix / "etc";
  l.sysconf_dir = (etc / "safe-launch").string();
  return l;
}

const InstallLayout& SelfLayout() {
  static const InstallLayout layout = [] {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? InstallLayout{} : LayoutForBinary(self.string());
  }();
  return layout;
}

}  // namespace sl
