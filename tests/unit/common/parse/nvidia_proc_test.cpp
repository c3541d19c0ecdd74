// Parser of /proc/driver/nvidia files (common/parse/nvidia_proc.h): literal kernel text in, values
// out; garbage never crashes.
#include "common/parse/nvidia_proc.h"

#include <catch2/catch.hpp>
#include <string>

using namespace sl;

TEST_CASE("NVIDIA version: open and proprietary modules") {
  auto open = ParseNvidiaVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
      "(dvs-builder@U22-I3-B10-02-5)  Tue Jul  1 18:40:31 UTC 2025\nGCC version:  gcc 12\n");
  REQUIRE(open.ok());
  CHECK(open->version == "580.159.04");
  CHECK(open->major == 580);
  CHECK(open->open_kernel);
  auto prop = ParseNvidiaVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC "
      "2024\n");
  REQUIRE(prop.ok());
  CHECK(prop->version == "535.183.01");
  CHECK_FALSE(prop->open_kernel);
  CHECK_FALSE(ParseNvidiaVersion("NVRM version: \n").ok());
  CHECK_FALSE(ParseNvidiaVersion("").ok());
  CHECK(ParseGpuInformationModel("Model: \t\t NVIDIA H200\nIRQ: 0\n") == "NVIDIA H200");
  CHECK(ParseGpuInformationModel("garbage") == "");
}
