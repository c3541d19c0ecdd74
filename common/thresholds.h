#pragma once
// Preflight thresholds: defaults here, overridable by recipes ([thresholds] table).
#include <cstdint>
#include <optional>

namespace sl {

struct Thresholds {
  int min_ib_mtu = 4096;               ///< warn below (InfiniBand active MTU, bytes)
  int min_roce_mtu = 9000;             ///< warn below (netdev MTU behind a RoCE port)
  std::optional<int> expected_mtu;     ///< when set, any port MTU different from it is a fail
  double min_rate_gbps = 0;            ///< when > 0, a used port slower than this is a fail
  std::uint64_t min_memlock = 0;       ///< 0: only "unlimited" passes; else bytes that pass
  std::uint64_t min_nofile = 65536;    ///< warn below
  std::uint64_t min_shm = 1ull << 30;  ///< fail below (bytes)
  std::uint64_t min_rmem_max = 4194304;
  std::uint64_t min_wmem_max = 4194304;
  std::uint64_t min_tcp_rmem_max = 4194304;  ///< third field of net.ipv4.tcp_rmem
  std::uint64_t min_tcp_wmem_max = 4194304;  ///< third field of net.ipv4.tcp_wmem
  int min_local_ports = 16384;               ///< size of net.ipv4.ip_local_port_range, warn below
  /// Warm-up/bench: measured busbw below this x the expected line warns, below half of it fails.
  /// 0.7: healthy NCCL reaches 0.8-0.95 of the line at large sizes; the faults it must catch
  /// (GDR off, a port at half rate, socket fallback) land at or below 0.5.
  double min_busbw_fraction = 0.7;
  /// Sizes at or above this are judged against the expected line (NCCL's busbw levels off).
  std::uint64_t busbw_judge_bytes = 64ull << 20;
  /// A drop of busbw beyond this fraction against the baseline or the history's median is a
  /// finding (run-to-run noise of a healthy fabric stays within a few percent).
  double max_busbw_drop = 0.1;
};

}  // namespace sl
