#include "warmup/topology.h"

namespace sl::warmup {

std::string Topology::NodeLabel(int node) const {
  std::string label = "node " + std::to_string(node);
  if (node >= 0 && static_cast<std::size_t>(node) < hosts.size())
    label += " (" + hosts[static_cast<std::size_t>(node)] + ")";
  return label;
}

}  // namespace sl::warmup
