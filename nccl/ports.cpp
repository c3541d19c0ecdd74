#include "nccl/ports.h"

#include "common/strings.h"
#include "nccl/param.h"

namespace sl::nccl {

PortSelection::PortSelection(const Environment& env) {
  // NCCL_IB_DISABLE is an integer parameter: "1" (or "0x1", "1x") disables, "0"/"" do not.
  disabled_ = IntParam(env, "NCCL_IB_DISABLE", 0) != 0;
  if (auto h = Lookup(env, "NCCL_IB_HCA"); h && !Trim(*h).empty()) {
    auto f = ParseIbHca(*h);
    if (f.ok()) {
      has_filter_ = true;
      spec_ = *h;
      filter_ = std::move(f).value();
    }
  }
}

bool PortSelection::Uses(const IbPort& port) const {
  if (disabled_) return false;
  return !has_filter_ || FilterSelectsIbPort(filter_, port.device, port.port);
}

std::string PortSelection::WhyNot(const IbPort& port) const {
  if (disabled_) return "NCCL_IB_DISABLE is set: NCCL uses no IB/RoCE port";
  if (Uses(port)) return {};
  return (filter_.exclude ? "excluded by NCCL_IB_HCA=" : "not listed in NCCL_IB_HCA=") + spec_;
}

std::string PortSelection::Describe() const {
  return has_filter_ ? "selected by NCCL_IB_HCA=" + spec_
                     : "NCCL_IB_HCA is unset, so NCCL uses every port";
}

std::string DescribePort(const IbPort& p) {
  std::string s = p.Name() + " (" + (p.state.empty() ? "?" : p.state);
  if (!p.rate_text.empty()) s += ", " + p.rate_text;
  if (!p.link_layer.empty()) s += ", " + std::string(p.IsRoce() ? "RoCE" : p.link_layer);
  return s + ")";
}

}  // namespace sl::nccl
