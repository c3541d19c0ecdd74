// Parser of PCI config space (ACS) (common/parse/pci_config.h): literal kernel text in, values out;
// garbage never crashes.
#include "common/parse/pci_config.h"

#include <catch2/catch.hpp>
#include <string>

using namespace sl;

namespace {

std::string Config(std::size_t size, std::uint16_t acs_ctrl, bool with_acs = true) {
  std::string c(4096, '\0');
  c[0] = '\x86';
  c[1] = '\x80';
  c[2] = '\x2a';
  c[3] = '\x35';
  // AER at 0x100 -> next 0x148 (or 0), ACS at 0x148.
  std::uint32_t aer = 0x0001 | (2u << 16) | ((with_acs ? 0x148u : 0u) << 20);
  for (int i = 0; i < 4; ++i) c[0x100 + i] = static_cast<char>((aer >> (8 * i)) & 0xff);
  if (with_acs) {
    std::uint32_t hdr = 0x000D | (1u << 16);
    for (int i = 0; i < 4; ++i) c[0x148 + i] = static_cast<char>((hdr >> (8 * i)) & 0xff);
    c[0x14c] = 0x5f;
    c[0x14e] = static_cast<char>(acs_ctrl & 0xff);
    c[0x14f] = static_cast<char>(acs_ctrl >> 8);
  }
  return c.substr(0, size);
}

}  // namespace

TEST_CASE("ACS capability found in a full config space, with lspci's ACSCtl text") {
  auto r = FindAcsInConfig(Config(4096, 0x1d));
  REQUIRE(r.ok());
  CHECK(r->status == ConfigAcs::kFound);
  CHECK(r->acs.offset == 0x148);
  CHECK(r->acs.control == 0x1d);
  CHECK(r->vendor == 0x8086);
  CHECK(AcsControlText(0x1d) ==
        "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-");
  auto none = FindAcsInConfig(Config(4096, 0, false));
  REQUIRE(none.ok());
  CHECK(none->status == ConfigAcs::kAbsent);
}

TEST_CASE("short config spaces: unprivileged, no extended space, truncated") {
  CHECK(FindAcsInConfig(Config(64, 0)).value().status == ConfigAcs::kUnprivileged);
  CHECK(FindAcsInConfig(Config(256, 0)).value().status == ConfigAcs::kNoExtended);
  auto cut = FindAcsInConfig(Config(0x14a, 0x1d));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().message.find("truncated") != std::string::npos);
  CHECK_FALSE(FindAcsInConfig(Config(0x30, 0)).ok());
  CHECK_FALSE(FindAcsInConfig("").ok());
  // A capability list pointing into the standard header, and one that loops.
  std::string bad = Config(4096, 0);
  bad[0x102] = 0x00;
  bad[0x103] = 0x04;  // next = 0x040
  CHECK_FALSE(FindAcsInConfig(bad).ok());
  std::string loop = Config(4096, 0, false);
  loop[0x103] = 0x10;  // next = 0x100: itself
  CHECK_FALSE(FindAcsInConfig(loop).ok());
}
