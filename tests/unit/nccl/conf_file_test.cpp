// NCCL's configuration files as src/misc/param.cc (setEnvFile, initEnvFunc) reads them.
#include "nccl/conf_file.h"

#include <catch2/catch.hpp>

#include "common/file_reader.h"

using namespace sl;
using namespace sl::nccl;

TEST_CASE("conf lines parse as NCCL's setEnvFile reads them") {
  std::vector<Error> problems;
  auto v = ParseConfFile("# comment\n\nNCCL_DEBUG=INFO\nno equals sign\nNCCL_X=a=b\nNCCL_Y=\n",
                         "/etc/nccl.conf", &problems);
  REQUIRE(v.size() == 3);
  CHECK(v[0].name == "NCCL_DEBUG");
  CHECK(v[0].value == "INFO");
  CHECK(v[0].origin == "/etc/nccl.conf:3");
  CHECK(v[1].value == "a=b");  // the name ends at the first '='
  CHECK(v[2].value.empty());
  CHECK(problems.empty());
}

TEST_CASE("a conf line NCCL misreads is reported with file and line") {
  std::vector<Error> problems;
  auto v =
      ParseConfFile("NCCL_DEBUG = INFO\nNCCL_IB_HCA=mlx5_0\r\n", "/home/u/.nccl.conf", &problems);
  REQUIRE(v.size() == 2);
  CHECK(v[0].name == "NCCL_DEBUG ");  // NCCL keeps the space: nobody reads that variable
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].where == "/home/u/.nccl.conf:1");
  CHECK(problems[1].where == "/home/u/.nccl.conf:2");
  CHECK_THAT(problems[1].message, Catch::Contains("no effect"));
}

TEST_CASE("NCCL_CONF_FILE replaces ~/.nccl.conf from NCCL 2.23 on, /etc/nccl.conf comes last") {
  Environment env{{"HOME", "/home/u"}, {"NCCL_CONF_FILE", "/site/nccl.conf"}};
  CHECK(ConfFilePaths(env, Version{2, 28, 9}) ==
        std::vector<std::string>{"/site/nccl.conf", "/etc/nccl.conf"});
  CHECK(ConfFilePaths(env, std::nullopt) ==
        std::vector<std::string>{"/site/nccl.conf", "/etc/nccl.conf"});
  CHECK(ConfFilePaths(env, Version{2, 21, 5}) ==
        std::vector<std::string>{"/home/u/.nccl.conf", "/etc/nccl.conf"});
  CHECK(ConfFilePaths({{"HOME", "/home/u"}}, Version{2, 28, 9}) ==
        std::vector<std::string>{"/home/u/.nccl.conf", "/etc/nccl.conf"});
}

TEST_CASE("the first file wins per name and the environment wins over all files") {
  MemFileReader fs;
  fs.AddFile("/home/u/.nccl.conf", "NCCL_IB_HCA=mlx5_1\n");
  fs.AddFile("/etc/nccl.conf", "NCCL_IB_HCA=mlx5_0\nNCCL_IB_TIMEOUT=22\n");
  auto conf = ReadConfFiles(fs, {{"HOME", "/home/u"}}, Version{2, 28, 9});
  REQUIRE(conf.values.size() == 2);
  CHECK(conf.values[0].value == "mlx5_1");
  CHECK(conf.values[0].origin == "/home/u/.nccl.conf:1");
  CHECK(conf.read.size() == 2);
  Environment eff = EffectiveEnvironment(conf, {{"NCCL_IB_TIMEOUT", "20"}});
  CHECK(eff.at("NCCL_IB_HCA") == "mlx5_1");
  CHECK(eff.at("NCCL_IB_TIMEOUT") == "20");
}

TEST_CASE("missing conf files are skipped as NCCL skips them") {
  MemFileReader fs;
  auto conf = ReadConfFiles(fs, {{"HOME", "/home/u"}}, std::nullopt);
  CHECK(conf.values.empty());
  CHECK(conf.read.empty());
  CHECK(conf.problems.empty());
}
