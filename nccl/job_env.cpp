#include "nccl/job_env.h"

#include "common/strings.h"

namespace sl::nccl {
namespace {

// The first of `names` that is set and not empty; "" when none is.
std::string FirstSet(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (auto v = Lookup(env, n); v && !v->empty()) return *v;
  }
  return {};
}

}  // namespace

std::optional<std::string> DebugFile(const Environment& env) {
  auto f = Lookup(env, "NCCL_DEBUG_FILE");
  if (!f || f->empty()) return std::nullopt;
  return f;
}

std::optional<std::string> DmabufDisabledBy(const Environment& env) {
  auto v = Lookup(env, "NCCL_DMABUF_ENABLE");
  if (v && Trim(*v) == "0") return v;
  return std::nullopt;
}

std::string FlightRecorderDumpPrefix(const Environment& env) {
  std::string p = FirstSet(env, {"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"});
  return p.empty() ? "/tmp/nccl_trace_rank_" : p;
}

std::string FlightRecorderPipePrefix(const Environment& env) {
  return FirstSet(env, {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE"});
}

}  // namespace sl::nccl
