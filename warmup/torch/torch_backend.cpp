// The only translation unit that includes libtorch headers (they are heavy: keep it that way).
// Implements backend.h over c10d: TCPStore, ProcessGroupGloo and, in CUDA builds of torch,
// ProcessGroupNCCL. Uses only c10d API present in both torch 1.13 (Debian's CPU libtorch) and
// torch 2.x wheels; version-specific calls are guarded by TORCH_VERSION_*. Every libtorch
// exception is caught here and returned as an Error: nothing throws past this file.
#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <c10/util/Exception.h>
#include <netdb.h>
#include <sys/socket.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <type_traits>

#include "warmup/torch/backend.h"

// Each backend only where torch was built with it (its targets define USE_C10D_*).
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

// TCPStoreOptions::masterListenFd / useLibUV exist from torch 2.4 on (checked against the
// pytorch sources); older torch always binds the store to every address.
#define SL_TORCH_AT_LEAST(maj, min) \
  (TORCH_VERSION_MAJOR > (maj) || (TORCH_VERSION_MAJOR == (maj) && TORCH_VERSION_MINOR >= (min)))

namespace sl::warmup {
namespace {

std::string Describe(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    // what() carries a C++ backtrace that means nothing to the user.
    std::string msg = c10->what_without_backtrace();
    auto cut = msg.find("\nException raised from");
    if (cut != std::string::npos) msg.resize(cut);
    return msg;
  }
  return e.what();
}

// Catches everything libtorch can throw and turns it into an Error naming `what`.
template <typename T, typename Fn>
Result<T> Guard(const std::string& what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return MakeError(what + ": " + Describe(e));
  } catch (...) {
    return MakeError(what + ": unknown exception from libtorch");
  }
}

std::vector<std::uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

#if SL_TORCH_AT_LEAST(2, 4)
// A listening socket bound to `host` only, handed to the TCPStore server, so the store is not
// reachable on every interface of the node (rank 0's node may face the internet).
Result<int> ListenOn(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_text = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
  if (rc != 0) {
    return MakeError(std::string("cannot resolve rendezvous host: ") + gai_strerror(rc), host);
  }
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      ::freeaddrinfo(res);
      return fd;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return MakeError("cannot listen for the warm-up store: " + last_error,
                   host + ":" + std::to_string(port),
                   "the address must belong to this node (rank 0) and the port must be free; "
                   "choose another with --warmup-port");
}
#endif

class TorchStore final : public KvStore {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  Status Set(const std::string& key, const std::string& value) override {
    return Guard<Ok>("store set " + key, [&] {
      store_->set(key, Bytes(value));
      return Ok{};
    });
  }
  Result<std::string> Get(const std::string& key) override {
    return Guard<std::string>("store get " + key, [&] {
      auto v = store_->get(key);
      return std::string(v.begin(), v.end());
    });
  }
  Result<bool> Check(const std::vector<std::string>& keys) override {
    return Guard<bool>("store check", [&] { return store_->check(keys); });
  }
  Result<std::int64_t> Add(const std::string& key, std::int64_t delta) override {
    return Guard<std::int64_t>("store add " + key,
                               [&] { return static_cast<std::int64_t>(store_->add(key, delta)); });
  }
  const c10::intrusive_ptr<c10d::Store>& store() const { return store_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

// Templated on the concrete group type: in torch 1.13 ProcessGroupGloo/NCCL derive from
// c10d::ProcessGroup, in 2.x from c10d::Backend; both have allreduce(tensors, opts).
template <typename Group>
class TorchCommunicator final : public Communicator {
 public:
  TorchCommunicator(c10::intrusive_ptr<Group> pg, std::string backend, at::Device device, int rank,
                    int world)
      : pg_(std::move(pg)),
        backend_(std::move(backend)),
        device_(device),
        rank_(rank),
        world_(world) {}

  std::string Backend() const override { return backend_; }

  Status AllReduceVerified(std::size_t count, std::chrono::milliseconds timeout) override {
    return Guard<Ok>(backend_ + " all_reduce", [&]() -> Result<Ok> {
      std::vector<at::Tensor> tensors{
          at::full({static_cast<std::int64_t>(count)}, static_cast<float>(rank_ + 1), Options())};
      auto work = pg_->allreduce(tensors);
      if (!work->wait(timeout)) {
        return MakeError(backend_ + " all_reduce was aborted");
      }
      at::Tensor host = tensors[0].to(at::kCPU).contiguous();
      const float* data = host.data_ptr<float>();
      const float expected = static_cast<float>(world_) * static_cast<float>(world_ + 1) / 2.0f;
      for (std::size_t i = 0; i < count; ++i) {
        if (data[i] != expected) {
          return MakeError("all_reduce returned a wrong sum at element " + std::to_string(i) +
                               ": got " + std::to_string(data[i]) + ", expected " +
                               std::to_string(expected),
                           "rank " + std::to_string(rank_),
                           "data corruption on the path between ranks: run the preflight on "
                           "every node and check the NIC/GPU error counters");
        }
      }
      return Ok{};
    });
  }

  Result<double> TimeAllReduce(std::size_t bytes, int iterations,
                               std::chrono::milliseconds timeout) override {
    return Guard<double>(backend_ + " all_reduce timing", [&]() -> Result<double> {
      auto count = static_cast<std::int64_t>(std::max<std::size_t>(bytes / sizeof(float), 1));
      std::vector<at::Tensor> tensors{at::ones({count}, Options())};
      auto run_once = [&]() -> bool { return pg_->allreduce(tensors)->wait(timeout); };
      if (!run_once()) return MakeError(backend_ + " all_reduce was aborted");
      Sync(tensors[0]);
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) {
        if (!run_once()) return MakeError(backend_ + " all_reduce was aborted");
      }
      Sync(tensors[0]);
      std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      return elapsed.count() / std::max(iterations, 1);
    });
  }

  void Abort() override {
#if defined(USE_C10D_NCCL) && SL_TORCH_AT_LEAST(2, 2)
    // ProcessGroupNCCL::abort() (torch >= 2.2) aborts the NCCL communicators so a peer that
    // vanished cannot leave this process stuck in a kernel or in ncclCommDestroy.
    if constexpr (std::is_same_v<Group, c10d::ProcessGroupNCCL>) {
      try {
        pg_->abort();
      } catch (...) {
      }
    }
#endif
    // Gloo operations time out on their own; torch 1.13 NCCL has no group abort, and the
    // launcher kills this process at the deadline anyway.
  }

 private:
  at::TensorOptions Options() const {
    return at::TensorOptions().dtype(at::kFloat).device(device_);
  }
  // Work::wait on NCCL only orders streams; copying one element to the host waits for the GPU.
  void Sync(const at::Tensor& t) const {
    if (device_.is_cuda()) (void)t.narrow(0, 0, 1).to(at::kCPU);
  }

  c10::intrusive_ptr<Group> pg_;
  std::string backend_;
  at::Device device_;
  int rank_, world_;
};

}  // namespace

Result<std::unique_ptr<KvStore>> ConnectStore(const BackendOptions& o) {
  std::string where = o.store_host + ":" + std::to_string(o.store_port);
  return Guard<std::unique_ptr<KvStore>>(
      "warm-up store at " + where, [&]() -> Result<std::unique_ptr<KvStore>> {
        c10d::TCPStoreOptions opts;
        opts.port = static_cast<std::uint16_t>(o.store_port);
        opts.isServer = o.rank == 0;
        opts.waitWorkers = false;  // rank 0 must not block: it also has to report who is missing
        opts.timeout = o.timeout;
#if SL_TORCH_AT_LEAST(2, 4)
        if (opts.isServer) {
          auto fd = ListenOn(o.store_host, o.store_port);
          if (!fd.ok()) return fd.error();
          opts.masterListenFd = *fd;
          opts.useLibUV = false;  // libuv takes over a listening fd only in newer torch
        }
#endif
        auto store = c10::make_intrusive<c10d::TCPStore>(o.store_host, opts);
        return std::unique_ptr<KvStore>(new TorchStore(store));
      });
}

Result<std::unique_ptr<Communicator>> CreateCommunicator(KvStore& kv, const BackendOptions& o) {
  auto* ts = dynamic_cast<TorchStore*>(&kv);
  if (ts == nullptr)
    return MakeError("internal: CreateCommunicator needs a store from ConnectStore");
  TorchInfo info = QueryTorch();
  std::string backend = o.backend;
  if (backend == "auto") backend = (info.nccl_built && info.cuda_devices > 0) ? "nccl" : "gloo";
  if (backend == "nccl" && !info.nccl_built) {
    return MakeError("this safe-launch-warmup was built against a torch without NCCL",
                     "safe-launch-warmup",
                     "rebuild it against a CUDA torch (see doc/manual.md, 'Warm-up'), or pass "
                     "--warmup-backend=gloo");
  }
  return Guard<std::unique_ptr<Communicator>>(
      backend + " process group (rank " + std::to_string(o.rank) + " of " +
          std::to_string(o.world) + ")",
      [&]() -> Result<std::unique_ptr<Communicator>> {
        // A prefix keeps the group's own rendezvous keys apart from the warm-up protocol's.
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>(o.group_prefix, ts->store());
#ifdef USE_C10D_NCCL
        if (backend == "nccl") {
          int device = info.cuda_devices > 0 ? o.local_rank % info.cuda_devices : 0;
          c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
          auto opts = c10d::ProcessGroupNCCL::Options::create();
          opts->timeout = o.timeout;
          auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, o.rank, o.world, opts);
          return std::unique_ptr<Communicator>(new TorchCommunicator<c10d::ProcessGroupNCCL>(
              pg, "nccl", at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)), o.rank,
              o.world));
        }
#endif
#ifdef USE_C10D_GLOO
        auto opts = c10d::ProcessGroupGloo::Options::create(o.timeout);
        // GLOO_SOCKET_IFNAME is honoured as torch.distributed does; otherwise bind the address
        // that routes to the rendezvous host, so loopback tests and multi-homed nodes both work.
        const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
        if (ifname != nullptr && *ifname != '\0') {
          opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
        } else if (!o.local_address.empty()) {
          opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(o.local_address));
        } else {
          opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        }
        opts->threads = 2;
        auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, o.rank, o.world, opts);
        return std::unique_ptr<Communicator>(new TorchCommunicator<c10d::ProcessGroupGloo>(
            pg, "gloo", at::Device(at::kCPU), o.rank, o.world));
#else
        return MakeError("this safe-launch-warmup was built against a torch without Gloo",
                         "safe-launch-warmup", "pass --warmup-backend=nccl on GPU nodes");
#endif
      });
}

TorchInfo QueryTorch() {
  TorchInfo info;
  info.torch_version = TORCH_VERSION;
#ifdef USE_C10D_NCCL
  info.nccl_built = true;
  try {
    info.nccl_version = c10d::getNcclVersion();
  } catch (...) {
  }
#endif
  try {
    info.cuda_devices = static_cast<int>(torch::cuda::device_count());
  } catch (...) {
    info.cuda_devices = 0;
  }
  return info;
}

}  // namespace sl::warmup
