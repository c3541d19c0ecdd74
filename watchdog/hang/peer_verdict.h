#pragma once
// What the other nodes said (and what this node's own ranks did) that a capture answers or
// follows from, and how it changes the capture's verdict and summaries:
//   * a peer_hang capture's headline names the node that declared the hang (and takes its
//     category when this node saw nothing better);
//   * another node's earlier root failure is the verdict (oom_or_crash_other_rank) when this
//     node's own finding is only a consequence, kept after "here:";
//   * a rank of this node that failed before the hang is the verdict (rank_process_failed).
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "diagnose/signatures.h"
#include "diagnose/verdict.h"
#include "watchdog/hang/peer_events.h"

namespace sl::hang {

/// What the other nodes said that this capture answers or follows from.
struct PeerNotes {
  std::optional<PeerEvent> hang;     ///< the notice of a peer_hang capture
  std::optional<PeerEvent> failure;  ///< another node's earlier root failure: the verdict
  std::optional<PeerEvent> local;    ///< this node's rank failure before the hang: the verdict
  /// Where the local failure's line was in the output: what came after it is its consequence.
  std::string local_source;
  std::uint64_t local_line = 0;
};

/// The verdict and its rendered summaries (summary.json, summary.md).
struct Decided {
  diagnose::Verdict verdict;  ///< without evidence pointers
  nlohmann::json json;
  std::string markdown;
};

/// Rewrites `v` (headline, category, fix, ranks, hosts) for what `peer` holds; see the top.
void ApplyPeerNotes(const PeerNotes& peer, diagnose::Verdict& v);

/// Decides on a snapshot of the evidence taken under `evidence_mu`, applies `peer`, and renders
/// the summaries (the events in them too). The verdict is rendered before the snapshot goes
/// away and kept as a copy without evidence pointers.
Decided DecideOnSnapshot(std::mutex& evidence_mu, const diagnose::Evidence& evidence,
                         diagnose::Trigger trigger, const diagnose::JobTiming& timing,
                         const PeerNotes& peer = {});

}  // namespace sl::hang
