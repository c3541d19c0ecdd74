#pragma once
// NCCL's RAS service (NCCL >= 2.24, src/ras/): where its client socket listens. The one parser of
// NCCL_RAS_ADDR: the registry validates a job's value with it and the hang capture connects
// with it.
#include <string>
#include <string_view>

#include "common/environment.h"
#include "common/result.h"

namespace sl::nccl {

/// The port NCCL's RAS listens on when NCCL_RAS_ADDR is unset (NCCL_RAS_CLIENT_PORT).
inline constexpr int kRasPort = 28028;
/// The host it listens on then ("localhost" in NCCL; the address it resolves to).
inline constexpr std::string_view kRasHost = "127.0.0.1";

struct RasAddress {
  std::string host{kRasHost};
  int port = kRasPort;
};

/// Which parts the text named (the others are the defaults).
struct RasNamed {
  bool host = false;
  bool port = false;
};

/// Parses NCCL_RAS_ADDR: "host:port", "[v6]:port", "host", ":port"; "" gives the default. Parts
/// left out keep the defaults (`named` says which were given). Errors name the value and the
/// rule broken: '[' without ']', a port that is not in 1..65535.
Result<RasAddress> ParseRasAddress(std::string_view text, RasNamed* named = nullptr);
/// The RAS address of a job's environment (NCCL_RAS_ADDR, else the default).
Result<RasAddress> RasAddressFrom(const Environment& env);
/// "127.0.0.1:28028" ("[::1]:28028" for an IPv6 host).
std::string FormatRasAddress(std::string_view host, int port);

}  // namespace sl::nccl
