#include "nccl/ras.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace sl::nccl {

Result<RasAddress> ParseRasAddress(std::string_view text, RasNamed* named) {
  RasAddress a;
  RasNamed given;
  text = Trim(text);
  if (text.empty()) return a;
  std::string_view host = text, port;
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) {
      return MakeError(fmt::format("NCCL_RAS_ADDR '{}' has '[' without ']'", text), "NCCL_RAS_ADDR",
                       "use host:port or [ipv6]:port");
    }
    host = text.substr(1, close - 1);
    if (close + 1 < text.size() && text[close + 1] == ':') port = text.substr(close + 2);
  } else if (auto c = text.rfind(':'); c != std::string_view::npos) {
    host = text.substr(0, c);
    port = text.substr(c + 1);
  }
  if (!host.empty()) {
    a.host = std::string(host);
    given.host = true;
  }
  if (!port.empty()) {
    auto p = ParseInt(port, "NCCL_RAS_ADDR port");
    if (!p.ok() || *p <= 0 || *p > 65535) {
      return MakeError(fmt::format("NCCL_RAS_ADDR '{}' has no valid port", text), "NCCL_RAS_ADDR",
                       "use host:port with a port in 1..65535");
    }
    a.port = static_cast<int>(*p);
    given.port = true;
  }
  if (named != nullptr) *named = given;
  return a;
}

Result<RasAddress> RasAddressFrom(const Environment& env) {
  return ParseRasAddress(Lookup(env, "NCCL_RAS_ADDR").value_or(""));
}

std::string FormatRasAddress(std::string_view host, int port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

}  // namespace sl::nccl
