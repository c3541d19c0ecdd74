#pragma once
// The store of the scale simulator (bench/scale.sh): a KvStore over TCP that needs no libtorch,
// so that hundreds of simulated nodes fit on one host. Shaped like c10d's TCPStore of torch 1.13
// (one server thread in node 0's rank-0 process, poll()ing every client socket; one connection
// per rank; set / get / check / add), so that its cost on node 0 grows the way the real one's
// does. The wire format is our own (length-prefixed), not c10d's: a real rank cannot talk to it.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "warmup/kv_store.h"

namespace sl::warmup::sim {

/// The server: a thread that owns the listening socket and every accepted connection.
class StoreServer {
 public:
  virtual ~StoreServer() = default;
  /// Connections accepted so far, and open at the most at one time.
  virtual std::int64_t Accepted() const = 0;
  virtual std::int64_t PeakOpen() const = 0;
};

/// Listens on host:port (SO_REUSEADDR, backlog 4096) and serves until destroyed. Errors name the
/// address and the errno text.
Result<std::unique_ptr<StoreServer>> StartServer(const std::string& host, int port);

/// A client connection; retries the connect (the server may start later) until `timeout`, and
/// bounds every request by it. Errors name the address.
Result<std::unique_ptr<KvStore>> Connect(const std::string& host, int port,
                                         std::chrono::milliseconds timeout);

}  // namespace sl::warmup::sim
