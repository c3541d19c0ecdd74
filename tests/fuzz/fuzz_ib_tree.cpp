// libFuzzer target: a whole RoCE/IB port built from fuzz input, through GatherNodeFacts, NCCL's
// GID selection (with fuzzed NCCL_IB_* variables) and the four ib.* checks. The input is split at
// '|' into the contents of the port's files, in the order of kFiles; missing parts are absent
// files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "nccl/gid.h"
#include "preflight/check.h"

namespace {

constexpr const char* kPort = "/sys/class/infiniband/mlx5_0/ports/1/";
constexpr const char* kFiles[] = {
    "state",
    "phys_state",
    "rate",
    "link_layer",
    "gids/0",
    "gids/1",
    "gid_attrs/types/1",
    "gids/2",
    "gid_attrs/types/2",
    "gid_attrs/ndevs/2",
    "gids/3",
    "gid_attrs/types/3",
    "gid_attrs/ndevs/3",
    "counters/symbol_error",
    "hw_counters/out_of_sequence",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() < 20) {
    auto bar = in.find('|');
    parts.push_back(in.substr(0, bar));
    if (bar == std::string_view::npos) break;
    in.remove_prefix(bar + 1);
  }
  sl::MemFileReader fs;
  std::size_t i = 0;
  for (const char* f : kFiles) {
    if (i >= parts.size()) break;
    fs.AddFile(std::string(kPort) + f, std::string(parts[i++]));
  }
  if (i < parts.size()) fs.AddFile("/sys/class/net/ens3np0/mtu", std::string(parts[i++]));
  sl::Environment env;
  const char* vars[] = {"NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_RANGE", "NCCL_IB_ADDR_FAMILY",
                        "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_HCA"};
  for (const char* v : vars) {
    if (i < parts.size()) env[v] = std::string(parts[i++]);
  }
  sl::NodeFacts facts = sl::GatherNodeFacts(fs);
  for (const auto& p : facts.ib_ports) {
    (void)sl::nccl::SelectGidIndex(p, env);
    (void)sl::nccl::SimulateGidIndex(p, env);
  }
  sl::Thresholds th;
  sl::preflight::CheckContext ctx{facts, env, th, true};
  // The checks are reached through the registry, as the runner reaches them.
  for (const char* id : {"ib.port.state", "ib.port.errors", "ib.mtu", "ib.gid"}) {
    (void)sl::preflight::FindCheck(id)->run(ctx);
  }
  return 0;
}
