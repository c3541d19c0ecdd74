// Placeholder: the host part of NodeFacts is implemented with the OS/GPU checks (issue 2).
#include "common/log.h"
#include "common/node_facts.h"

namespace sl {

void GatherHostFacts(const FileReader& fs, NodeFacts* facts) { facts->hostname = log::HostName(); }

}  // namespace sl
