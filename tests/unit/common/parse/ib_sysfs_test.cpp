// Parsers of /sys/class/infiniband attribute text: real values and garbage.
#include "common/parse/ib_sysfs.h"

#include <catch2/catch.hpp>

#include "common/node_facts.h"

using namespace sl;

TEST_CASE("state and phys_state files parse into code and name") {
  auto s = ParseSysfsCodeName("4: ACTIVE\n", "state");
  REQUIRE(s.ok());
  CHECK(s->code == 4);
  CHECK(s->name == "ACTIVE");
  auto p = ParseSysfsCodeName("5: LinkUp\n", "phys_state");
  REQUIRE(p.ok());
  CHECK(p->name == "LinkUp");
  auto t = ParseSysfsCodeName("7: Phy Test\n", "phys_state");
  REQUIRE(t.ok());
  CHECK(t->name == "Phy Test");
}

TEST_CASE("garbage state text is an error quoting the printable value") {
  for (std::string bad : {std::string("\x00\xff\x13garbage\n", 12), std::string("ACTIVE"),
                          std::string("4:ACTIVE"), std::string(""), std::string("4: "),
                          std::string("12345: ACTIVE"), std::string("4: ACT;IVE")}) {
    auto r = ParseSysfsCodeName(bad, "state");
    CHECK_FALSE(r.ok());
  }
  auto r = ParseSysfsCodeName(std::string("\x00\xffjunk", 6), "state");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("\\x00\\xffjunk") != std::string::npos);
  CHECK(r.error().message.find("state") != std::string::npos);
}

TEST_CASE("rate text gives Gb/s for every kernel form") {
  CHECK(ParseIbRate("400 Gb/sec (4X NDR)\n").value() == 400);
  CHECK(ParseIbRate("200 Gb/sec (4X HDR)").value() == 200);
  CHECK(ParseIbRate("2.5 Gb/sec (1X SDR)").value() == 2.5);
  CHECK(ParseIbRate("100 Gb/sec (4X)").value() == 100);
  CHECK(ParseIbRate("10 Gb/sec").value() == 10);
}

TEST_CASE("garbage rate text is an error") {
  for (const char* bad : {"", "fast", "Gb/sec", "400 Mb/sec (4X NDR)", "400Gb/sec", "-5 Gb/sec",
                          "400 Gb/sec [4X NDR]", "1.2.3 Gb/sec (4X)"}) {
    CHECK_FALSE(ParseIbRate(bad).ok());
  }
}

TEST_CASE("link_layer accepts the kernel's three values only") {
  CHECK(ParseLinkLayer("InfiniBand\n").value() == "InfiniBand");
  CHECK(ParseLinkLayer("Ethernet\n").value() == "Ethernet");
  CHECK_FALSE(ParseLinkLayer("ethernet").ok());
  CHECK_FALSE(ParseLinkLayer("").ok());
}

TEST_CASE("GIDs parse from the sysfs form and classify like NCCL") {
  auto g = ParseGid("0000:0000:0000:0000:0000:ffff:0b00:0048\n");
  REQUIRE(g.ok());
  CHECK(GidIpv4(*g) == "11.0.0.72");
  CHECK(GidIsIpv4(*g));
  CHECK_FALSE(GidIsLinkLocal(*g));
  CHECK_FALSE(GidIsUnconfigured(*g));
  auto ll = ParseGid("fe80:0000:0000:0000:a288:c2ff:fe5b:03ec");
  REQUIRE(ll.ok());
  CHECK(GidIsLinkLocal(*ll));
  CHECK_FALSE(GidIsIpv4(*ll));
  CHECK(GidIpv4(*ll).empty());
  CHECK(GidIsUnconfigured(ParseGid("0000:0000:0000:0000:0000:0000:0000:0000").value()));
  CHECK(GidIsUnconfigured(ParseGid("fe80:0000:0000:0000:0000:0000:0000:0000").value()));
  auto mc = ParseGid("ff0e:0000:0000:0000:0000:ffff:0a00:0001");
  REQUIRE(mc.ok());
  CHECK(GidIsIpv4(*mc));  // NCCL counts IPv4-mapped multicast as AF_INET too
}

TEST_CASE("truncated or malformed GIDs are errors") {
  for (const char* bad :
       {"0000:0000:0000:0000:0000:ffff:0b0", "", "fe80::1",
        "zzzz:0000:0000:0000:0000:ffff:0b00:0048", "0000-0000:0000:0000:0000:ffff:0b00:0048",
        "0000:0000:0000:0000:0000:ffff:0b00:00489"}) {
    CHECK_FALSE(ParseGid(bad).ok());
  }
}

TEST_CASE("RoCE versions follow NCCL's prefix comparison") {
  CHECK(RoceVersionFromType("IB/RoCE v1\n") == 1);
  CHECK(RoceVersionFromType("RoCE v1") == 1);
  CHECK(RoceVersionFromType("RoCE v2\n") == 2);
  CHECK(RoceVersionFromType("") == 0);
  CHECK(RoceVersionFromType("v2") == 0);
}

TEST_CASE("counter values are decimal counts, anything else is an error") {
  CHECK(ParseCounterValue("91316\n").value() == 91316);
  CHECK(ParseCounterValue("0").value() == 0);
  CHECK(ParseCounterValue("18446744073709551615").value() == 18446744073709551615ull);
  for (const char* bad : {"N/A", "", "-1", "0x10", "12 34", "18446744073709551616", "1e5"}) {
    CHECK_FALSE(ParseCounterValue(bad).ok());
  }
}

TEST_CASE("netdev MTU text parses, garbage is an error") {
  CHECK(ParseNetdevMtu("9000\n").value() == 9000);
  for (const char* bad : {"jumbo", "", "0", "-1500", "99999999"}) {
    CHECK_FALSE(ParseNetdevMtu(bad).ok());
  }
}

TEST_CASE("printable rendering escapes control bytes and cuts long values") {
  CHECK(PrintableValue(std::string("a\x01\n", 3)) == "a\\x01\\n");
  CHECK(PrintableValue(std::string(100, 'x')).size() == 67);
}
