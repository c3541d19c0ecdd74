// Parser of /proc/modules (common/parse/modules.h): literal kernel text in, values out; garbage
// never crashes.
#include "common/parse/modules.h"

#include <catch2/catch.hpp>

using namespace sl;

namespace {
// As /proc/modules prints them: name, size, use count, users, state, address.
constexpr const char* kModules =
    "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n"
    "nvidia_uvm 1986560 4 - Live 0x0000000000000000 (POE)\n"
    "nvidia 54497280 389 nvidia_uvm,nvidia_peermem,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
    "ib_core 520192 9 nvidia_peermem,rdma_cm,mlx5_ib, Live 0x0000000000000000\n";
}  // namespace

TEST_CASE("modules: a module is listed by its first field only") {
  CHECK(ModuleListed(kModules, "nvidia_peermem"));
  CHECK(ModuleListed(kModules, "nvidia"));
  CHECK(ModuleListed(kModules, "ib_core"));
  // Named only as a user of another module, or as a prefix of a listed one: not loaded.
  CHECK_FALSE(ModuleListed(kModules, "mlx5_ib"));
  CHECK_FALSE(ModuleListed(kModules, "nvidia_"));
  CHECK_FALSE(ModuleListed(kModules, "nv_peer_mem"));
}

TEST_CASE("modules: empty, blank and garbage text lists nothing and never crashes") {
  CHECK_FALSE(ModuleListed("", "nvidia"));
  CHECK_FALSE(ModuleListed("\n\n   \n", "nvidia"));
  CHECK_FALSE(ModuleListed(std::string_view("\0\x01\xff", 3), "nvidia"));
  CHECK(ModuleListed("  nv_peer_mem\t16384 0 - Live\r\n", "nv_peer_mem"));
  CHECK_FALSE(ModuleListed("nvidia", ""));
}
