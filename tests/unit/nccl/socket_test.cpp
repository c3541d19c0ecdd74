// nccl/socket.h: NCCL's socket-interface choice and the non-routable names, on literal facts.
#include "nccl/socket.h"

#include <catch2/catch.hpp>

using namespace sl;
using namespace sl::nccl;

namespace {

NetInterface If(std::string name, std::vector<std::string> addrs, std::string state = "up") {
  NetInterface i;
  i.name = std::move(name);
  i.addresses = std::move(addrs);
  i.operstate = std::move(state);
  return i;
}

}  // namespace

TEST_CASE("NCCL's default order takes ib* first, then anything but docker* and lo") {
  std::vector<NetInterface> ifs = {If("lo", {"127.0.0.1"}), If("docker0", {"172.17.0.1"}),
                                   If("eno1", {"10.0.0.5"}), If("ib0", {"192.168.1.5"})};
  auto c = ChooseSocketInterfaces(ifs, {});
  REQUIRE(c.outcome == SocketChoice::Outcome::kChosen);
  CHECK(c.chosen.front()->name == "ib0");
  ifs.pop_back();
  c = ChooseSocketInterfaces(ifs, {});
  CHECK(c.chosen.front()->name == "eno1");
  CHECK(c.how.find("any but docker*/lo") != std::string::npos);
  // chosen points into the interfaces passed: they must outlive the choice.
  const std::vector<NetInterface> bridge = {If("lo", {"127.0.0.1"}), If("docker0", {"172.17.0.1"})};
  c = ChooseSocketInterfaces(bridge, {});
  CHECK(c.chosen.front()->name == "docker0");
  const std::vector<NetInterface> loopback = {If("lo", {"127.0.0.1"})};
  c = ChooseSocketInterfaces(loopback, {});
  CHECK(c.chosen.front()->name == "lo");
}

TEST_CASE("IPv4-addressed interfaces come before IPv6-only ones, link-local IPv6 never counts") {
  std::vector<NetInterface> ifs = {If("eth6", {"2001:db8::5"}), If("eth4", {"10.0.0.4"}),
                                   If("eth9", {"fe80::1"})};
  auto c = ChooseSocketInterfaces(ifs, {});
  REQUIRE(c.chosen.size() == 2);
  CHECK(c.chosen[0]->name == "eth4");
  CHECK(c.chosen[1]->name == "eth6");
  auto v6 = ChooseSocketInterfaces(ifs, {{"NCCL_SOCKET_FAMILY", "AF_INET6"}});
  REQUIRE(v6.chosen.size() == 1);
  CHECK(v6.chosen[0]->name == "eth6");
  CHECK(v6.family == 6);
}

TEST_CASE("NCCL_SOCKET_IFNAME filters, and says when it is invalid or matches nothing usable") {
  std::vector<NetInterface> ifs = {If("eno1", {"10.0.0.5"}), If("eno2", {})};
  auto c = ChooseSocketInterfaces(ifs, {{"NCCL_SOCKET_IFNAME", "=eno1"}});
  REQUIRE(c.outcome == SocketChoice::Outcome::kChosen);
  CHECK(c.how == "NCCL_SOCKET_IFNAME==eno1");
  auto none = ChooseSocketInterfaces(ifs, {{"NCCL_SOCKET_IFNAME", "=eno2"}});
  CHECK(none.outcome == SocketChoice::Outcome::kMatchesNone);
  REQUIRE(none.named.size() == 1);
  CHECK(none.named[0]->name == "eno2");
  auto bad = ChooseSocketInterfaces(ifs, {{"NCCL_SOCKET_IFNAME", "eno1,,eno2"}});
  CHECK(bad.outcome == SocketChoice::Outcome::kInvalidIfname);
  CHECK_FALSE(bad.error.empty());
  auto blank = ChooseSocketInterfaces(ifs, {{"NCCL_SOCKET_IFNAME", "  "}});
  CHECK_FALSE(blank.filtered);
  CHECK(blank.outcome == SocketChoice::Outcome::kChosen);
}

TEST_CASE("no interface with an address is kNoAddress") {
  const std::vector<NetInterface> ifs = {If("eno1", {})};
  auto c = ChooseSocketInterfaces(ifs, {});
  CHECK(c.outcome == SocketChoice::Outcome::kNoAddress);
}

TEST_CASE("the picker never pins a bridge, the diagnosis also distrusts tunnels and overlays") {
  NodeFacts f;
  f.interfaces = {If("docker0", {"172.17.0.1"}), If("veth1", {"169.254.0.2"}),
                  If("ens3", {"10.1.0.3"})};
  REQUIRE(PickSocketInterface(f) != nullptr);
  CHECK(PickSocketInterface(f)->name == "ens3");
  CHECK(IsSkippedInterface("virbr0"));
  CHECK(IsSkippedInterface("lo"));
  CHECK_FALSE(IsSkippedInterface("tun0"));
  CHECK(IsNonRoutableInterface("tun0", ""));
  CHECK(IsNonRoutableInterface("Docker0", ""));
  CHECK(IsNonRoutableInterface("lo:1", ""));
  CHECK_FALSE(IsNonRoutableInterface("long0", "10.0.0.1"));
  CHECK(IsNonRoutableInterface("eth0", "169.254.3.4"));
  CHECK_FALSE(IsNonRoutableInterface("eth0", "10.0.0.1"));
}
