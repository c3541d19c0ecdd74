#include "common/strings.h"

#include <catch2/catch.hpp>

TEST_CASE("integers parse in decimal and hex and reject garbage with the name") {
  CHECK(sl::ParseInt(" 42\n").value() == 42);
  CHECK(sl::ParseInt("-7").value() == -7);
  CHECK(sl::ParseInt("0x10de").value() == 0x10de);
  auto bad = sl::ParseInt("4x2", "/sys/x/mtu");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().where == "/sys/x/mtu");
  CHECK(bad.error().message.find("4x2") != std::string::npos);
  CHECK_FALSE(sl::ParseUint("-1").ok());
  CHECK_FALSE(sl::ParseInt("").ok());
}

TEST_CASE("human byte sizes use binary units") {
  CHECK(sl::HumanBytes(64u << 20) == "64 MiB");
  CHECK(sl::HumanBytes(65536) == "64 KiB");
  CHECK(sl::HumanBytes(1536) == "1.5 KiB");
  CHECK(sl::HumanBytes(17) == "17 B");
}

TEST_CASE("closest match suggests near names only") {
  std::vector<std::string> names = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_DEBUG"};
  CHECK(sl::ClosestMatch("NCCL_IB_HAC", names) == "NCCL_IB_HCA");
  CHECK(sl::ClosestMatch("NCCL_SOCKET_IFNAM", names) == "NCCL_SOCKET_IFNAME");
  CHECK(sl::ClosestMatch("TOTALLY_DIFFERENT", names).empty());
}

TEST_CASE("split and lines keep order and drop carriage returns") {
  CHECK(sl::Split("a,,b", ',') == std::vector<std::string>{"a", "b"});
  CHECK(sl::Split("a,,b", ',', false) == std::vector<std::string>{"a", "", "b"});
  CHECK(sl::SplitLines("x\r\ny\n") == std::vector<std::string>{"x", "y"});
}

TEST_CASE("PathParent and PathLeaf ignore trailing slashes and keep the root") {
  CHECK(sl::PathParent("/a/b/c") == "/a/b");
  CHECK(sl::PathParent("/a/b/") == "/a");
  CHECK(sl::PathParent("/a") == "/");
  CHECK(sl::PathParent("a") == ".");
  CHECK(sl::PathParent("/") == "/");
  CHECK(sl::PathLeaf("/a/b/c") == "c");
  CHECK(sl::PathLeaf("/a/b//") == "b");
  CHECK(sl::PathLeaf("node-3") == "node-3");
  CHECK(sl::PathLeaf("/") == "/");
  // The run directory layout the launcher walks: <root>/safe-launch-runs/<job>/<node>.
  CHECK(sl::PathLeaf(sl::PathParent("/scratch/safe-launch-runs/4242/node-1")) == "4242");
}
