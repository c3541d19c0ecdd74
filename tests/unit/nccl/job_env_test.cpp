// nccl/job_env.h: a job's NCCL/torch variables read as NCCL and torch read them.
#include "nccl/job_env.h"

#include <catch2/catch.hpp>

using namespace sl;
using namespace sl::nccl;

TEST_CASE("NCCL_DEBUG_FILE counts only when set and not empty") {
  CHECK_FALSE(DebugFile({}).has_value());
  CHECK_FALSE(DebugFile({{"NCCL_DEBUG_FILE", ""}}).has_value());
  CHECK(DebugFile({{"NCCL_DEBUG_FILE", "/r/nccl.%h.%p.log"}}) == "/r/nccl.%h.%p.log");
}

TEST_CASE("NCCL_DMABUF_ENABLE=0 turns DMA-BUF off, anything else leaves it on") {
  CHECK(DmabufDisabledBy({{"NCCL_DMABUF_ENABLE", " 0"}}) == " 0");
  CHECK_FALSE(DmabufDisabledBy({{"NCCL_DMABUF_ENABLE", "1"}}).has_value());
  CHECK_FALSE(DmabufDisabledBy({}).has_value());
}

TEST_CASE("Flight Recorder dump prefix: the new name, then the old one, then torch's default") {
  CHECK(FlightRecorderDumpPrefix({}) == "/tmp/nccl_trace_rank_");
  CHECK(FlightRecorderDumpPrefix({{"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/old/fr_"}}) == "/old/fr_");
  CHECK(FlightRecorderDumpPrefix({{"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/old/fr_"},
                                  {"TORCH_FR_DUMP_TEMP_FILE", "/new/fr_"}}) == "/new/fr_");
  CHECK(FlightRecorderDumpPrefix({{"TORCH_FR_DUMP_TEMP_FILE", ""}}) == "/tmp/nccl_trace_rank_");
}

TEST_CASE("the Flight Recorder pipe prefix is empty without TORCH_NCCL_DEBUG_INFO_PIPE_FILE") {
  CHECK(FlightRecorderPipePrefix({}).empty());
  CHECK(FlightRecorderPipePrefix({{"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/r/frpipe_"}}) ==
        "/r/frpipe_");
}
