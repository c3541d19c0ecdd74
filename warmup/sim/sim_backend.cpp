// backend.h for the scale simulator (safe-launch-warmup-sim, bench/scale.sh): the warm-up
// protocol of warmup/torch/warmup_main.cpp, unchanged, over the simulator's store (sim_store.h)
// instead of c10d's TCPStore, and without libtorch: a plan with "collectives": false never asks
// for a process group, and one that does is told why not.
#include <memory>

#include "warmup/sim/sim_store.h"
#include "warmup/torch/backend.h"

namespace sl::warmup {
namespace {

// Rank 0's view: the server it hosts, and its own client connection to it (the protocol's
// calls go through the socket like every other rank's, so node 0 pays what it would).
class HostedStore final : public KvStore {
 public:
  HostedStore(std::unique_ptr<sim::StoreServer> server, std::unique_ptr<KvStore> client)
      : server_(std::move(server)), client_(std::move(client)) {}
  Status Set(const std::string& k, const std::string& v) override { return client_->Set(k, v); }
  Result<std::string> Get(const std::string& k) override { return client_->Get(k); }
  Result<bool> Check(const std::vector<std::string>& keys) override { return client_->Check(keys); }
  Result<std::int64_t> Add(const std::string& k, std::int64_t d) override {
    return client_->Add(k, d);
  }

 private:
  std::unique_ptr<sim::StoreServer> server_;
  std::unique_ptr<KvStore> client_;
};

}  // namespace

Result<std::unique_ptr<KvStore>> ConnectStore(const BackendOptions& options) {
  if (options.rank != 0)
    return sim::Connect(options.store_host, options.store_port, options.timeout);
  auto server = sim::StartServer(options.store_host, options.store_port);
  if (!server.ok()) return server.error();
  auto client = sim::Connect(options.store_host, options.store_port, options.timeout);
  if (!client.ok()) return client.error();
  return std::unique_ptr<KvStore>(
      std::make_unique<HostedStore>(std::move(*server), std::move(*client)));
}

Result<std::unique_ptr<Communicator>> CreateCommunicator(KvStore&, const BackendOptions&) {
  return MakeError("the scale simulator runs no collectives", "safe-launch-warmup-sim",
                   "give the simulator's plans \"collectives\": false (bench/scale.sh does)");
}

TorchInfo QueryTorch() { return TorchInfo{"sim", "", false, 0}; }

}  // namespace sl::warmup
