// Parser of /proc/mounts and tmpfs sizes (common/parse/mounts.h): literal kernel text in, values
// out; garbage never crashes.
#include "common/parse/mounts.h"

#include <catch2/catch.hpp>
#include <string>

using namespace sl;

TEST_CASE("mounts: fields, octal escapes, size options in every unit") {
  auto m = ParseProcMounts(
      "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n"
      "/dev/sda1 /mnt/with\\040space ext4 rw 0 0\n");
  REQUIRE(m.ok());
  REQUIRE(m->size() == 2);
  CHECK((*m)[1].mount_point == "/mnt/with space");
  CHECK(MountOption((*m)[0].options, "size") == std::optional<std::string>("65536k"));
  CHECK_FALSE(MountOption("rw,nosize", "size").has_value());
  CHECK(ParseTmpfsSize("65536k", 0).value() == 64ull << 20);
  CHECK(ParseTmpfsSize("16g", 0).value() == 16ull << 30);
  CHECK(ParseTmpfsSize("1048576", 0).value() == 1048576);
  CHECK(ParseTmpfsSize("50%", 1000).value() == 500);
  CHECK_FALSE(ParseTmpfsSize("lots", 0).ok());
  CHECK_FALSE(ParseTmpfsSize("99999999999999999999e", 0).ok());
  CHECK_FALSE(ParseTmpfsSize("50%", 0).ok());
  CHECK_FALSE(ParseProcMounts("just two\n").ok());
  CHECK(ParseMemTotal("MemTotal:       2113591344 kB\n").value() == 2113591344ull * 1024);
  CHECK_FALSE(ParseMemTotal("MemFree: 1 kB\n").ok());
}
