#include "nccl/registry.h"

#include <catch2/catch.hpp>

using namespace sl::nccl;

TEST_CASE("registry knows NCCL variables from NCCL's source, detailed and bulk") {
  REQUIRE(FindVariable("NCCL_IB_HCA") != nullptr);
  REQUIRE(FindVariable("NCCL_IB_HCA")->type == VarType::kIbHca);
  REQUIRE(FindVariable("NCCL_IB_GID_INDEX")->default_value == "-1");
  // A name only in the bulk list extracted from src/ is known but not validated.
  const VarSpec* bulk = FindVariable("NCCL_IB_SPLIT_DATA_ON_QPS");
  REQUIRE(bulk != nullptr);
  CHECK(bulk->type == VarType::kString);
  CHECK(FindVariable("NCCL_NOT_A_THING") == nullptr);
}

TEST_CASE("registry names are unique and sorted") {
  auto vars = Variables();
  for (std::size_t i = 1; i < vars.size(); ++i) CHECK(vars[i - 1].name < vars[i].name);
}

TEST_CASE("integers outside the range are rejected naming the variable and range") {
  auto st = ValidateValue(*FindVariable("NCCL_IB_TIMEOUT"), "40");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().where == "NCCL_IB_TIMEOUT=40");
  CHECK_THAT(st.error().message, Catch::Contains("1..31"));
  CHECK(ValidateValue(*FindVariable("NCCL_IB_TIMEOUT"), "22").ok());
  CHECK_FALSE(ValidateValue(*FindVariable("NCCL_IB_TIMEOUT"), "twenty").ok());
  CHECK_FALSE(ValidateValue(*FindVariable("TORCH_NCCL_ASYNC_ERROR_HANDLING"), "4").ok());
}

TEST_CASE("enums are matched case-insensitively and list the accepted values") {
  const VarSpec& dbg = *FindVariable("NCCL_DEBUG");
  CHECK(ValidateValue(dbg, "info").ok());
  auto st = ValidateValue(dbg, "VERBOSE");
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Catch::Contains("VERSION, WARN, INFO, ABORT, TRACE"));
}

TEST_CASE("NCCL_IB_HCA syntax is validated with the shared parser") {
  const VarSpec& hca = *FindVariable("NCCL_IB_HCA");
  CHECK(ValidateValue(hca, "=mlx5_0:1,mlx5_1:1").ok());
  CHECK(ValidateValue(hca, "^mlx5_3").ok());
  CHECK_FALSE(ValidateValue(hca, "mlx5_0:x").ok());
  CHECK_FALSE(ValidateValue(hca, "mlx5_0,,mlx5_1").ok());
}

TEST_CASE("NCCL_RAS_ADDR needs host:port with a valid port") {
  const VarSpec& ras = *FindVariable("NCCL_RAS_ADDR");
  CHECK(ValidateValue(ras, "127.0.0.1:28100").ok());
  CHECK_FALSE(ValidateValue(ras, "127.0.0.1").ok());
  CHECK_FALSE(ValidateValue(ras, "127.0.0.1:99999").ok());
}

TEST_CASE("misspelled names get a did-you-mean suggestion") {
  CHECK(SuggestVariable("NCCL_IB_HAC") == "NCCL_IB_HCA");
  CHECK(SuggestVariable("NCCL_SOCKET_IFNAM") == "NCCL_SOCKET_IFNAME");
  CHECK(SuggestVariable("TORCH_FR_BUFER_SIZE") == "TORCH_FR_BUFFER_SIZE");
  CHECK(SuggestVariable("QQQQQQQQQQQQQQQQQQQQQQ").empty());
}

TEST_CASE("Flight Recorder names follow the detected torch version") {
  Versions old_torch;
  old_torch.torch = Version{2, 5, 1};
  Versions new_torch;
  new_torch.torch = Version{2, 11, 0};
  Versions unknown;
  CHECK(NameFor("TORCH_FR_BUFFER_SIZE", old_torch) == "TORCH_NCCL_TRACE_BUFFER_SIZE");
  CHECK(NameFor("TORCH_FR_DUMP_TEMP_FILE", old_torch) == "TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
  CHECK(NameFor("TORCH_FR_BUFFER_SIZE", new_torch) == "TORCH_FR_BUFFER_SIZE");
  CHECK(NameFor("TORCH_FR_BUFFER_SIZE", unknown) == "TORCH_FR_BUFFER_SIZE");
  CHECK(NameFor("TORCH_NCCL_TRACE_BUFFER_SIZE", new_torch) == "TORCH_FR_BUFFER_SIZE");
  // torch before 2.2 read NCCL_ASYNC_ERROR_HANDLING.
  Versions ancient;
  ancient.torch = Version{1, 13, 0};
  CHECK(NameFor("TORCH_NCCL_ASYNC_ERROR_HANDLING", ancient) == "NCCL_ASYNC_ERROR_HANDLING");
  CHECK(NameFor("NCCL_IB_HCA", ancient) == "NCCL_IB_HCA");
}

TEST_CASE("version strings parse their numeric prefix") {
  CHECK(*ParseVersion("2.11.0+cu130") == Version{2, 11, 0});
  CHECK(*ParseVersion("1.13.0a0") == Version{1, 13, 0});
  CHECK(*ParseVersion("2.28") == Version{2, 28, 0});
  CHECK_FALSE(ParseVersion("banana").ok());
  CHECK_FALSE(ParseVersion("2").ok());
  CHECK(NcclVersionFromCode(22809) == Version{2, 28, 9});
  CHECK(NcclVersionFromCode(2708) == Version{2, 7, 8});
}

TEST_CASE("RAS exists only from NCCL 2.24") {
  const VarSpec& ras = *FindVariable("NCCL_RAS_ADDR");
  CHECK_FALSE(AppliesTo(ras, Version{2, 21, 5}));
  CHECK(AppliesTo(ras, Version{2, 28, 9}));
  CHECK(AppliesTo(ras, std::nullopt));
}

TEST_CASE("each variable has a scope across the nodes of a job") {
  CHECK(VariableScope("NCCL_IB_DISABLE") == Scope::kMustMatch);
  CHECK(VariableScope("NCCL_NET_PLUGIN") == Scope::kMustMatch);  // a bulk name
  CHECK(VariableScope("NCCL_DEBUG_FILE") == Scope::kPerHost);
  CHECK(VariableScope("NCCL_HOSTID") == Scope::kPerHost);
  CHECK(VariableScope("TORCH_COMPILE_DEBUG_DIR") == Scope::kPerHost);
  CHECK(VariableScope("NCCL_GRAPH_DUMP_FILE_RANK") == Scope::kPerHost);
  CHECK(VariableScope("NCCL_IB_TIMEOUT") == Scope::kJobWide);
  CHECK(VariableScope("NCCL_NOT_A_VARIABLE") == Scope::kJobWide);
}

TEST_CASE("an old name gets the value its torch understands") {
  Versions old_torch;
  old_torch.torch = Version{2, 1, 0};
  std::string why;
  CHECK(ValueForOldName("NCCL_ASYNC_ERROR_HANDLING", "3", old_torch, &why) == "1");
  CHECK(why.find("torch 2.1.0 has no mode 3") != std::string::npos);
  CHECK_FALSE(ValueForOldName("NCCL_ASYNC_ERROR_HANDLING", "1", old_torch, &why).has_value());
  CHECK_FALSE(ValueForOldName("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3", old_torch, &why));
}
