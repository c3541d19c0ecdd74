#pragma once
// Parsers for the text of /sys/class/infiniband attributes. Pure: text in, values out; the reading
// lives in node_facts.cpp and the checks. Every parser rejects garbage with an Error whose
// message quotes (printable part of) the value; callers add the host path as `where`.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace sl {

/// "4: ACTIVE" (ports/N/state), "5: LinkUp" / "7: Phy Test" (ports/N/phys_state).
struct SysfsCodeName {
  int code = 0;
  std::string name;
};
/// Parses "<number>: <name>"; `what` names the attribute in the error ("state").
Result<SysfsCodeName> ParseSysfsCodeName(std::string_view text, std::string_view what);

/// ports/N/rate: "400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)", "100 Gb/sec (4X)" -> Gb/s.
Result<double> ParseIbRate(std::string_view text);

/// ports/N/link_layer: "InfiniBand", "Ethernet" (RoCE) or "Unknown".
Result<std::string> ParseLinkLayer(std::string_view text);

using GidBytes = std::array<std::uint8_t, 16>;
/// gids/I: exactly eight colon-separated groups of four hex digits, as the kernel prints them.
Result<GidBytes> ParseGid(std::string_view text);
/// "11.0.0.72" for an IPv4-mapped GID (::ffff:a.b.c.d), else "".
std::string GidIpv4(const GidBytes& gid);
/// NCCL's notion of the address family of a GID: IPv4-mapped (or its ff0e:: multicast form).
bool GidIsIpv4(const GidBytes& gid);
/// All-zero, or fe80:: with nothing after the prefix: an entry nobody configured.
bool GidIsUnconfigured(const GidBytes& gid);
/// fe80::/64.
bool GidIsLinkLocal(const GidBytes& gid);

/// gid_attrs/types/I -> RoCE version: 1 ("IB/RoCE v1", "RoCE v1"), 2 ("RoCE v2"), 0 unknown.
int RoceVersionFromType(std::string_view type);

/// counters/<name>, hw_counters/<name>: a decimal unsigned integer.
Result<std::uint64_t> ParseCounterValue(std::string_view text);

/// /sys/class/net/<if>/mtu: a positive decimal integer (68..65536 in practice).
Result<int> ParseNetdevMtu(std::string_view text);

/// Printable rendering of a raw value for messages: control bytes as \xNN, cut at 64 bytes.
std::string PrintableValue(std::string_view raw);

/// The kind of trouble an error counter means (ib.port.errors chooses its next step by it).
enum class IbCounterKind { kPhysical, kDiscard, kTransport };

/// One IB port counter file that counts errors.
struct IbErrorCounter {
  std::string_view name;
  IbCounterKind kind;
};

// IBA PortCounters (counters/). Left out: traffic counters, port_xmit_wait (congestion, not an
// error) and VL15_dropped (SM packets an HCA drops routinely).
inline constexpr IbErrorCounter kIbPortErrorCounters[] = {
    {"symbol_error", IbCounterKind::kPhysical},
    {"link_error_recovery", IbCounterKind::kPhysical},
    {"link_downed", IbCounterKind::kPhysical},
    {"port_rcv_errors", IbCounterKind::kPhysical},
    {"port_rcv_remote_physical_errors", IbCounterKind::kPhysical},
    {"local_link_integrity_errors", IbCounterKind::kPhysical},
    {"excessive_buffer_overrun_errors", IbCounterKind::kDiscard},
    {"port_xmit_discards", IbCounterKind::kDiscard},
    {"port_xmit_constraint_errors", IbCounterKind::kDiscard},
    {"port_rcv_constraint_errors", IbCounterKind::kDiscard},
    {"port_rcv_switch_relay_errors", IbCounterKind::kDiscard},
};

// mlx5 hw_counters that mean retransmission or failed work requests. Left out: lifespan (the
// counter cache lifetime in ms), rx_*_requests (traffic), *_cqe_flush_error (normal teardown),
// np_*/rp_* (ECN/CNP congestion control doing its job), duplicate_request (the peer's retry).
inline constexpr IbErrorCounter kIbHwErrorCounters[] = {
    {"local_ack_timeout_err", IbCounterKind::kTransport},
    {"out_of_sequence", IbCounterKind::kTransport},
    {"packet_seq_err", IbCounterKind::kTransport},
    {"implied_nak_seq_err", IbCounterKind::kTransport},
    {"rnr_nak_retry_err", IbCounterKind::kTransport},
    {"req_transport_retries_exceeded", IbCounterKind::kTransport},
    {"req_rnr_retries_exceeded", IbCounterKind::kTransport},
    {"req_cqe_error", IbCounterKind::kTransport},
    {"resp_cqe_error", IbCounterKind::kTransport},
    {"req_remote_access_errors", IbCounterKind::kTransport},
    {"req_remote_invalid_request", IbCounterKind::kTransport},
    {"resp_local_length_error", IbCounterKind::kTransport},
    {"resp_remote_access_errors", IbCounterKind::kTransport},
    {"out_of_buffer", IbCounterKind::kDiscard},
    {"rx_icrc_encapsulated", IbCounterKind::kTransport},
};

/// Whether `name` under a port's `dir` ("counters" or "hw_counters") is one of the above.
bool IsIbErrorCounter(std::string_view dir, std::string_view name);

}  // namespace sl
