// Placeholder: GatherNodeFacts is implemented with the preflight checks (issue 2).
#include "common/node_facts.h"

#include "common/log.h"

namespace sl {

bool GidEntry::IsZero() const { return gid.find_first_not_of("0:") == std::string::npos; }
bool GidEntry::IsLinkLocal() const { return gid.rfind("fe80:0000:0000:0000", 0) == 0; }

NodeFacts GatherNodeFacts(const FileReader& fs) {
  NodeFacts facts;
  GatherHostFacts(fs, &facts);
  return facts;
}

std::optional<int> SelectNcclGidIndex(const IbPort& port, const Environment& env) {
  return std::nullopt;
}

}  // namespace sl
