// libFuzzer target: the run root's reports (preflight.json, warmup.json, node/ib_counters.json)
// as arbitrary bytes -> facts -> joined claims. Reports come from other users' run roots: no
// exception, no crash, whatever the JSON holds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "diagnose/job_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace sl::diagnose;
  std::vector<NodeFact> facts = PreflightFacts(text, "preflight.json", "n1");
  int nnodes = 0;
  for (auto& f : WarmupFacts(text, "warmup.json", &nnodes)) facts.push_back(std::move(f));
  for (auto& f : CounterFacts(text, "ib_counters.json", "n2")) facts.push_back(std::move(f));
  (void)JoinFacts(facts, static_cast<std::size_t>(nnodes > 0 ? nnodes : 2));
  return 0;
}
