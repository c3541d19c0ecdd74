#pragma once
// After node 0's warm-up passed, its store is gone and the job runs: a late process of the same
// job (a duplicate --node-rank, a node restarted by hand) would wait its whole warm-up timeout
// for that store and then say "could not reach" it. So node 0's launcher keeps the warm-up port
// answering while the job runs: whoever connects gets one line naming the nodes that passed,
// tagged with the job's key (store_auth.h), and is hung up on. Every launcher but node 0's own
// first run reads the port for a moment before starting its ranks and, on a notice of its own
// job, is refused at once, naming the node's first claimant. A c10d store never speaks first, so
// the probe costs a live store one short wait and a dead port nothing.
#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "warmup/store_auth.h"

namespace sl::warmup {

/// First bytes of a guard's line; a c10d store never sends them.
inline constexpr std::string_view kGuardMagic = "safe-launch-warmup-over/1 ";

/// One node as node 0's warm-up saw it arrive (local rank 0's claim).
struct GuardNode {
  int node_rank = 0;
  std::string host, address;
  int pid = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GuardNode, node_rank, host, address, pid)

/// What the guard says: the job's layout that passed, and when.
struct GuardNotice {
  int nnodes = 0, nproc_per_node = 0;
  double passed_unix_ms = 0;
  std::vector<GuardNode> nodes;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GuardNotice, nnodes, nproc_per_node, passed_unix_ms,
                                                nodes)

/// The notice from node 0's warm-up report (its "arrivals": one per rank; local rank 0's names
/// the node).
GuardNotice NoticeFromReport(const nlohmann::json& report);
/// The guard's line: kGuardMagic + a value signed for "sl-warmup/<job>/guard" + '\n'.
std::string GuardLine(const WarmupAuth& auth, const GuardNotice& notice);
/// The notice in a line read from the port: nullopt when it is no guard's line (a c10d store, or
/// nothing); an Error when it is a guard's line this job's key does not verify (another job).
Result<std::optional<GuardNotice>> ParseGuardLine(const WarmupAuth& auth, const std::string& line);
/// The refusal: "node N already passed this job's warm-up as HOST (ADDR, pid P) ..." for a
/// process claiming `node_rank` from `my_host`.
std::string LateClaimMessage(const GuardNotice& notice, int node_rank, const std::string& my_host);

/// Listens on host:port while alive (a thread with every signal blocked, so the supervisor's
/// signal handling is untouched) and answers every connection with `line`. Each peer answered is
/// logged once on node 0 ("refused a late claim from ADDR").
class ClaimGuard {
 public:
  /// Error when the port cannot be bound (then there is simply no guard).
  static Result<std::unique_ptr<ClaimGuard>> Start(const std::string& host, int port,
                                                   std::string line);
  ~ClaimGuard();
  ClaimGuard(const ClaimGuard&) = delete;
  ClaimGuard& operator=(const ClaimGuard&) = delete;
  /// Peers answered so far ("addr:port").
  std::vector<std::string> Answered() const;

 private:
  ClaimGuard(int fd, std::string line) : fd_(fd), line_(std::move(line)) {}
  void Loop();
  int fd_ = -1;
  std::string line_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> answered_;
  std::thread thread_;
};

/// Connects to host:port and reads a line for at most `wait_ms`: the guard's line, or "" when
/// nothing answers, nothing is said in time (a live c10d store) or the connection is refused.
std::string ProbeClaimGuard(const std::string& host, int port, int wait_ms);

}  // namespace sl::warmup
