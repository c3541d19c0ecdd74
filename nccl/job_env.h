#pragma once
// What a job's NCCL and torch variables say, read as NCCL and torch read them: the one place
// other modules ask instead of looking a name up themselves (scripts/check-nccl-knowledge.py).
#include <optional>
#include <string>

#include "common/environment.h"

namespace sl::nccl {

/// NCCL_DEBUG_FILE when set and not empty (NCCL ignores an empty value).
std::optional<std::string> DebugFile(const Environment& env);

/// The NCCL_DMABUF_ENABLE text when it turns DMA-BUF off ("0"); nullopt when DMA-BUF stays on.
std::optional<std::string> DmabufDisabledBy(const Environment& env);

/// Where torch writes rank N's Flight Recorder dump: <prefix>N. TORCH_FR_DUMP_TEMP_FILE (torch
/// >= 2.9), else its old name TORCH_NCCL_DEBUG_INFO_TEMP_FILE, else torch's old default
/// "/tmp/nccl_trace_rank_".
std::string FlightRecorderDumpPrefix(const Environment& env);
/// The prefix of rank N's dump pipe <prefix>N.pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE); "" = none.
std::string FlightRecorderPipePrefix(const Environment& env);

}  // namespace sl::nccl
