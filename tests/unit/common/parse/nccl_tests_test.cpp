// nccl-tests output parser (common/parse/nccl_tests.h) on real all_reduce_perf outputs
// (tests/fixtures/nccl_tests: tables published in eugenesiow/LLM-Insights), one written in
// nccl-tests' full layout, and truncated or garbled copies of them.
#include "common/parse/nccl_tests.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/test_paths.h"

using namespace sl;

namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(SL_FIXTURES_DIR + "/nccl_tests/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kNvlink = "all_reduce_perf_2gpu_nvlink_good_llm-insights.txt";
const char* kNvswitch = "all_reduce_perf_4gpu_nvswitch_a100_good_llm-insights.txt";
const char* kHeader = "constructed_2node_16gpu_header.txt";

}  // namespace

TEST_CASE("a real all_reduce_perf table reads every size, both halves and the summary") {
  auto out = ParseNcclTests(Fixture(kNvswitch));
  REQUIRE(out.ok());
  CHECK(out->program == "all_reduce_perf");
  REQUIRE(out->rows.size() == 4);
  const auto& first = out->rows[0];
  CHECK(first.bytes == 1073741824);
  CHECK(first.count == 268435456);
  CHECK(first.type == "float");
  CHECK(first.redop == "sum");
  CHECK(first.root == -1);
  CHECK(first.out_of_place.time_us == Approx(7163.5));
  CHECK(first.out_of_place.algbw_gbps == Approx(149.89));
  CHECK(first.out_of_place.busbw_gbps == Approx(224.84));
  CHECK(first.out_of_place.wrong == 0);
  CHECK(first.in_place.busbw_gbps == Approx(224.89));
  // The 4 GiB in-place dip (164.13) does not hide the out-of-place figure.
  CHECK(out->rows[2].in_place.busbw_gbps == Approx(164.13));
  CHECK(*out->rows[2].BestBusbw() == Approx(232.81));
  CHECK(out->rows[3].bytes == 8589934592ull);
  CHECK(out->avg_busbw_gbps == Approx(222.066));
  CHECK(out->out_of_bounds == 0);
  CHECK(out->Complete());
  CHECK(out->WrongTotal() == 0);
  CHECK(out->problems.empty());
}

TEST_CASE("every real output in the corpus parses without a problem") {
  for (const char* name :
       {"all_reduce_perf_2gpu_node_p2p_disabled_slow_llm-insights.txt", kNvlink, kNvswitch,
        "all_reduce_perf_4gpu_sys_p2p_disabled_slow_llm-insights.txt"}) {
    INFO(name);
    auto out = ParseNcclTests(Fixture(name));
    REQUIRE(out.ok());
    CHECK(out->rows.size() == 4);
    CHECK(out->problems.empty());
    CHECK(out->Complete());
  }
  CHECK(ParseNcclTests(Fixture(kNvlink))->avg_busbw_gbps == Approx(47.4509));
}

TEST_CASE("the header gives threads, GPUs, sizes, iterations and one entry per rank") {
  auto out = ParseNcclTests(Fixture(kHeader));
  REQUIRE(out.ok());
  CHECK(out->version == "2.17.1");
  CHECK(out->program == "all_reduce_perf");
  CHECK(out->nthread == 1);
  CHECK(out->ngpus == 1);
  CHECK(out->min_bytes == 8388608);
  CHECK(out->max_bytes == 536870912);
  CHECK(out->warmup_iters == 5);
  CHECK(out->iters == 20);
  CHECK(out->validation == 1);
  REQUIRE(out->ranks.size() == 4);
  CHECK(out->ranks[2].rank == 2);
  CHECK(out->ranks[2].group == 0);
  CHECK(out->ranks[2].pid == 41203);
  CHECK(out->ranks[2].host == "gpu-02");
  CHECK(out->ranks[2].device == 0);
  CHECK(out->ranks[2].bus_id == "0000:18:00");
  CHECK(out->ranks[2].device_name == "NVIDIA H100 80GB HBM3");
  REQUIRE(out->rows.size() == 7);
  CHECK(out->rows[2].in_place.present);
  CHECK_FALSE(out->rows[2].in_place.wrong.has_value());  // N/A
  CHECK(out->rows[2].in_place.busbw_gbps == Approx(39.42));
  CHECK(out->problems.empty());
}

TEST_CASE("an older rank line without Group and a launcher's line prefixes still read") {
  std::string text =
      "0: #   Rank  0 Pid  12345 on node01 device  0 [0x07] Tesla V100-SXM2-32GB\n"
      "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   "
      "busbw #wrong     time   algbw   busbw #wrong\n"
      "[1,0]<stdout>:     8388608       2097152     float     sum      -1    100.0   83.89  "
      " 83.89      0    101.0   83.06   83.06      0\r\n";
  auto out = ParseNcclTests(text);
  REQUIRE(out.ok());
  REQUIRE(out->ranks.size() == 1);
  CHECK(out->ranks[0].group == -1);
  CHECK(out->ranks[0].host == "node01");
  CHECK(out->ranks[0].bus_id == "0x07");
  REQUIRE(out->rows.size() == 1);
  CHECK(out->rows[0].in_place.wrong == 0);
  CHECK_FALSE(out->Complete());
}

TEST_CASE("the older layout without redop/root and with an error column reads by column name") {
  std::string text =
      "#       size         count    type     time   algbw   busbw  error     time   algbw   "
      "busbw  error\n"
      "     1048576        262144   float    50.12   20.92   31.38  0e+00    49.90   21.01   "
      "31.52  0e+00\n";
  auto out = ParseNcclTests(text);
  REQUIRE(out.ok());
  REQUIRE(out->rows.size() == 1);
  CHECK(out->rows[0].redop.empty());
  CHECK(out->rows[0].type == "float");
  CHECK(out->rows[0].out_of_place.busbw_gbps == Approx(31.38));
  CHECK(out->rows[0].in_place.max_error == 0.0);
  CHECK_FALSE(out->rows[0].out_of_place.wrong.has_value());
}

TEST_CASE("#wrong and out-of-bounds values add up as data corruption") {
  std::string text = Fixture(kHeader);
  auto pos = text.find("   4700.1   28.56   42.83      0");
  REQUIRE(pos != std::string::npos);
  text.replace(pos, 32, "   4700.1   28.56   42.83     17");
  auto out = ParseNcclTests(text);
  REQUIRE(out.ok());
  CHECK(out->rows[4].out_of_place.wrong == 17);
  CHECK(out->rows[4].Wrong() == 17);
  CHECK(out->WrongTotal() == 17);
  auto oob = ParseNcclTests(
      "#  size count type redop root time algbw busbw #wrong\n"
      "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth : 1.5 \n");
  REQUIRE(oob.ok());
  CHECK(oob->out_of_bounds == 3);
  CHECK(oob->WrongTotal() == 3);
}

TEST_CASE("a truncated output keeps its complete rows and names the cut one") {
  std::string text = Fixture(kNvswitch);
  auto cut = text.find("  4294967296");
  REQUIRE(cut != std::string::npos);
  text.resize(cut + 40);  // halfway through the 4 GiB row
  auto out = ParseNcclTests(text);
  REQUIRE(out.ok());
  CHECK(out->rows.size() == 2);
  REQUIRE(out->problems.size() == 1);
  CHECK(out->problems[0].find("line 7:") == 0);
  CHECK(out->problems[0].find("truncated") != std::string::npos);
  CHECK_FALSE(out->Complete());
}

TEST_CASE("garbled figures are named by line, never read as numbers") {
  std::string text = Fixture(kNvlink);
  auto pos = text.find("47.46");
  REQUIRE(pos != std::string::npos);
  text.replace(pos, 5, "4x.46");
  auto nan = text.find("47.47");
  text.replace(nan, 5, "nan  ");
  auto out = ParseNcclTests(text);
  REQUIRE(out.ok());
  CHECK(out->rows.size() == 2);
  REQUIRE(out->problems.size() == 2);
  CHECK(out->problems[0].find("line 6: algbw '4x.46'") == 0);
  CHECK(out->problems[1].find("line 7: algbw 'nan'") == 0);
}

TEST_CASE("text without a table is an error, a failed run's NCCL error is kept") {
  CHECK_FALSE(ParseNcclTests("").ok());
  CHECK_FALSE(ParseNcclTests("hello\nworld\n").ok());
  auto failed = ParseNcclTests(
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
      "gpu-01: Test NCCL failure common.cu:1005 'unhandled system error'\n");
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message.find("unhandled system error") != std::string::npos);
}

TEST_CASE("other *_perf programs read the same way") {
  std::string text =
      "./build/all_gather_perf -b 8 -e 128M -f 2 -g 8\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "   134217728       4194304     float    none      -1   1234.5  108.72   95.13      0   "
      "1230.1  109.11   95.47      0\n"
      "# Avg bus bandwidth    : 95.3\n";
  auto out = ParseNcclTests(text);
  REQUIRE(out.ok());
  CHECK(out->program == "all_gather_perf");
  REQUIRE(out->rows.size() == 1);
  CHECK(out->rows[0].redop == "none");
  CHECK(out->rows[0].out_of_place.busbw_gbps == Approx(95.13));
}
