// Parser of /proc/net/{fib_trie,route,if_inet6} (common/parse/net_proc.h): literal kernel text in,
// values out; garbage never crashes.
#include "common/parse/net_proc.h"

#include <catch2/catch.hpp>
#include <string>

using namespace sl;

TEST_CASE("IPv4 local addresses from fib_trie map to interfaces through route") {
  // Captured from a live node (/proc/net/fib_trie, /proc/net/route).
  const char* trie =
      "Main:\n"
      "  +-- 0.0.0.0/0 3 0 5\n"
      "     |-- 0.0.0.0\n"
      "        /0 universe UNICAST\n"
      "     +-- 127.0.0.0/8 2 0 2\n"
      "        +-- 127.0.0.0/31 1 0 0\n"
      "           |-- 127.0.0.0\n"
      "              /8 host LOCAL\n"
      "           |-- 127.0.0.1\n"
      "              /32 host LOCAL\n"
      "     +-- 192.0.2.0/24 2 0 2\n"
      "           |-- 192.0.2.0\n"
      "              /24 link UNICAST\n"
      "           |-- 192.0.2.2\n"
      "              /32 host LOCAL\n"
      "        |-- 192.0.2.255\n"
      "           /32 link BROADCAST\n"
      "Local:\n"
      "  +-- 0.0.0.0/0 3 0 5\n"
      "           |-- 192.0.2.2\n"
      "              /32 host LOCAL\n";
  auto local = ParseFibTrieLocal(trie);
  REQUIRE(local.size() == 2);
  CHECK(local[0] == "127.0.0.1");
  CHECK(local[1] == "192.0.2.2");
  auto routes = ParseProcRoute(
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
      "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
  REQUIRE(routes.ok());
  CHECK(InterfaceForIpv4(*routes, "192.0.2.2") == "eth0");
  CHECK(InterfaceForIpv4(*routes, "127.0.0.1") == "lo");
  CHECK(InterfaceForIpv4(*routes, "10.9.9.9") == "");  // only the default route matches
  CHECK_FALSE(ParseProcRoute("eth0 zz\n").ok());
  CHECK(ParseFibTrieLocal("garbage\n|-- not.an.ip\n   /32 host LOCAL\n").empty());
  auto v6 = ParseIfInet6(
      "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n"
      "00000000000000000000000000000001 01 80 10 80       lo\nbroken line\n");
  REQUIRE(v6.size() == 2);
  CHECK(v6[0].iface == "eth0");
  CHECK(v6[0].address == "fe80::fc:ff:fe00:1");
  CHECK(v6[1].address == "::1");
}
