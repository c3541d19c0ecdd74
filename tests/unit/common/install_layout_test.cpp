#include "common/install_layout.h"

#include <catch2/catch.hpp>

TEST_CASE("the /usr layout keeps its configuration in /etc") {
  const sl::InstallLayout l = sl::LayoutForBinary("/usr/bin/safe-launch");
  CHECK(l.bin_dir == "/usr/bin");
  CHECK(l.prefix == "/usr");
  CHECK(l.libexec_dir == "/usr/libexec/safe-launch");
  CHECK(l.data_dir == "/usr/share/safe-launch");
  CHECK(l.doc_dir == "/usr/share/doc/safe-launch");
  CHECK(l.sysconf_dir == "/etc/safe-launch");
}

TEST_CASE("a package unpacked into a throwaway root finds the configuration inside that root") {
  const sl::InstallLayout l = sl::LayoutForBinary("/tmp/root/usr/bin/safe-launch");
  CHECK(l.data_dir == "/tmp/root/usr/share/safe-launch");
  CHECK(l.sysconf_dir == "/tmp/root/etc/safe-launch");
}

TEST_CASE("any other prefix keeps everything under it, etc/ included") {
  const sl::InstallLayout l = sl::LayoutForBinary("/opt/safe-launch-0.1.0/bin/./safe-launch");
  CHECK(l.prefix == "/opt/safe-launch-0.1.0");
  CHECK(l.libexec_dir == "/opt/safe-launch-0.1.0/libexec/safe-launch");
  CHECK(l.sysconf_dir == "/opt/safe-launch-0.1.0/etc/safe-launch");
  CHECK(sl::LayoutForBinary("/bin/safe-launch").sysconf_dir == "/etc/safe-launch");
}

TEST_CASE("a binary without a parent directory has no layout") {
  CHECK(sl::LayoutForBinary("safe-launch").data_dir.empty());
  CHECK(sl::LayoutForBinary("/safe-launch").data_dir.empty());
}

TEST_CASE("the running binary's layout is the one around /proc/self/exe") {
  const sl::InstallLayout& l = sl::SelfLayout();
  REQUIRE_FALSE(l.bin_dir.empty());
  CHECK(l.data_dir == l.prefix + "/share/safe-launch");
}
