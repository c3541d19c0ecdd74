#pragma once
// A client for NCCL's RAS service (NCCL >= 2.24; src/ras/client.cc is the reference): TCP to
// NCCL_RAS_ADDR (parsed by nccl/ras.h; default 127.0.0.1 and nccl::kRasPort), "CLIENT PROTOCOL 2\n"
// -> "SERVER PROTOCOL N\n", optionally "SET FORMAT json\n" -> "OK\n", then "VERBOSE STATUS\n" and
// the report until the server closes the connection. One connection per query. Every step is
// bounded by one deadline, so a wedged job cannot hang the capture. RAS may report OK during a real
// hang (it only sees NCCL's own state): the reply is evidence, never a verdict.
#include <chrono>
#include <string>
#include <string_view>

#include "common/result.h"
#include "nccl/ras.h"

namespace sl::hang {

/// Where to connect: NCCL's one model of NCCL_RAS_ADDR (nccl/ras.h).
using nccl::ParseRasAddress;
using nccl::RasAddress;

struct RasReply {
  std::string server_protocol;  ///< "2" from "SERVER PROTOCOL 2"
  std::string body;             ///< the report as received
};

/// Runs one VERBOSE STATUS query; `json` sends "SET FORMAT json" first. Errors name the address
/// and the step (connect, handshake, format, read) and say that RAS needs NCCL >= 2.24 with
/// NCCL_RAS_ENABLE not 0.
Result<RasReply> QueryRasStatus(const RasAddress& addr, bool json,
                                std::chrono::milliseconds deadline);

}  // namespace sl::hang
