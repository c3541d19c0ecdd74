#pragma once
// The seam between the warm-up protocol (session.cpp, torch-free) and libtorch's c10d
// (torch_backend.cpp, the one translation unit that includes libtorch headers). Keeping libtorch
// behind this interface keeps compile times down on small build machines and lets the protocol
// be read without knowing c10d. Every libtorch exception is caught in torch_backend.cpp and comes
// back here as an Error.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "warmup/kv_store.h"

namespace sl::warmup {

/// A process group over all ranks (ProcessGroupNCCL on GPUs, else ProcessGroupGloo).
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// "nccl" or "gloo".
  virtual std::string Backend() const = 0;
  /// all_reduce(sum) of `count` floats, rank r contributing r+1 everywhere; verifies every
  /// element equals world*(world+1)/2 and says which element is wrong otherwise.
  virtual Status AllReduceVerified(std::size_t count, std::chrono::milliseconds timeout) = 0;
  /// Mean seconds of one all_reduce of `bytes` (after one untimed warm-up call).
  virtual Result<double> TimeAllReduce(std::size_t bytes, int iterations,
                                       std::chrono::milliseconds timeout) = 0;
  /// Aborts the communicators (NCCL) so that no collective can hang the process on exit.
  virtual void Abort() = 0;
};

struct BackendOptions {
  std::string store_host;  ///< rendezvous address (global rank 0's node)
  int store_port = 0;
  std::string local_address;  ///< this rank's address towards store_host (Gloo binds it)
  int rank = 0, world = 1, local_rank = 0;
  std::chrono::milliseconds timeout{120000};  ///< for connect and each store/collective call
  std::string backend = "auto";               ///< "auto", "gloo" or "nccl"
  /// Store prefix of the group's own rendezvous keys: one per group (the pair rounds make many).
  std::string group_prefix = "pg/";
};

/// Rank 0 hosts the store (listening on store_host:store_port only, where libtorch allows it);
/// all ranks connect as clients. Errors say which address could not be reached.
Result<std::unique_ptr<KvStore>> ConnectStore(const BackendOptions& options);
/// Creates the process group over `store` (which must come from ConnectStore).
Result<std::unique_ptr<Communicator>> CreateCommunicator(KvStore& store,
                                                         const BackendOptions& options);

struct TorchInfo {
  std::string torch_version;  ///< "1.13.0"
  std::string nccl_version;   ///< "2.28.9" when built with NCCL, else ""
  bool nccl_built = false;
  int cuda_devices = 0;  ///< visible CUDA devices (0 for a CPU build)
};
TorchInfo QueryTorch();

}  // namespace sl::warmup
