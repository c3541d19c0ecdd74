#pragma once
// Where safe-launch's own files are, relative to the running binary (/proc/self/exe), so the same
// build works from the build tree, from /usr (the .deb), from any `cmake --install --prefix P` and
// from the relocatable tarball unpacked anywhere. Layout: doc/manual.md "Installing".
#include <string>
#include <string_view>

namespace sl {

struct InstallLayout {
  std::string bin_dir;      ///< directory of the binary: P/bin
  std::string prefix;       ///< its parent: P
  std::string libexec_dir;  ///< P/libexec/safe-launch: the warm-up helper
  std::string data_dir;     ///< P/share/safe-launch: recipes/
  std::string sysconf_dir;  ///< /etc/safe-launch for P=/usr, R/etc/safe-launch for P=R/usr,
                            ///< else P/etc/safe-launch: recipes.d/ (site recipes)
  std::string doc_dir;      ///< P/share/doc/safe-launch: examples/
};

/// The layout around a binary at `exe` (an absolute path). Pure; every field is "" when `exe`
/// has no parent directory.
InstallLayout LayoutForBinary(std::string_view exe);

/// LayoutForBinary(/proc/self/exe), read once. All fields "" when /proc/self/exe is unreadable
/// (no /proc in a container): callers then fall back to what is compiled in.
const InstallLayout& SelfLayout();

}  // namespace sl
