// Every catalog row against the message its source produces: the format string of that release
// with the %s/%d filled in by hand (the comment names file and tag), one case per format variant.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "diagnose/signatures.h"

using namespace sl::diagnose;

namespace {

struct RowCase {
  std::string line;
  const char* id;  // the row that must match first
  std::vector<std::pair<const char*, const char*>> fields;
};

void CheckCases(const std::vector<RowCase>& cases) {
  LineMatcher m;
  for (const RowCase& c : cases) {
    INFO(c.line);
    auto r = m.MatchLine(c.line);
    REQUIRE(r.has_value());
    CHECK(r->signature->id == c.id);
    for (const auto& [k, v] : c.fields) {
      INFO("field " << k);
      CHECK(r->Field(k) == v);
    }
  }
}

constexpr const char* kW = "gpu07:2291:2377 [3] NCCL WARN ";  // NCCL's WARN prefix
constexpr const char* kI = "gpu07:2291:2291 [3] NCCL INFO ";  // NCCL's INFO prefix

std::string W(const char* s) { return std::string(kW) + s; }
std::string I(const char* s) { return std::string(kI) + s; }

}  // namespace

std::vector<RowCase> IbCompletionCases() {
  const std::string v210 =
      W("NET/IB : Got completion from peer 10.0.0.2<53908> with error 12, opcode 1, len 0, vendor "
        "err 129");  // net_ib.cc v2.10.3-1 .. v2.17.1-1
  const std::string v218 =
      W("NET/IB : Got completion from peer 10.0.0.2<53908> with error 12, opcode 0, len 0, vendor "
        "err 129 (Send) localGid fe80::ba59:9f03:c0:12 remoteGids::ffff:10.0.0.2");  // v2.18.3-1
  const std::string v220 =
      W("NET/IB : Got completion from peer 10.0.0.2<53908> with status=12 opcode=129 len=1048576 "
        "vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2");  // v2.20.5-1
  const std::string v222 = W(
      "NET/IB: Got completion from peer 10.0.0.2<53908> with status=12 opcode=129 len=0 vendor "
      "err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_3");  // v2.22.3-1
  const std::string v228 =
      W("NET/IB: Got completion from peer 10.0.0.2<53908> with status=IBV_WC_RETRY_EXC_ERR(12) "
        "opcode=IBV_WC_SEND(0) reqSize=524288 vendor_err=129 req_type=Send localGid "
        "::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_3");  // v2.28.9-1
  return {
      {v210,
       "nccl.ib_status_retry_exceeded",
       {{"peer", "10.0.0.2<53908>"}, {"vendor_err", "129"}, {"host", "gpu07"}}},
      {v218,
       "nccl.ib_status_retry_exceeded",
       {{"local_gid", "fe80::ba59:9f03:c0:12"}, {"remote_gid", "::ffff:10.0.0.2"}}},
      {v220,
       "nccl.ib_status_retry_exceeded",
       {{"vendor_err", "129"}, {"local_gid", "::ffff:10.0.0.1"}}},
      {v222,
       "nccl.ib_status_retry_exceeded",
       {{"hca", "mlx5_3"}, {"remote_gid", "::ffff:10.0.0.2"}}},
      {v228,
       "nccl.ib_status_retry_exceeded",
       {{"vendor_err", "129"}, {"local_gid", "::ffff:10.0.0.1"}, {"hca", "mlx5_3"}}},
      // v2.28.9-1 with status 4 and 5, v2.24.3-1 with status 4; torch's "Last error:" echo.
      {"NET/IB: Got completion from peer 10.0.0.2<1> with status=IBV_WC_LOC_PROT_ERR(4) "
       "opcode=IBV_WC_RDMA_WRITE(1) reqSize=0 vendor_err=81 req_type=Send hca mlx5_0",
       "nccl.ib_status_loc_prot",
       {{"vendor_err", "81"}, {"hca", "mlx5_0"}}},
      {"NET/IB: Got completion from peer 10.0.0.2<1> with status=4 opcode=1 len=0 vendor err 81 "
       "(Send) hca mlx5_0",
       "nccl.ib_status_loc_prot",
       {{"hca", "mlx5_0"}}},
      {"NET/IB: Got completion from peer 10.0.0.2<1> with status=IBV_WC_WR_FLUSH_ERR(5) "
       "opcode=IBV_WC_SEND(0) reqSize=0 vendor_err=249 req_type=Send hca mlx5_0",
       "nccl.ib_status_flush",
       {{"vendor_err", "249"}}},
      {"NET/IB: Got completion from peer 10.0.0.2<1> with status=IBV_WC_RNR_RETRY_EXC_ERR(13) "
       "opcode=IBV_WC_SEND(0) reqSize=64 vendor_err=0 req_type=Send hca mlx5_0",
       "nccl.ib_completion",
       {{"status", "13"}, {"hca", "mlx5_0"}}},
      // net_ib/p2p.cc v2.29.2-1 .. v2.30.7-1: no reqSize / req_type any more
      {W("NET/IB: Got completion from peer 10.0.0.2<53908> with status=IBV_WC_RETRY_EXC_ERR(12) "
         "opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129  localGid ::ffff:10.0.0.1 "
         "remoteGids::ffff:10.0.0.2 hca mlx5_3"),
       "nccl.ib_status_retry_exceeded",
       {{"vendor_err", "129"}, {"local_gid", "::ffff:10.0.0.1"}, {"hca", "mlx5_3"}}},
      // net_ib/p2p_resiliency.cc v2.29.2-1 and v2.30.7-1
      {W("NET/IB: ncclIbResiliencyHandleCompletionError: Device 1 marked as failed. (send "
         "comm=0x7f3a2c001b40)"),
       "nccl.ib_device_failed",
       {{"ib_dev", "1"}}},
      {W("NET/IB: Device 0 marked as failed. Initiating recovery? yes (recv comm=0x7f3a2c001b40, "
         "outstandingRecovery=0)"),
       "nccl.ib_device_failed",
       {{"ib_dev", "0"}}},
      {W("NET/IB: The error is fatal (no functional device left). Cannot continue."),
       "nccl.ib_resiliency_fatal",
       {{"reason", "no functional device left"}}},
      // v2.28.9-1 net_ib.cc, the GIN proxy's completion (2.27 layout).
      {"NET/IB/GIN: Got completion from peer 10.0.0.2<1> with status=12 opcode=1 len=0 vendor err "
       "129 (GIN) hca mlx5_1",
       "nccl.ib_status_retry_exceeded",
       {{"hca", "mlx5_1"}}},
  };
}
TEST_CASE("IB completion rows match every release's completion format, status by status") {
  CheckCases(IbCompletionCases());
}

std::vector<RowCase> IbAsyncEventsCases() {
  return {
      // net_ib.cc v2.10.3-1 .. v2.19.4-1: "NET/IB : Got async event : %s"
      {W("NET/IB : Got async event : port error"), "nccl.ib_port_error", {}},
      {W("NET/IB : Got async event : GID table change"), "nccl.ib_event_gid_change", {}},
      {W("NET/IB : Got async event : local catastrophic error"), "nccl.ib_event_device_fatal", {}},
      {W("NET/IB : Got async event : local access violation work queue error"),
       "nccl.ib_event_qp_access_error",
       {}},
      // net_ib.cc's receive-size check: v2.4.8-1 .. v2.9.9-1 "NET/IB : collective mismatch error
      // local size %d remote %d addr %lx rkey %x seq %x/%x"
      {W("NET/IB : collective mismatch error local size 65536 remote 496640 addr 7f2a1c000000 "
         "rkey 1a2b seq 3/4"),
       "nccl.ib_collective_mismatch",
       {{"peer", ""}, {"local_size", "65536"}, {"remote_size", "496640"}}},
      // v2.10.3-1 .. v2.11.4-1 "NET/IB : peer %s collective mismatch error local size %d remote
      // %d addr %lx rkey %x seq %x/%x"
      {W("NET/IB : peer 10.0.0.2<58683> collective mismatch error local size 65536 remote "
         "496640 addr 7f2a1c000000 rkey 1a2b seq 3/4"),
       "nccl.ib_collective_mismatch",
       {{"peer", "10.0.0.2<58683>"}, {"remote_size", "496640"}}},
      // v2.12.7-1 "NET/IB : req %d/%d tag %x peer %s collective mismatch error local size %d
      // remote %d addr %lx rkey %x"
      {W("NET/IB : req 0/1 tag 7 peer 10.0.0.2<58683> collective mismatch error local size "
         "65536 remote 496640 addr 7f2a1c000000 rkey 1a2b"),
       "nccl.ib_collective_mismatch",
       {{"peer", "10.0.0.2<58683>"}, {"local_size", "65536"}}},
      // v2.12.12-1 .. v2.19.4-1 "NET/IB : req %d/%d tag %x peer %s collective mismatch error,
      // local size %d remote size %d"
      {W("NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size "
         "496640 remote size 65536"),
       "nccl.ib_collective_mismatch",
       {{"peer", "10.10.23.6<58683>"}, {"local_size", "496640"}, {"remote_size", "65536"}}},
      // UCX ib_device.c v1.5.0 .. v1.8.0 "ibv_create_ah(%s) failed: %m"; v1.9.0 .. v1.11.0
      // "ibv_create_ah(%s) on %s failed: %m"; v1.12.0 .. v1.22.0 "ibv_create_ah(%s) for %s on %s
      // failed: %m"
      {"[1700000000.123] ib_device.c:997 UCX ERROR ibv_create_ah(dlid=49152 sl=0 port=1 "
       "src_path_bits=0 dgid=::ffff:10.0.0.2 flow_label=0x0 sgid_index=1 traffic_class=106) "
       "failed: Invalid argument",
       "ucx.create_ah_einval",
       {{"dev", ""}}},
      {"ib_device.c:1319 UCX ERROR ibv_create_ah(dlid=49152 sl=0 port=1 src_path_bits=0 "
       "dgid=::ffff:10.0.0.2 sgid_index=1 traffic_class=106) on mlx5_0 failed: Invalid argument",
       "ucx.create_ah_einval",
       {{"dev", "mlx5_0"}}},
      {"ib_device.c:1451 UCX ERROR ibv_create_ah(dlid=49152 sl=0 port=1 src_path_bits=0 "
       "dgid=::ffff:10.0.0.2 flow_label=0x0 sgid_index=3 traffic_class=106) for UD connect on "
       "rocep33s0f1 failed: Invalid argument",
       "ucx.create_ah_einval",
       {{"usage", "UD connect"}, {"dev", "rocep33s0f1"}}},
      // other errnos stay with the generic creation row
      {"ib_device.c:1451 UCX ERROR ibv_create_ah(dlid=1 sl=0 port=1 src_path_bits=0) for RC "
       "connect on mlx5_0 failed: Cannot allocate memory",
       "nccl.ibv_create",
       {}},
      // net_ib.cc v2.20.3-1 .. v2.23.4-1 "NET/IB : Can't merge net devices with different
      // link_layer. i=%d remMeta.ndevs=%d link_layer=%d rem_link_layer=%d"; v2.24.3-1 ..
      // v2.25.1-1 "Can't connect net devices ..." and "Trying to merge multiple devices together
      // with different link_layer properties %s -> %d, %s -> %d. ..."
      {W("NET/IB : Can't merge net devices with different link_layer. i=0 remMeta.ndevs=1 "
         "link_layer=1 rem_link_layer=2"),
       "nccl.ib_link_layer_mismatch",
       {}},
      {W("NET/IB : Can't connect net devices with different link_layer. i=0 remMeta.ndevs=1 "
         "link_layer=2 rem_link_layer=1"),
       "nccl.ib_link_layer_mismatch",
       {}},
      {W("NET/IB : Trying to merge multiple devices together with different link_layer "
         "properties mlx5_0 -> 1, mlx5_2 -> 2. Try only selecting NICs with one type of link "
         "using NCCL_IB_HCA"),
       "nccl.ib_link_layer_mismatch",
       {}},
      // v2.26.2-1 .. v2.30.3-1 "NET/IB : Remote %s device is incompatible with the local
      // [%d]%s:%d/%s. Try selecting NICs of only one link type using NCCL_IB_HCA"
      {W("NET/IB : Remote IB device is incompatible with the local [0]mlx5_2:1/RoCE. Try "
         "selecting NICs of only one link type using NCCL_IB_HCA"),
       "nccl.ib_remote_incompatible",
       {{"remote_link", "IB"},
        {"ib_dev", "0"},
        {"dev", "mlx5_2"},
        {"port", "1"},
        {"local_link", "RoCE"}}},
      // v2.20.3-1 .. v2.23.4-1 WARN "NET/IB : Local mergedDev=%s has a different number of
      // devices=%d as remoteDev=%s nRemDevs=%d"; "... mergedDev %s has a different number of
      // devices=%d as remote %s %d" (WARN v2.20.3-1 .., INFO v2.24.3-1 .. v2.30.3-1)
      {W("NET/IB : Local mergedDev=mlx5_0+mlx5_1 has a different number of devices=2 as "
         "remoteDev=mlx5_0 nRemDevs=1"),
       "nccl.ib_merged_dev_mismatch",
       {{"dev", "mlx5_0+mlx5_1"}, {"ndevs", "2"}, {"remote_dev", "mlx5_0"}, {"remote_ndevs", "1"}}},
      {I("NET/IB : Local mergedDev mlx5_0+mlx5_1 has a different number of devices=2 as remote "
         "mlx5_0 1"),
       "nccl.ib_merged_dev_mismatch",
       {{"dev", "mlx5_0+mlx5_1"}, {"ndevs", "2"}, {"remote_dev", "mlx5_0"}, {"remote_ndevs", "1"}}},
      // net_ib.cc v2.3.7-1 .. v2.30.3-1 "NET/IB : Unable to open device %s", "... query device
      // %s"; "... query port %d" (.. v2.19.1-1), "... query port_num %d" (v2.20.3-1 ..)
      {W("NET/IB : Unable to open device mlx5_3"),
       "nccl.ib_device_unusable",
       {{"what", "open device"}, {"dev", "mlx5_3"}}},
      {W("NET/IB : Unable to query device mlx5_3"),
       "nccl.ib_device_unusable",
       {{"what", "query device"}, {"dev", "mlx5_3"}}},
      {W("NET/IB : Unable to query port 1"),
       "nccl.ib_device_unusable",
       {{"what", "query port"}, {"dev", "1"}}},
      {W("NET/IB : Unable to query port_num 1"),
       "nccl.ib_device_unusable",
       {{"what", "query port_num"}, {"dev", "1"}}},
      // misc/ibvwrap.cc WARN v2.4.8-1 .. v2.10.3-1, INFO v2.11.4-1 .. (ibvsymbols.cc from
      // v2.18.1-1) "Failed to open libibverbs.so[.1]"
      {W("Failed to open libibverbs.so[.1]"), "nccl.no_libibverbs", {}},
      {I("Failed to open libibverbs.so[.1]"), "nccl.no_libibverbs", {}},
      // v2.20.5-1 .. v2.22.3-1: "NET/IB : %s:%d Got async event : %s"
      {W("NET/IB : mlx5_2:1 Got async event : port error"),
       "nccl.ib_port_error",
       {{"dev", "mlx5_2"}, {"port", "1"}}},
      // v2.23.4-1 .. v2.27.7-1: "NET/IB : %s:%d Got async error event: %s"
      {W("NET/IB : mlx5_2:1 Got async error event: port error"),
       "nccl.ib_port_error",
       {{"dev", "mlx5_2"}}},
      {W("NET/IB : mlx5_2:1 Got async error event: path migration request error"),
       "nccl.ib_async_error_event",
       {{"event", "path migration request error"}}},
      // v2.28.9-1: "NET/IB : %s:%d Got non-fatal async event: %s(%d)"
      {W("NET/IB : mlx5_2:1 Got non-fatal async event: port error(10)"),
       "nccl.ib_port_error",
       {{"dev", "mlx5_2"}, {"port", "1"}}},
      {W("NET/IB : mlx5_2:1 Got non-fatal async event: port active(9)"),
       "nccl.ib_async_event",
       {{"event", "port active(9)"}}},
      // v2.23.4-1 .. v2.28.9-1: fatal events
      {W("NET/IB : mlx5_0:1 async fatal event: local catastrophic error"),
       "nccl.ib_event_device_fatal",
       {{"dev", "mlx5_0"}, {"port", "1"}}},
      {W("NET/IB : mlx5_0:1 async fatal event on QP (0x7f3a2c001b40): local access violation "
         "work queue error"),
       "nccl.ib_event_qp_access_error",
       {{"dev", "mlx5_0"}}},
      // v2.23.4-1 .. v2.27.7-1: IBV_EVENT_GID_CHANGE falls to "%s:%d unknown event type (%d)"
      {W("NET/IB : mlx5_0:1 unknown event type (18)"),
       "nccl.ib_event_gid_change_unknown",
       {{"dev", "mlx5_0"}, {"port", "1"}}},
      // v2.20.5-1 .. v2.22.3-1
      {W("NET/IB : mlx5_1:1 Got async event : GID table change"),
       "nccl.ib_event_gid_change",
       {{"dev", "mlx5_1"}}},
      {W("NET/IB : mlx5_0:1 async fatal event on QP (0x7f3a2c001b40): local work queue "
         "catastrophic error"),
       "nccl.ib_async_fatal",
       {{"object", "QP"}, {"event", "local work queue catastrophic error"}}},
      // net_ib/common.cc v2.30.7-1: the QP variant carries the QP's state
      {W("NET/IB : mlx5_0:1 async fatal event on QP (0x7f3a2c001b40) qpn=4711 handle=3 send_cq=1 "
         "recv_cq=2 state=6 sq_psn=100 rq_psn=200: local work queue catastrophic error"),
       "nccl.ib_async_fatal",
       {{"object", "QP"}, {"event", "local work queue catastrophic error"}}},
      // net_ib/common.h v2.30.7-1
      {I("HINT: In many cases this error occurs when ACS is enabled which would break GPU Direct "
         "RDMA protocol."),
       "nccl.ib_hint",
       {{"hint", "ACS is enabled which would break GPU Direct RDMA protocol"}}},
      {I("HINT: In many cases this error occurs when the NCCL_IB_TIMEOUT is set too short."),
       "nccl.ib_hint",
       {{"hint", "the NCCL_IB_TIMEOUT is set too short"}}},
      // v2.28.9-1: "NET/IB : %s:%d GID table changed"
      {W("NET/IB : mlx5_0:1 GID table changed"),
       "nccl.ib_gid_changed",
       {{"dev", "mlx5_0"}, {"port", "1"}}},
  };
}
TEST_CASE("IB async event rows cover the 2.10, 2.20, 2.23 and 2.28 event formats") {
  CheckCases(IbAsyncEventsCases());
}

std::vector<RowCase> VerbsCases() {
  return {
      // ibvwrap.cc v2.18.3-1 IBV_PTR_CHECK_ERRNO: "Call to " name " failed with error %s"
      {W("Call to ibv_reg_mr failed with error Cannot allocate memory"),
       "nccl.ibv_reg_mr_enomem",
       {{"call", "ibv_reg_mr"}}},
      {W("Call to ibv_reg_dmabuf_mr failed with error Cannot allocate memory"),
       "nccl.ibv_reg_mr_enomem",
       {{"call", "ibv_reg_dmabuf_mr"}}},
      {W("Call to ibv_reg_mr_iova2 failed with error Bad address"),
       "nccl.ibv_reg_mr",
       {{"call", "ibv_reg_mr_iova2"}, {"error", "Bad address"}}},
      // v2.18.3-1 IBV_INT_CHECK_RET_ERRNO: "Call to ibv_modify_qp failed with error %s"
      {W("Call to ibv_modify_qp failed with error Connection timed out"),
       "nccl.ibv_modify_qp",
       {{"error", "Connection timed out"}}},
      // v2.24.3-1 .. v2.28.9-1 wrap_ibv_modify_qp
      {W("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state "
         "INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote GID "
         "fe80::ba59:9f03:c0:12"),
       "nccl.ibv_modify_qp",
       {{"errno", "110"},
        {"error", "Connection timed out"},
        {"dev", "mlx5_0"},
        {"qp_next_state", "RTR"},
        {"gid_index", "3"},
        {"remote_gid", "fe80::ba59:9f03:c0:12"}}},
      // v2.28.9-1 IBV_PTR_CHECK_ERRNO for ibv_create_qp / IBV_INT_CHECK_RET_ERRNO " errno %d"
      {W("Call to ibv_create_qp failed with error Cannot allocate memory"),
       "nccl.ibv_create",
       {{"call", "ibv_create_qp"}, {"error", "Cannot allocate memory"}}},
      {W("Call to ibv_create_cq failed with error Invalid argument errno 22"),
       "nccl.ibv_create",
       {{"call", "ibv_create_cq"}, {"errno", "22"}}},
      // libfabric prov/efa/src/efa_mr.c (1.19)
      {"libfabric:15409:1705531788::efa:mr:efa_mr_reg_impl():850<warn> Unable to register MR: "
       "Cannot allocate memory",
       "libfabric.efa_mr_enomem",
       {{"call", "efa_mr_reg_impl"}}},
      // libfabric verbs_ep.c (1.14) and other ENOMEM warnings
      {"libfabric:22102:1638393161:verbs:ep_ctrl:vrb_ep_enable():884<warn> rdma_create_qp: Cannot "
       "allocate memory (12)",
       "libfabric.verbs_create_qp_enomem",
       {{"errno", "12"}}},
      {"Libfabric error: (-12) Cannot allocate memory", "libfabric.enomem", {}},
      // Open MPI help-mpi-btl-openib.txt (4.1)
      {"WARNING: It appears that your OpenFabrics subsystem is configured to only",
       "openmpi.openib_reg_limit",
       {}},
      // bash ulimit.def: a finite limit is a symptom, unlimited only the fact
      {"max locked memory       (kbytes, -l) 64",
       "os.ulimit_memlock_small",
       {{"memlock_kb", "64"}}},
      {"max locked memory       (kbytes, -l) unlimited",
       "os.ulimit_memlock",
       {{"memlock_kb", "unlimited"}}},
      // UCX ib_mlx5_log.c (1.10) and rc_verbs_iface.c with ibv_wc_status_str()
      {"[master:19548:0:19548] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB "
       "(synd 0x15 vend 0x81 hw_synd 0/0)",
       "ucx.retry_exceeded",
       {{"hca", "mlx5_0"}, {"port", "1"}, {"link", "IB"}}},
      {"[jazz22:93644:0:93644] rc_verbs_iface.c:63   FATAL: send completion with error: transport "
       "retry counter exceeded",
       "ucx.retry_exceeded",
       {}},
      // misc/ibvwrap.cc v2.18.3-1 "Call to ibv_create_cq failed with error %s": ENOMEM is memlock
      {W("Call to ibv_create_cq failed with error Cannot allocate memory"),
       "nccl.ibv_create_cq_enomem",
       {{"call", "ibv_create_cq"}}},
      {W("Call to ibv_create_cq failed with error Cannot allocate memory errno 12"),
       "nccl.ibv_create_cq_enomem",
       {{"call", "ibv_create_cq"}}},
      // net_ib.cc v2.10.3-1 .. v2.28.9-1
      {W("NET/IB : No IP interface found."), "nccl.ib_no_ip_interface", {}},
      // net_ib.cc v2.26.6-1
      {W("NET/IB : Attempted to connect incompatible devices: [0]mlx5_0:1/IB and [1]mlx5_4:1/RoCE. "
         "Try selecting NICs of only one link type using NCCL_IB_HCA"),
       "nccl.ib_incompatible_devices",
       {{"link_a", "IB"}, {"link_b", "RoCE"}, {"dev_b", "mlx5_4"}}},
  };
}
TEST_CASE("verbs wrapper rows: reg_mr ENOMEM, modify_qp with and without GID detail, create") {
  CheckCases(VerbsCases());
}

std::vector<RowCase> IbFactsCases() {
  return {
      // net_ib.cc v2.10.3-1: "NET/IB : Using%s ; OOB %s:%s"
      {I("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.1.0.7<0>"),
       "nccl.ib_using",
       {{"devices", " [0]mlx5_0:1/IB [1]mlx5_1:1/IB"},
        {"oob_if", "ib0"},
        {"oob_addr", "10.1.0.7<0>"}}},
      // v2.12.12-1 .. v2.28.9-1: "NET/IB : Using%s %s; OOB %s:%s" ("[RO]" when relaxed ordering)
      {I("NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"),
       "nccl.ib_using",
       {{"devices", " [0]mlx5_0:1/RoCE"}, {"oob_if", "eth0"}}},
      {I("NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>"),
       "nccl.ib_using",
       {{"oob_addr", "10.0.0.1<0>"}}},
      // v2.18.3-1: "NET/IB: Dev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX)" (a link-local GID)
      {I("NET/IB: Dev 0 Port 1 qpn 4711 mtu 5 GID 0 (80FE/1200C0039F59BA)"),
       "nccl.ib_qp_info",
       {{"ib_dev", "0"}, {"mtu", "5"}, {"gid_index", "0"}, {"gid_prefix", "80FE"}}},
      // v2.19.4-1: "... mtu %d query_ece={...} GID %ld (%lX/%lX)"
      {I("NET/IB: Dev 1 Port 1 qpn 87 mtu 3 query_ece={supported=1, vendor_id=0x15b3, "
         "options=0x30000002, comp_mask=0x0} GID 3 (0/100000AFFFF0000)"),
       "nccl.ib_qp_info",
       {{"ib_dev", "1"}, {"mtu", "3"}, {"gid_index", "3"}}},
      // v2.22.3-1 (IB): "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d LID %d subnet-prefix %lu
      // FLID %d fifoRkey=0x%x fifoLkey=0x%x"
      {I("NET/IB: NCCL Dev 2 IbDev 2 Port 1 qpn 1063 mtu 5 LID 17 subnet-prefix "
         "18338657682652659712 "
         " FLID 0 fifoRkey=0x1fe7e fifoLkey=0x1fe7e"),
       "nccl.ib_qp_info",
       {{"nccl_dev", "2"}, {"ib_dev", "2"}, {"lid", "17"}, {"mtu", "5"}}},
      // v2.27.7-1 (RoCE): "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX) fifoRkey"
      {I("NET/IB: NCCL MergedDev 0 IbDev 1 Port 1 qpn 301 mtu 4 GID 3 (0/201000AFFFF0000) "
         "fifoRkey=0x2000 fifoLkey=0x2000"),
       "nccl.ib_qp_info",
       {{"nccl_dev", "0"}, {"gid_index", "3"}, {"gid_iid", "201000AFFFF0000"}}},
  };
}
TEST_CASE("IB fact rows: NET/IB : Using with its OOB interface, and the per-QP MTU/GID lines") {
  CheckCases(IbFactsCases());
}

std::vector<RowCase> ShmCases() {
  return {
      // checks.h SYSCHECK in shm.h v2.10.3-1 / shmutils.cc v2.18.3-1
      {W("Call to posix_fallocate failed : No space left on device"),
       "nccl.shm_fallocate",
       {{"error", "No space left on device"}}},
      // shmutils.cc v2.12.12-1 "Error: failed to extend %s to %d bytes"
      {W("Error: failed to extend /dev/shm/nccl-Ab12Cd to 9637892 bytes"),
       "nccl.shm_extend",
       {{"segment", "/dev/shm/nccl-Ab12Cd"}, {"size", "9637892"}}},
      // v2.22.3-1 .. v2.28.9-1 "..., error: %s (%d)"
      {W("Error: failed to extend /dev/shm/nccl-Ab12Cd to 33030148 bytes, error: No space left on "
         "device (28)"),
       "nccl.shm_extend",
       {{"errno", "28"}, {"error", "No space left on device"}}},
      // shm.h v2.10.3-1: "Error while %s shared memory segment %s (size %d)"
      {W("Error while creating shared memory segment /dev/shm/nccl-XyZ (size 9637888)"),
       "nccl.shm_segment",
       {{"action", "creating"}, {"size", "9637888"}}},
      {W("Error while attaching to shared memory segment /dev/shm/nccl-XyZ (size 9637888), error: "
         "No such file or directory (2)"),
       "nccl.shm_segment",
       {{"action", "attaching to"}, {"errno", "2"}}},
      // shmutils.cc v2.24.3-1
      {W("Error: failed to create shared memory file /dev/shm/nccl-XyZ, error Permission denied "
         "(13)"),
       "nccl.shm_create_file",
       {{"errno", "13"}}},
      // shmutils.cc v2.12.12-1 and v2.22.3-1
      {W("Could not map /dev/shm/nccl-XyZ"), "nccl.shm_map", {{"segment", "/dev/shm/nccl-XyZ"}}},
      {W("Error: Could not map /dev/shm/nccl-XyZ size 4194304, error: Bus error (7)"),
       "nccl.shm_map",
       {{"size", "4194304"}, {"errno", "7"}}},
      // shm.h v2.10.3-1 SYSCHECKVAL(shm_open(...), "shm_open", fd)
      {W("Call to shm_open failed : Permission denied"), "nccl.shm_open", {}},
      // cudawrap.cc v2.26.6-1
      {I("cuMem host allocations do not appear to be working; falling back to a /dev/shm/ based "
         "implementation. This could be due to the container runtime disabling NUMA support. To "
         "disable this warning, set NCCL_CUMEM_HOST_ENABLE=0"),
       "nccl.cumem_host_fallback",
       {}},
  };
}
TEST_CASE("shared memory rows cover shm.h, shmutils.cc (three layouts) and the cuMem fallback") {
  CheckCases(ShmCases());
}

std::vector<RowCase> SocketErrorsCases() {
  return {
      // include/socket.h v2.10.3-1: "Net : Connect to %s failed : %s"
      {W("Net : Connect to 10.0.0.2<43125> failed : Connection refused"),
       "nccl.socket_connect_refused",
       {{"peer", "10.0.0.2<43125>"}, {"error", "Connection refused"}}},
      // misc/socket.cc v2.18.3-1: "socketStartConnect: Connect to %s failed : %s"
      {W("socketStartConnect: Connect to 172.17.0.2<51377> failed : Network is unreachable"),
       "nccl.socket_connect",
       {{"peer", "172.17.0.2<51377>"}, {"error", "Network is unreachable"}}},
      {W("socketStartConnect: Connect to 10.0.0.2<51377> failed : No route to host"),
       "nccl.socket_connect",
       {{"error", "No route to host"}}},
      // v2.20.5-1: "socketPollConnect: Connect to %s returned %d(%s) errno %d(%s)"
      {W("socketPollConnect: Connect to 10.0.0.2<51377> returned 111(Connection refused) errno "
         "115(Operation now in progress)"),
       "nccl.socket_connect_refused",
       {{"peer", "10.0.0.2<51377>"}}},
      // v2.24.3-1: "%s: Connect to %s failed : %s"
      {W("socketPollConnect: Connect to 10.0.0.2<51377> failed : Connection timed out"),
       "nccl.socket_connect",
       {{"error", "Connection timed out"}}},
      // v2.27.7-1: "%s: connect to %s failed : %s" / "... returned %s, exceeded error retry count
      // after %d attempts"
      {W("socketPollConnect: connect to 10.0.0.2<51377> failed : Connection timed out"),
       "nccl.socket_connect",
       {{"peer", "10.0.0.2<51377>"}}},
      {W("socketPollConnect: connect to 10.0.0.2<51377> returned Connection refused, exceeded "
         "error retry count after 35 attempts"),
       "nccl.socket_connect_refused",
       {{"error", "Connection refused"}}},
      // v2.24.3-1: "%s: connect returned %s, exceeded error retry count (%d)"
      {W("socketPollConnect: connect returned Connection timed out, exceeded error retry count "
         "(35)"),
       "nccl.socket_retries_exceeded",
       {{"function", "socketPollConnect"}, {"error", "Connection timed out"}}},
      // v2.16.5-1: "socketStartConnect: exceeded retries (%d)"
      {W("socketStartConnect: exceeded retries (34)"),
       "nccl.socket_connect_exhausted",
       {{"what", "retries"}, {"count", "34"}}},
      // v2.10.3-1 "Net : Socket creation failed : %s", v2.18.3-1 "ncclSocketInit: ..."
      {W("Net : Socket creation failed : Address family not supported by protocol"),
       "nccl.socket_create",
       {{"error", "Address family not supported by protocol"}}},
      {W("ncclSocketInit: Socket creation failed : Too many open files"), "nccl.socket_create", {}},
      // v2.18.3-1 "ncclSocketInit: connecting to address %s with family %d is neither AF_INET(%d)
      // nor AF_INET6(%d)"
      {W("ncclSocketInit: connecting to address  with family 0 is neither AF_INET(2) nor "
         "AF_INET6(10)"),
       "nccl.socket_bad_family",
       {{"family", "0"}}},
      {W("Net : connecting to address 10.0.0.9<0> with family 25600 is neither AF_INET(2) nor "
         "AF_INET6(10)"),
       "nccl.socket_bad_family",
       {{"peer", "10.0.0.9<0>"}, {"family", "25600"}}},
      // v2.18.3-1 "Net : No interface found in the same subnet as remote address %s"
      {W("Net : No interface found in the same subnet as remote address 10.9.0.1<29500>"),
       "nccl.socket_no_subnet",
       {{"peer", "10.9.0.1<29500>"}}},
      // bootstrap.cc v2.10.3-1 .. v2.28.9-1
      {W("NET/Socket : No usable listening interface found"), "nccl.no_interface", {}},
      {W("Bootstrap : no socket interface found"), "nccl.no_socket_interface", {}},
      // net_socket.cc v2.10.3-1 .. v2.28.9-1
      {W("NET/Socket : no interface found"), "nccl.net_socket_no_interface", {}},
      // bootstrap.cc v2.23.4-1 and v2.24.3-1
      {W("no device found matching NCCL_OOB_NET_IFNAME=ib9, ignoring"), "nccl.oob_no_device", {}},
      {W("no device found matching ib9, verify NCCL_OOB_NET_IFNAME"), "nccl.oob_no_device", {}},
      // socket.h v2.10.3-1 "Net : Connection closed by remote peer %s", socket.cc v2.18.3-1
      {W("Net : Connection closed by remote peer 10.0.0.2<34567>"),
       "nccl.socket_closed_by_peer",
       {{"peer", "10.0.0.2<34567>"}}},
      {W("socketProgress: Connection closed by remote peer gpu08.cluster<43712>"),
       "nccl.socket_closed_by_peer",
       {{"peer", "gpu08.cluster<43712>"}}},
      // socket.h v2.10.3-1, socket.cc v2.18.3-1, v2.24.3-1 ("Call to %s %s failed : %s")
      {W("Net : Call to recv from 10.0.0.2<34567> failed : Connection reset by peer"),
       "nccl.socket_io_failed",
       {{"direction", "recv from"}, {"error", "Connection reset by peer"}}},
      {W("socketProgressOpt: Call to recv from 10.0.0.2<34567> failed : Connection timed out"),
       "nccl.socket_io_failed",
       {{"peer", "10.0.0.2<34567>"}}},
      {W("socketProgressOpt: Call to send to 10.0.0.2<34567> failed : Broken pipe"),
       "nccl.socket_io_failed",
       {{"direction", "send to"}, {"error", "Broken pipe"}}},
      // net_socket.cc v2.10.3-1 and v2.18.3-1 (with the advice appended)
      {W("NET/Socket : peer 10.0.0.2<34567> message truncated : receiving 1048576 bytes instead of "
         "65536"),
       "nccl.net_socket_truncated",
       {{"received", "1048576"}, {"expected", "65536"}}},
      {W("NET/Socket : peer 10.0.0.2<34567> message truncated : receiving 4096 bytes instead of "
         "2048. If you believe your socket network is in healthy state, there may be a mismatch in "
         "collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks"),
       "nccl.net_socket_truncated",
       {{"peer", "10.0.0.2<34567>"}}},
      // include/socket.h v2.3.7-1: "NET : Using interface %s:%s"
      {I("NET : Using interface lo:127.0.0.1<0>"), "nccl.loopback_interface", {}},
  };
}
TEST_CASE("socket rows cover the connect formats of 2.10, 2.16, 2.20, 2.24 and 2.27") {
  CheckCases(SocketErrorsCases());
}

std::vector<RowCase> SocketFactsCases() {
  return {
      // bootstrap.cc v2.18.3-1 "Bootstrap : Using%s" with " %s:" + "addr<port>"
      {I("Bootstrap : Using docker0:172.17.0.1<0>"),
       "nccl.bootstrap_using",
       {{"ifname", "docker0"}, {"addr", "172.17.0.1"}, {"port", "0"}}},
      // v2.24.3-1 "Bootstrap: Using%s" and the OOB net device "Bootstrap: Using %s:%d"
      {I("Bootstrap: Using ens5:10.0.3.17<0>"),
       "nccl.bootstrap_using",
       {{"ifname", "ens5"}, {"addr", "10.0.3.17"}}},
      {I("Bootstrap: Using mlx5_0:1"),
       "nccl.bootstrap_using",
       {{"ifname", "mlx5_0"}, {"addr", "1"}}},
      // Before 2.10 the bootstrap line lists the interfaces as NET/Socket does.
      {I("Bootstrap : Using [0]ens5:172.31.0.137<0> [1]veth75fa783:fe80::14ad:64ff:fe64:b31e%"
         "veth75fa783<0>"),
       "nccl.bootstrap_using",
       {{"ifname", "ens5"},
        {"addr", "172.31.0.137"},
        {"interfaces", " [1]veth75fa783:fe80::14ad:64ff:fe64:b31e%veth75fa783<0>"}}},
      // socket.h v2.3.7-1 "NET : Using interface %s:%s" (socketToString: "addr<port>").
      {I("NET : Using interface br0:10.9.22.33<0>"),
       "nccl.net_using_interface",
       {{"ifname", "br0"}, {"addr", "10.9.22.33"}}},
      {I("NET : Using interface bond0:fe80::ec4:7aff:feb3:29d6%bond0<0>"),
       "nccl.net_using_interface",
       {{"ifname", "bond0"}, {"addr", "fe80::ec4:7aff:feb3:29d6%bond0"}}},
      // net_socket.cc v2.10.3-1 .. v2.28.9-1 "NET/Socket : Using%s" with " [%d]%s:%s"
      {I("NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>"),
       "nccl.socket_using",
       {{"ifname", "eth0"}, {"addr", "10.0.0.1"}}},
      // misc/socket.cc v2.18.3-1
      {I("NCCL_SOCKET_IFNAME set to ib0"), "nccl.socket_ifname_set", {{"value", "ib0"}}},
      // SYSCHECK's "Call to bind failed : %s" (misc/socket.cc v2.12.12-1 .. v2.29.3-1)
      {W("Call to bind failed : Cannot assign requested address"),
       "nccl.socket_bind_addr_unavailable",
       {{"error", "Cannot assign requested address"}}},
      {W("Call to bind failed : Address already in use"),
       "nccl.socket_bind_in_use",
       {{"error", "Address already in use"}}},
      // misc/nvmlwrap.cc v2.3.7-1 .. v2.11.4-1 "nvmlInit() failed: %s"; v2.12.7-1 .. v2.30.3-1
      // "nvmlInit%s() failed: %s", "nvmlDeviceGetHandleByIndex(%d) failed: %s", ...
      {W("nvmlInit() failed: Driver/library version mismatch"),
       "nccl.nvml_failed",
       {{"function", "nvmlInit"}, {"error", "Driver/library version mismatch"}}},
      {W("nvmlInit_v2() failed: Driver/library version mismatch"),
       "nccl.nvml_failed",
       {{"function", "nvmlInit_v2"}, {"error", "Driver/library version mismatch"}}},
      {W("nvmlDeviceGetHandleByIndex(3) failed: Unknown Error"),
       "nccl.nvml_failed",
       {{"function", "nvmlDeviceGetHandleByIndex"}, {"error", "Unknown Error"}}},
      // include/nvmlwrap.h v2.3.7-1 .. v2.11.4-1 NVMLCHECK "NVML failure '%s'"
      {W("NVML failure 'GPU is lost'"), "nccl.nvml_failure", {{"error", "GPU is lost"}}},
      // misc/cudawrap.cc v2.13.4-1 .. v2.20.3-1
      {W("Failed to find CUDA library libcuda.so (NCCL_CUDA_PATH='') : libcuda.so: cannot open "
         "shared object file: No such file or directory"),
       "nccl.cuda_library_missing",
       {{"library", "libcuda.so"},
        {"cuda_path", ""},
        {"error", "libcuda.so: cannot open shared object file: No such file or directory"}}},
      {W("cuDriverGetVersion failed with 999"),
       "nccl.cuda_driver_version_failed",
       {{"cuda_code", "999"}}},
      // misc/gdrwrap.cc v2.9.6-1 .. v2.30.3-1; include/gdrwrap.h GDRCHECK
      {W("gdr_pin_buffer(addr 7f3a2c000000, size 2097152) failed: -22"),
       "nccl.gdrcopy_failed",
       {{"size", "2097152"}, {"code", "-22"}}},
      {W("GDRCOPY failure -22"), "nccl.gdrcopy_failure", {{"code", "-22"}}},
      // mnnvl.cc v2.25.1-1 .. v2.26.2-1
      {W("MNNVL (cliqueSize 4) is available but not supported on this system. Check the IMEX "
         "configuration."),
       "nccl.mnnvl_unsupported",
       {{"clique_size", "4"}}},
      // include/alloc.h v2.3.7-1 .. v2.30.3-1
      {W("Failed to malloc 1048576 bytes"), "nccl.host_malloc_failed", {{"size", "1048576"}}},
      // graph/xml.cc v2.6.4-1 .. v2.30.3-1 "XML Topology has wrong version %d, %d needed", "XML
      // Graph has wrong version %d, %d needed"
      {W("XML Topology has wrong version 1, 2 needed"),
       "nccl.xml_wrong_version",
       {{"what", "Topology"}, {"version", "1"}, {"needed", "2"}}},
      {W("XML Graph has wrong version 1, 2 needed"), "nccl.xml_wrong_version", {{"what", "Graph"}}},
      // dev_runtime.cc v2.29.2-1 "NCCL library version is too old. This application was compiled
      // with NCCL version %d, but is running with NCCL library version %d."; v2.30.3-1 "NCCL
      // library is too old. ... version %s, ... version %s."
      {W("NCCL library version is too old. This application was compiled with NCCL version "
         "22902, but is running with NCCL library version 22803."),
       "nccl.library_too_old",
       {{"compiled_version", "22902"}, {"runtime_version", "22803"}}},
      {W("NCCL library is too old. This application was compiled with NCCL version 2.30.3, but "
         "is running with NCCL library version 2.29.2."),
       "nccl.library_too_old",
       {{"compiled_version", "2.30.3"}, {"runtime_version", "2.29.2"}}},
      // init.cc v2.10.3-1 .. v2.15.1-1
      {W("The installed CUDA driver is older than the minimum version (R465) required for "
         "NCCL's CUDA Graphs support"),
       "nccl.cuda_graph_driver_old",
       {}},
      // net.cc v2.19.1-1 .. v2.25.1-1, plugin/net.cc v2.26.2-1 .. v2.30.3-1
      {W("NCCL_DEVICE_UNPACK plugin has incompatible version 1, this NCCL build is compatible "
         "with 2, not using it"),
       "nccl.plugin_incompatible_version",
       {{"plugin", "NCCL_DEVICE_UNPACK"}, {"plugin_version", "1"}, {"nccl_version_api", "2"}}},
      // net.cc v2.13.4-1 .. v2.18.1-1 and v2.19.1-1 .. v2.25.1-1; the per-version probe line is
      // the generic plugin row's
      {I("NET/Plugin: Failed to find ncclNetPlugin symbol (v4 or v5)."),
       "nccl.net_plugin_no_version",
       {{"versions", "v4 or v5"}}},
      {I("NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols v4 and "
         "lower are not supported."),
       "nccl.net_plugin_no_version",
       {{"versions", ">= v5"}}},
      {I("NET/Plugin: Failed to find ncclNetPlugin_v8 symbol."), "nccl.net_plugin", {}},
      // graph/xml.h v2.6.4-1 WARN "KV Convert to int : could not find value of '%s' in
      // dictionary"; the INFO of v2.7.3-1 .. v2.30.3-1 adds ", falling back to %d" and is no
      // failure (no row)
      {W("KV Convert to int : could not find value of '0x060000' in dictionary"),
       "nccl.xml_kv_unknown",
       {{"value", "0x060000"}}},
      // graph/xml.cc v2.10.3-1 .. v2.29.3-1 "Could not find real path of %s"
      {I("Could not find real path of /sys/class/net/br0/device"),
       "nccl.net_virtual_interface",
       {{"ifname", "br0"}}},
      // misc/socket.cc via the environment echo (the generic env row takes it first)
      {I("NCCL_SOCKET_IFNAME set by environment to ^docker0,lo"),
       "nccl.env_set",
       {{"variable", "NCCL_SOCKET_IFNAME"}, {"value", "^docker0,lo"}}},
      // misc/param.cc v2.18.3-1 "%s set by environment to %lld."
      {I("NCCL_IB_GID_INDEX set by environment to 3."),
       "nccl.env_set",
       {{"variable", "NCCL_IB_GID_INDEX"}, {"value", "3"}}},
  };
}
TEST_CASE("socket and bootstrap fact rows give the interface and address in use") {
  CheckCases(SocketFactsCases());
}

std::vector<RowCase> InitCases() {
  return {
      // init.cc v2.18.3-1 "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx"
      {W("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000"),
       "nccl.duplicate_gpu",
       {{"rank_a", "1"}, {"rank_b", "0"}, {"cuda_dev", "1b000"}}},
      // init.cc v2.23.4-1 .. v2.28.9-1
      {W("Mismatched NCCL version detected : rank 8 version 22105 rank 0 version 22304"),
       "nccl.version_mismatch",
       {{"version_a", "22105"}, {"version_b", "22304"}}},
      // cudawrap.cc v2.13.4-1 .. v2.28.9-1
      {W("CUDA Driver version found is 11040. Minimum requirement is 12000"),
       "nccl.cuda_driver_too_old",
       {{"cuda_driver", "11040"}, {"cuda_driver_min", "12000"}}},
      // bootstrap.cc v2.18.3-1 and v2.28.9-1
      {W("Message truncated : received 4096 bytes instead of 256"),
       "nccl.bootstrap_truncated",
       {{"received", "4096"}, {"expected", "256"}}},
      {W("Message truncated : received 64,0 bytes instead of 56,0"),
       "nccl.bootstrap_truncated",
       {{"received", "64,0"}}},
      {W("Bootstrap Root : mismatch in rank count from procs 8 : 16"),
       "nccl.bootstrap_root_mismatch",
       {{"nranks_a", "8"}, {"nranks_b", "16"}}},
      {W("Bootstrap Root : mismatch in info from procs, nranks 16 vs 8, nroots 1 vs 1, iroot 0 "
         "vs 0"),
       "nccl.bootstrap_root_mismatch",
       {{"nranks_a", "16"}}},
      // proxy.cc v2.14.3-1 "Proxy Call to rank %d failed (%s)"
      {W("Proxy Call to rank 0 failed (Connect)"),
       "nccl.proxy_call_failed",
       {{"peer_rank", "0"}, {"op", "Connect"}}},
      // proxy.cc v2.18.3-1
      {W("[Proxy Service 3] Failed to execute operation Connect from rank 11, retcode 6"),
       "nccl.proxy_op_failed",
       {{"op", "Connect"}, {"peer_rank", "11"}, {"retcode", "6"}}},
      {W("[Service thread] Error encountered progressing operation=Connect, res=3, closing "
         "connection"),
       "nccl.proxy_progress_error",
       {{"op", "Connect"}, {"retcode", "3"}}},
      // init.cc v2.18.3-1
      {W("Attempt to use communicator before the previous operation returned ncclSuccess"),
       "nccl.comm_in_error_state",
       {}},
      // net.cc v2.18.3-1, plugin/net.cc v2.27.7-1
      {W("Error: network IB not found."), "nccl.net_not_found", {{"net", "IB"}}},
      {W("Failed to initialize any NET plugin"), "nccl.net_plugin_none", {}},
      // init.cc v2.18.3-1 VERSION_STRING on stdout and as INFO
      {"NCCL version 2.18.3+cuda12.2",
       "nccl.version",
       {{"nccl_version", "2.18.3"}, {"cuda_version", "12.2"}}},
      {I("NCCL version 2.21.5+cuda12.4"), "nccl.version", {{"nccl_version", "2.21.5"}}},
      {I("cudaDriverVersion 12040"), "nccl.cuda_driver_version", {{"cuda_driver", "12040"}}},
      // init.cc v2.10.3-1, v2.18.3-1, v2.28.9-1
      {I("comm 0x55d0c4b0b2e0 rank 3 nranks 16 cudaDev 3 busId 3f000 - Init COMPLETE"),
       "nccl.init_complete",
       {{"rank", "3"}, {"nranks", "16"}, {"cuda_dev", "3"}, {"bus_id", "3f000"}}},
      {I("comm 0x55d0c4b0b2e0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 3f000 commId "
         "0x5d2c3f9a0b1e4c7d - Init COMPLETE"),
       "nccl.init_complete",
       {{"nvml_dev", "3"}}},
      {I("ncclCommInitRankConfig comm 0x55d0c4b0b2e0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId "
         "18000 commId 0x5d2c3f9a0b1e4c7d - Init COMPLETE"),
       "nccl.init_complete",
       {{"rank", "0"}, {"bus_id", "18000"}}},
      // init.cc v2.19.3-1, v2.21.5-1, v2.23.4-1 (split: parent/color/key, no commId), v2.30.7-1
      {I("comm 0x55d0c4b0b2e0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 3f000 commId "
         "0x5d2c3f9a0b1e4c7d - Init START"),
       "nccl.init_start",
       {{"rank", "3"}, {"nranks", "16"}, {"bus_id", "3f000"}, {"comm_id", "0x5d2c3f9a0b1e4c7d"}}},
      {I("ncclCommInitRank comm 0x55d0c4b0b2e0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 100000 "
         "commId 0xaa9becea043c4e6c - Init START"),
       "nccl.init_start",
       {{"rank", "0"}, {"cuda_dev", "0"}, {"bus_id", "100000"}}},
      {I("ncclCommSplit comm 0x55d0c4b0b2e0 rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 1b000 "
         "parent 0x55d0c4a01230 color 2 key 1- Init START"),
       "nccl.init_start",
       {{"rank", "1"}, {"bus_id", "1b000"}, {"comm_id", ""}}},
      {I("[Rank 5] ncclCommInitRankConfig comm 0x55d0c4b0b2e0 rank 5 nranks 16 cudaDev 5 nvmlDev 5 "
         "busId 9c000 commId 0x5d2c3f9a0b1e4c7d - Init START"),
       "nccl.init_start",
       {{"rank", "5"}, {"nvml_dev", "5"}, {"bus_id", "9c000"}}},
  };
}
TEST_CASE("init, bootstrap and proxy rows, with the version and Init COMPLETE facts") {
  CheckCases(InitCases());
}

std::vector<RowCase> RasCases() {
  return {
      // ras/ras.cc v2.24.3-1 .. v2.28.9-1
      {W("NCCL version mismatch with remote peer 10.0.0.2<37119> (local: 22404, remote 22501)"),
       "nccl.ras_version_mismatch",
       {{"peer", "10.0.0.2<37119>"}, {"version_a", "22404"}, {"version_b", "22501"}}},
      // ras/peers.cc
      {I("RAS declaring peer 10.0.0.2<37119> as DEAD; rasDeadPeersHash 0x3c2e"),
       "nccl.ras_peer_dead",
       {{"peer", "10.0.0.2<37119>"}}},
      // ras/collectives.cc, ras/rasnet.cc
      {I("RAS collective 10.0.0.1<37119>:3 timeout error (10s) -- giving up on 2 missing "
         "responses"),
       "nccl.ras_timeout",
       {{"collective", "10.0.0.1<37119>:3"}, {"timeout_s", "10"}, {"missing", "2"}}},
      {I("RAS keep-alive timeout error (20s) on socket connection with 10.0.0.2<37119>"),
       "nccl.ras_timeout",
       {{"timeout_s", "20"}, {"peer", "10.0.0.2<37119>"}}},
      // ras/client_support.cc v2.24.3-1 ("collective") and v2.26.6-1 (%s = function name)
      {"  Communicator ranks have different collective operation counts",
       "nccl.ras_op_counts_differ",
       {}},
      {"  Communicator ranks have different AllReduce operation counts",
       "nccl.ras_op_counts_differ",
       {{"coll", "AllReduce "}}},
      {"  15 ranks have launched up to operation 6714",
       "nccl.ras_ranks_ops",
       {{"count", "15"}, {"opcount", "6714"}}},
      {"  Rank 9 has launched up to operation 6713 -- GPU 1 managed by process 48223 on node "
       "gpu08",
       "nccl.ras_rank_ops",
       {{"rank", "9"}, {"opcount", "6713"}, {"pid", "48223"}, {"host", "gpu08"}}},
      {"  Rank 4 has not launched any operations -- GPU 4 managed by process 1311 on node gpu02",
       "nccl.ras_rank_no_ops",
       {{"rank", "4"}, {"host", "gpu02"}}},
      {" Warning: missing data from 1 process (received from 15, expected 16)",
       "nccl.ras_missing_data",
       {{"missing", "1"}, {"expected", "16"}}},
  };
}
TEST_CASE("RAS rows: version mismatch, dead peers, timeouts and the ncclras report lines") {
  CheckCases(RasCases());
}

std::vector<RowCase> TopologyCases() {
  return {
      // graph/paths.cc v2.18.3-1, v2.21.5-1, v2.24.3-1
      {I("GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)"),
       "nccl.gdr_disabled",
       {{"gpu", "18000"}, {"hca", "0"}, {"distance", "5"}, {"gdr_level", "4"}}},
      {I("GPU Direct RDMA Disabled for GPU 3 / HCA 1a000 (distance 6 > 4)"),
       "nccl.gdr_disabled",
       {{"gpu", "3"}, {"hca", "1a000"}}},
      // net_ib.cc v2.12.12-1 "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)"
      {I("NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)"),
       "nccl.gdr_disabled",
       {{"hca_name", "mlx5_0"}, {"reason", "no module"}}},
      // paths.cc v2.18.3-1 and v2.26.6-1 (" mode %s")
      {I("GPU Direct RDMA Enabled for GPU 18000 / HCA 0 (distance 4 <= 4), read 1"),
       "nccl.gdr_enabled",
       {{"gpu", "18000"}, {"gdr_read", "1"}}},
      {I("GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 3 <= 4), read 1 mode Default"),
       "nccl.gdr_enabled",
       {{"gdr_mode", "Default"}}},
      // paths.cc v2.29.2-1: "GPU Direct RDMA %s for GPU/%ld-%ld (rank %d) - NET/%ld-%ld (...)"
      {I("GPU Direct RDMA Disabled for GPU/0-18000 (rank 3) - NET/0-1 (distance 6 > 4)"),
       "nccl.gdr_disabled",
       {{"gpu", "0-18000"}, {"rank", "3"}, {"hca", "0-1"}, {"distance", "6"}, {"gdr_level", "4"}}},
      {I("GPU Direct RDMA Disabled for GPU/0-18000 (rank 3) - NET/0-1 ( using PXN via GPU/0-3f000, "
         "distance 7 > 4)"),
       "nccl.gdr_disabled",
       {{"distance", "7"}}},
      {I("GPU Direct RDMA Enabled for GPU/0-18000 (rank 0) - NET/0-0 (distance 3 <= 4, read 1, "
         "mode Default)"),
       "nccl.gdr_enabled",
       {{"gpu", "0-18000"}, {"gdr_read", "1"}, {"gdr_mode", "Default"}}},
      {I("DMA-BUF is available on GPU device 2"), "nccl.dmabuf_available", {{"cuda_dev", "2"}}},
      // transport/net.cc v2.10.3-1 "Channel %02d : %d[%lx] -> %d[%lx] [send] via NET/%s/%d%s%s"
      {I("Channel 00 : 7[3f000] -> 8[18000] [send] via NET/IB/0/GDRDMA"),
       "nccl.channel_net_gdrdma",
       {{"channel", "00"}, {"from_rank", "7"}, {"to_rank", "8"}, {"net", "IB"}, {"net_dev", "0"}}},
      // v2.18.3-1 "Channel %02d/%d : %d[%d] -> %d[%d] [receive] via NET/%s/%d%s%s"
      {I("Channel 01/0 : 8[0] -> 7[7] [receive] via NET/IB/1"),
       "nccl.channel_net",
       {{"channel", "01"}, {"conn", "0"}, {"direction", "receive"}, {"net_dev", "1"}}},
      // v2.12.12-1 PXN "via NET/%s/%d(%d)%s%s" and v2.26.6-1 "/GDRDMA(PCI)" + "/Shared"
      {I("Channel 02/1 : 7[3f000] -> 15[18000] [send] via NET/IB/2(5)/GDRDMA"),
       "nccl.channel_net_gdrdma",
       {{"proxy_rank", "5"}}},
      {I("Channel 03/0 : 0[0] -> 8[0] [send] via NET/IB/3/GDRDMA(PCI)/Shared"),
       "nccl.channel_net_gdrdma",
       {{"net_dev", "3"}}},
      {I("Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0"),
       "nccl.channel_net",
       {{"net", "Socket"}}},
      {I("Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA"),
       "nccl.channel_net_gdrdma",
       {{"net", "AWS Libfabric"}}},
      // nccl-tests src/common.cu v2.13.0 "#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s",
      // v2.19.6 "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s"
      {"#   Rank  3 Pid  15833 on gpu-node-7 device  3 [0x83] GeForce GTX 1080 Ti",
       "nccltests.rank_device",
       {{"rank", "3"},
        {"pid", "15833"},
        {"host", "gpu-node-7"},
        {"cuda_dev", "3"},
        {"bus", "0x83"},
        {"gpu", "GeForce GTX 1080 Ti"}}},
      {"#  Rank 12 Group  0 Pid 402211 on   dgx-b07 device  4 [0000:9a:00] NVIDIA H100 80GB HBM3",
       "nccltests.rank_device",
       {{"rank", "12"}, {"group", "0"}, {"host", "dgx-b07"}, {"bus", "0000:9a:00"}}},
      // graph/paths.cc v2.18.3-1 (INFO and the NVLink WARN)
      {I("P2P is disabled between connected GPUs 0 and 1. You can repress this message with "
         "NCCL_IGNORE_DISABLED_P2P=1."),
       "nccl.p2p_disabled",
       {{"gpu_a", "0"}, {"gpu_b", "1"}}},
      {W("P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case given "
         "their connectivity, and is probably due to a hardware issue. If you still want to "
         "proceed, you can set NCCL_IGNORE_DISABLED_P2P=1."),
       "nccl.p2p_disabled_nvlink",
       {{"gpu_a", "1"}}},
      // transport/p2p.cc v2.18.3-1
      {I("Could not enable P2P between dev 0(=18000) and dev 1(=3f000)"),
       "nccl.p2p_not_enabled",
       {{"bus_b", "3f000"}}},
      // transport/p2p.cc v2.7.8-1 "failed to open CUDA IPC handle : %d %s"
      {W("failed to open CUDA IPC handle : 217 peer access is not "
         "supported between these two devices"),
       "nccl.p2p_ipc_open_failed",
       {{"cuda_err", "217"}, {"error", "peer access is not supported between these two devices"}}},
      {W("failed to peer with device 1(=3f000): 217 peer access is not supported between these "
         "two devices"),
       "nccl.peer_access_failed",
       {{"peer_dev", "1"},
        {"cuda_err", "217"},
        {"error",
         "peer access is not supported between "
         "these two devices"}}},
      // transport/nvls.cc v2.18.3-1 and v2.27.7-1 (" (NVLS_NCHANNELS %d)")
      {I("NVLS multicast support is not available on dev 0"),
       "nccl.nvls_support",
       {{"nvls_unavailable", "not "}, {"cuda_dev", "0"}}},
      {I("NVLS multicast support is available on dev 3 (NVLS_NCHANNELS 16)"),
       "nccl.nvls_support",
       {{"cuda_dev", "3"}}},
      // nvls.cc v2.27.7-1: the WARN (first line of its three) and the INFO fallback
      {W("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1073741824 : CUDA error 801 "
         "'operation not supported'."),
       "nccl.nvls_bind_failed",
       {{"cuda_err", "801"}, {"error", "operation not supported"}}},
      {I("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1073741824 : CUDA error 801 "
         "'operation not supported'. Proceeding without NVLS support."),
       "nccl.nvls_bind_skipped",
       {{"cuda_err", "801"}}},
      // include/checks.h + nvls.cc v2.18.3-1 (the existing NVLS CUDA failure row)
      {W("transport/nvls.cc:157 Cuda failure 'operation not supported'"),
       "nccl.nvls_cuda_failure",
       {{"error", "operation not supported"}}},
      // net.cc v2.18.3-1, v2.21.5-1, plugin/net/net_v8.cc v2.26.6-1; init.cc "Using network %s"
      {I("NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open "
         "shared object file: No such file or directory"),
       "nccl.net_plugin",
       {{"message",
         "Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: "
         "cannot open shared object file: No such file or directory"}}},
      {I("NET/Plugin: Using internal network plugin."),
       "nccl.net_plugin",
       {{"message", "Using internal network plugin."}}},
      {I("NET/Plugin: Loaded net plugin AWS Libfabric (v8)"),
       "nccl.net_plugin",
       {{"plugin_kind", "net"}, {"plugin", "AWS Libfabric"}, {"plugin_version", "v8"}}},
      {I("Using network IB"), "nccl.using_network", {{"net", "IB"}}},
  };
}
TEST_CASE("topology rows: GPU Direct RDMA, the NET channel transport with and without GDRDMA") {
  CheckCases(TopologyCases());
}

std::vector<RowCase> TorchC10dCases() {
  return {
      // ProcessGroupGloo monitoredBarrier (1.x text, then 2.x with its prefix).
      {"RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms",
       "torch.monitored_barrier_failed",
       {{"missing_rank", "1"}, {"timeout_ms", "2000"}}},
      {"[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 120000 ms",
       "torch.monitored_barrier_failed",
       {{"missing_rank", "1, 2"}}},
      // TraceUtils.h retrieveDesyncReport.
      {"[1] finished collective #1155873, but didn't join collective #1155874",
       "torch.desync_report",
       {{"ranks", "1"}, {"state", "finished"}, {"seq", "1155873"}}},
      {"   - [47] joined but didn't finish collective #41207 (count from 1)",
       "torch.desync_report",
       {{"ranks", "47"}, {"state", "joined but didn't finish"}}},
      {" - To our best knowledge, ranks [47] are the lagging ranks that caused this timeout.",
       "torch.desync_report_never_joined",
       {{"ranks", "47"}}},
      // accelerate utils/operations.py verify_operation.
      {"accelerate.utils.operations.DistributedOperationException: Cannot apply desired "
       "operation due to shape mismatches. All shapes across devices must be valid.",
       "accelerate.shape_mismatch",
       {}},
      // WorkNCCL's operator<< on a line of its own (the rest of the message wrapped away).
      {"WorkNCCL(SeqNum=12590, OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856,",
       "torch.worknccl_desc",
       {{"seq", "12590"},
        {"op", "_ALLGATHER_BASE"},
        {"numel_in", "1404928"},
        {"numel_out", "2809856"}}},
      {"[rank3]:   WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
       "Timeout(ms)=600000)",
       "torch.worknccl_desc",
       {{"rank", "3"}, {"seq", "1"}, {"op", "ALLREDUCE"}}},
      // c10d NCCLUtils getNcclErrorDetailStr() (1.13 NCCLUtils.hpp, 2.x NCCLUtils.cpp)
      {"ncclRemoteError: A call failed possibly due to a network error or a remote process "
       "exiting prematurely.",
       "torch.nccl_remote_error",
       {}},
      {"ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
       "device error. ",
       "torch.nccl_system_error",
       {}},
      {"ncclUnhandledCudaError: Call to CUDA function failed.", "torch.nccl_unhandled_cuda", {}},
      {"ncclInternalError: Internal check failed.", "torch.nccl_internal_error", {}},
      {"ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
       "torch.nccl_invalid_usage",
       {}},
      // ProcessGroupNCCL.cpp (2.1+) WorkNCCL::checkAndSetException / handleException
      {"[rank0]:[E1201 09:14:07.118274 ProcessGroupNCCL.cpp:542] [Rank 0] Collective "
       "WorkNCCL(SeqNum=89, OpType=ALLREDUCE, NumelIn=67108864, NumelOut=67108864, "
       "Timeout(ms)=90000) raised the following async exception: NCCL error: remote process "
       "exited or there was a network error, NCCL version 2.20.5",
       "torch.async_exception",
       {{"seq", "89"},
        {"op", "ALLREDUCE"},
        {"rank", "0"},
        {"error",
         "NCCL error: remote process exited or there was a network error, NCCL version "
         "2.20.5"}}},
      // 1.13 "NCCL watchdog thread terminated with exception: %s"; 2.3+ "Process group watchdog
      // thread terminated with exception: %s"
      {"[E ProcessGroupNCCL.cpp:852] [Rank 16] NCCL watchdog thread terminated with exception: "
       "NCCL error: remote process exited or there was a network error, NCCL version 2.14.3",
       "torch.watchdog_terminated",
       {{"rank", "16"}}},
      {"[rank3]:[E1201 09:14:07.118274 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) "
       "Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught "
       "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
       "NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.",
       "torch.watchdog_timeout",
       {{"rank", "3"}}},
      // Without the closing "ran for ... milliseconds before timing out." (cut or left out).
      {"[rank6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1320347, "
       "OpType=ALLREDUCE, NumelIn=4501504, NumelOut=4501504, Timeout(ms)=600000)",
       "torch.watchdog_timeout",
       {{"rank", "6"}, {"seq", "1320347"}, {"numel_in", "4501504"}, {"timeout_ms", "600000"}}},
      {"[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
       "OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800",
       "torch.watchdog_timeout",
       {{"seq", "7"}, {"op", "BROADCAST"}, {"ran_ms", "1800"}}},
      // The same line with its WorkNCCL fields elided by the poster.
      {"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(... OpType=BROADCAST ...)",
       "torch.watchdog_timeout_text",
       {}},
      {"[rank0]:[E ProcessGroupNCCL.cpp:1795] [PG 0 Rank 0] Exception (either an error or "
       "timeout) detected by watchdog at work: 89, last enqueued NCCL work: 89, last completed "
       "NCCL work: 88.",
       "torch.watchdog_exception_at",
       {{"seq", "89"}, {"last_enqueued", "89"}, {"last_completed", "88"}}},
      {"[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Timeout at NCCL work: 12, last "
       "enqueued NCCL work: 12, last completed NCCL work: 11.",
       "torch.timeout_at_work",
       {{"seq", "12"}, {"last_completed", "11"}}},
      {"[E ProcessGroupNCCL.cpp:481] Some NCCL operations have failed or timed out. Due to the "
       "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
       "corrupted/incomplete data.",
       "torch.ops_failed",
       {}},
      {"NCCL communicator was aborted on rank 5. Original reason for failure was: NCCL error: "
       "unhandled system error",
       "torch.comm_aborted",
       {{"rank", "5"}, {"error", "NCCL error: unhandled system error"}}},
      // ProcessGroupNCCL.cpp barrier(): older "Rank %d using GPU %d ..." and the 2.3+ PG prefix
      {"Rank 3 using GPU 3 to perform barrier as devices used by this process are currently "
       "unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.",
       "torch.barrier_guessed_device",
       {{"rank", "3"}, {"gpu", "3"}}},
      {"[rank1]:[W1105 13:37:10.134661876 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank 1]  "
       "using GPU 0 to perform barrier as devices used by this process are currently unknown.",
       "torch.barrier_guessed_device",
       {{"rank", "1"}, {"gpu", "0"}}},
      {"torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving "
       "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
       "Socket Timeout",
       "torch.unique_id_store_error",
       {{"rank", "3"}, {"root_rank", "0"}, {"key", "0"}, {"error", "Socket Timeout"}}},
      // ProcessGroupNCCL.cpp WorkNCCL::synchronize with blocking wait: 1.13 "[Rank %d] Work %s
      // timed out in blocking wait (NCCL_BLOCKING_WAIT=1).", 2.2-2.4 TORCH_NCCL_BLOCKING_WAIT,
      // 2.5+ logPrefix() and no variable.
      {"[E ProcessGroupNCCL.cpp:737] [Rank 1] Work WorkNCCL(SeqNum=4, OpType=ALLREDUCE, "
       "Timeout(ms)=1800000) timed out in blocking wait (NCCL_BLOCKING_WAIT=1).",
       "torch.blocking_wait_timeout",
       {{"rank", "1"}, {"seq", "4"}, {"op", "ALLREDUCE"}, {"timeout_ms", "1800000"}}},
      {"[rank3]:[E ProcessGroupNCCL.cpp:1020] [PG 0 Rank 3] Work WorkNCCL(SeqNum=4, "
       "OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000) timed out in blocking wait "
       "(TORCH_NCCL_BLOCKING_WAIT=1).",
       "torch.blocking_wait_timeout",
       {{"rank", "3"}, {"op", "BROADCAST"}, {"numel_in", "8"}}},
      {"[rank0]:[E1201 09:14:07.118274 ProcessGroupNCCL.cpp:1195] [PG ID 0 PG GUID 0(default_pg) "
       "Rank 0] Work WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
       "Timeout(ms)=5000) timed out in blocking wait.",
       "torch.blocking_wait_timeout",
       {{"seq", "7"}, {"timeout_ms", "5000"}}},
      // HeartbeatMonitor getNCCLWatchdogTimeoutExitMsg (2.4+): the watchdog-hang reason; the
      // "collective timeout or exception" reason stays the Flight Recorder fact.
      {"[rank2]:[F1229 20:37:13.091528310 ProcessGroupNCCL.cpp:1306] [PG ID 0 PG GUID "
       "0(default_pg) Rank 2] [PG ID 0 PG GUID 0(default_pg) Rank 2] Terminating the process "
       "after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang.",
       "torch.terminating_watchdog_hang",
       {{"reason", "ProcessGroupNCCL watchdog hang"}}},
      {"[rank0]:[F725 02:47:41.268394894 ProcessGroupNCCL.cpp:1653] [PG ID 0 PG GUID "
       "0(default_pg) Rank 0] [PG ID 0 PG GUID 0(default_pg) Rank 0] Terminating the process "
       "after attempting to dump debug info, due to collective timeout or exception.",
       "torch.fr_dump",
       {}},
      // The heartbeat monitor's store poll (2.3+), with Utils.hpp's errors.
      {"[rank10]:[W305 10:17:38.040221001 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0 Rank 10] "
       "Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut "
       "down too early), with error: Broken pipe",
       "c10d.should_dump_check_failed",
       {{"rank", "10"}, {"error", "Broken pipe"}}},
      {"[rank3]:[W310 15:54:45.574839167 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0 Rank 3] "
       "Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut "
       "down too early), with error: Failed to recv, got 0 bytes. Connection was likely closed. "
       "Did the remote server shutdown or crash?",
       "c10d.should_dump_check_failed",
       {{"error",
         "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server "
         "shutdown or crash?"}}},
      // A CUDA error the watchdog's event query raised is the CUDA row's, not an NCCL error.
      {"[rank0]:[E1201 ProcessGroupNCCL.cpp:1500] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process "
       "group watchdog thread terminated with exception: CUDA error: an illegal memory access "
       "was encountered",
       "torch.cuda_error",
       {{"error", "an illegal memory access was encountered"}}},
      {"[rank1]:[E1201 ProcessGroupNCCL.cpp:1500] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process "
       "group watchdog thread terminated with exception: NCCL communicator encountered error set "
       "by ProcessGroupNCCL: NCCL communicator was aborted on rank 1.",
       "torch.watchdog_terminated",
       {{"rank", "1"}}},
      // ProcessGroupGloo.cpp monitoredBarrier on a rank other than 0.
      {"[rank1]:[E325 17:13:23.163175227 ProcessGroupGloo.cpp:145] Rank 1 successfully reached "
       "monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please "
       "check rank 0 logs for faulty rank.",
       "torch.monitored_barrier_peer_error",
       {{"waiting_rank", "1"}, {"failed_rank", "0"}}},
  };
}
TEST_CASE("torch c10d rows: NCCL error details, watchdog and async exception lines") {
  CheckCases(TorchC10dCases());
}

std::vector<RowCase> C10dStoreCases() {
  return {
      // TCPStore.cpp 1.13 "Wait timeout"; 2.x "wait timeout after %dms, keys: %s"
      {"RuntimeError: Wait timeout", "c10d.store_wait", {}},
      {"torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: "
       "/default_pg//cuda//0",
       "c10d.store_wait",
       {{"timeout_ms", "1800000"}, {"keys", "/default_pg//cuda//0"}}},
      // socket.cpp 1.13 "The client socket has failed to connect to {} {}." with "[host]:port"
      // and "(errno: %d - %s)"
      {"[W socket.cpp:601] [c10d] The client socket has failed to connect to [node01]:29500 "
       "(errno: 111 - Connection refused).",
       "c10d.store_connect",
       {{"peer", "node01"}, {"port", "29500"}, {"errno", "111"}, {"error", "Connection refused"}}},
      {"RuntimeError: The client socket has failed to connect to any network address of "
       "(node01, 29500).",
       "c10d.store_connect",
       {{"peer", "node01"}, {"port", "29500"}}},
      {"RuntimeError: The client socket has timed out after 1800s while trying to connect to "
       "(node01, 29500).",
       "c10d.store_connect_timeout",
       {{"timeout", "1800s"}, {"peer", "node01"}, {"port", "29500"}}},
      {"torch.distributed.DistNetworkError: The server socket has failed to bind to [::]:29500 "
       "(errno: 98 - Address already in use).",
       "c10d.store_bind_failed",
       {{"addr", "[::]:29500"}, {"errno", "98"}, {"error", "Address already in use"}}},
      {"RuntimeError: The server socket has failed to listen on any local network address.",
       "c10d.store_bind_failed",
       {{"addr", "any local network address"}}},
      // TCPStore.cpp 2.3+
      {"[W1201 09:14:07.949247853 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=77, "
       "addr=[::ffff:10.0.0.7]:39732, remote=[::ffff:10.0.0.1]:29500): failed to recv, got 0 bytes",
       "c10d.store_recv_value",
       {{"addr", "[::ffff:10.0.0.7]:39732"},
        {"peer", "[::ffff:10.0.0.1]:29500"},
        {"error", "failed to recv, got 0 bytes"},
        {"store_op", "recvValue"}}},
      {"[rank15]:[W305 10:17:38.404745404 TCPStore.cpp:106] [c10d] sendBytes failed on "
       "SocketImpl(fd=102, addr=node08:33978, remote=10.99.91.59:5000): Broken pipe",
       "c10d.store_recv_value",
       {{"store_op", "sendBytes"}, {"peer", "10.99.91.59:5000"}, {"error", "Broken pipe"}}},
      {"[c10d] recvValueWithTimeout failed on SocketImpl(fd=40, addr=[node2]:59426, "
       "remote=[node1]:29500): Failed to recv, got 0 bytes. Connection was likely closed. Did the "
       "remote server shutdown or crash?",
       "c10d.store_recv_value",
       {{"store_op", "recvValueWithTimeout"}, {"peer", "[node1]:29500"}}},
      // distributed_c10d.py _store_based_barrier 2.x (num_workers_joined, error=).
      {"torch.distributed.DistStoreError: Timed out initializing process group in store based "
       "barrier on rank 3, for key: store_based_barrier_key:1 (world_size=16, "
       "num_workers_joined=8, timeout=0:30:00 error=Socket Timeout)",
       "c10d.store_barrier",
       {{"joined", "8"}, {"timeout", "0:30:00"}}},
      // Utils.hpp recvBytes (2.3+ wording with the advice)
      {"torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely "
       "closed. Did the remote server shutdown or crash?",
       "c10d.store_recv_zero",
       {}},
      {"RuntimeError: Socket Timeout", "c10d.socket_timeout", {}},
  };
}
TEST_CASE("c10d store and socket rows: 1.13 and 2.x formats of connect, bind, wait and recv") {
  CheckCases(C10dStoreCases());
}

std::vector<RowCase> GlooCases() {
  return {
      // The loopback warning wrapped by a logger: its first half still names it.
      {"[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback",
       "gloo.loopback_fallback",
       {{"rank", "8"}}},
      // pair.cc's SO_ERROR with the dialled peer, and the peer on a line of its own.
      {"  timed out connecting: SO_ERROR: Connection refused, remote=[127.0.1.1]:20901",
       "gloo.remote_addr",
       {{"addr", "127.0.1.1"}, {"port", "20901"}}},
      {"        remote=[127.0.0.1]:14215", "gloo.remote_addr", {{"addr", "127.0.0.1"}}},
      {"RuntimeError: Gloo connectFullMesh failed ...", "gloo.connect_full_mesh", {}},
      // gloo/transport/tcp/pair.cc GLOO_ENFORCE_LE(op.preamble.length, op.nbytes).
      {"  what():  [enforce fail at /opt/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
       "pair.cc:446] op.preamble.length <= op.nbytes. 256000 vs 128000",
       "gloo.recv_larger_than_buffer",
       {{"remote_bytes", "256000"}, {"local_bytes", "128000"}}},
      // torch ProcessGroupGloo.cpp createDefaultDevice()'s TORCH_WARN_ONCE.
      {"[rank0]:[W427 03:10:15.652192062 ProcessGroupGloo.cpp:715] Warning: Unable to resolve "
       "hostname to a (local) address. Using the loopback address as fallback. Manually set the "
       "network interface to bind to with GLOO_SOCKET_IFNAME. (function operator())",
       "gloo.loopback_fallback",
       {{"rank", "0"}}},
      // gloo/transport/tcp/unbound_buffer.cc, pair.cc, device.cc (GLOO_ERROR_MSG "[file:line] ")
      {"RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed "
       "out waiting 1800000ms for recv operation to complete",
       "gloo.timeout",
       {{"timeout_ms", "1800000"}, {"gloo_op", "recv"}}},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:544] Connection closed by "
       "peer [10.0.0.2]:48321",
       "gloo.closed_by_peer",
       {{"peer", "[10.0.0.2]:48321"}}},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:535] Read error "
       "[10.0.0.2]:48321: Connection reset by peer",
       "gloo.read_error",
       {{"peer", "[10.0.0.2]:48321"}, {"error", "Connection reset by peer"}}},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:311] Connect timeout "
       "[10.0.0.2]:48321",
       "gloo.connect_timeout",
       {{"peer", "[10.0.0.2]:48321"}}},
      // pair.cc read() in synchronous mode and verifyConnected().
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:431] Read timeout "
       "[10.0.0.2]:48321",
       "gloo.read_timeout",
       {{"peer", "[10.0.0.2]:48321"}}},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:720] Socket closed "
       "[10.0.0.2]:48321",
       "gloo.socket_closed",
       {{"peer", "[10.0.0.2]:48321"}}},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/device.cc:84] Unable to find "
       "address for: eth0",
       "gloo.no_address",
       {{"iface", "eth0"}}},
  };
}
TEST_CASE("Gloo rows: timeout, closed or reset peers, connect timeout and a missing interface") {
  CheckCases(GlooCases());
}

std::vector<RowCase> TorchrunCases() {
  return {
      // deepspeed/launcher/launch.py sigkill_handler: logger.error(f"{cmd} exits with return
      // code = {process.returncode}").
      {"[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/"
       "python', '-u', 'train.py', '--local_rank=1'] exits with return code = -9",
       "deepspeed.launcher_exit",
       {{"exitcode", "-9"}}},
      // the same handler, before it: logger.info(f"Killing subprocess {process.pid}")
      {"[2022-05-15 00:12:57,785] [INFO] [launch.py:178:sigkill_handler] Killing subprocess 97277",
       "deepspeed.launcher_kill",
       {{"pid", "97277"}}},
      // Ray's GCS actor manager: the actor's worker process died.
      {"The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
       "Worker exit detail: Worker unexpectedly exits with a connection error code 2.",
       "ray.actor_worker_died",
       {{"exit_type", "SYSTEM_ERROR"}}},
      // elastic/multiprocessing/errors/__init__.py 1.13 ProcessFailure message
      {"  traceback : Signal 9 (SIGKILL) received by PID 48223",
       "torchrun.signal_received_by_pid",
       {{"signal", "9"}, {"signal_name", "SIGKILL"}, {"pid", "48223"}}},
      {"Root Cause (first observed failure):", "torchrun.root_cause", {}},
      // elastic/agent/server/api.py 1.13
      {"WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting "
       "down workers",
       "torchrun.death_signal",
       {{"signal", "15"}}},
      // the same under Python <= 3.10: signal.Signals' str
      {"WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGTERM death "
       "signal, shutting down workers",
       "torchrun.death_signal",
       {{"signal", "Signals.SIGTERM"}}},
      // multiprocessing/api.py _terminate_process_handler (Python 3.11+, then <= 3.10).
      {"torch.distributed.elastic.multiprocessing.api.SignalException: Process 17912 got signal: "
       "15",
       "torchrun.signal_exception",
       {{"pid", "17912"}, {"signal", "15"}}},
      {"torch.distributed.elastic.multiprocessing.api.SignalException: Process 2037 got signal: "
       "Signals.SIGINT",
       "torchrun.signal_exception",
       {{"signal", "Signals.SIGINT"}}},
      {"INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 2/3 "
       "attempts left; will restart worker group",
       "torchrun.worker_group_failed",
       {{"role", "default"}, {"restarts_left", "2"}, {"max_restarts", "3"}}},
      // elastic/multiprocessing/api.py 1.13
      {"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 48224 closing "
       "signal SIGTERM",
       "torchrun.closing_signal",
       {{"pid", "48224"}, {"signal", "SIGTERM"}}},
      // elastic/rendezvous/c10d_rendezvous_backend.py and api.py 1.13
      {"torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to "
       "the C10d store has failed. See inner exception for details.",
       "torchrun.rdzv_store_failed",
       {}},
      {"torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
       "torchrun.rdzv_timeout",
       {}},
      {"torch.distributed.elastic.rendezvous.api.RendezvousClosedError",
       "torchrun.rdzv_closed",
       {}},
  };
}
TEST_CASE("torchrun rows: signals, root cause, restarts and rendezvous errors") {
  CheckCases(TorchrunCases());
}

std::vector<RowCase> KernelCases() {
  return {
      // mm/oom_kill.c (5.x) and the memory cgroup variant
      {"[Mon Dec  1 09:14:07 2026] Out of memory: Killed process 48223 (python) total-vm:"
       "201326592kB, anon-rss:98765432kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:200000kB "
       "oom_score_adj:0",
       "kernel.oom_kill",
       {{"pid", "48223"}, {"comm", "python"}}},
      {"Memory cgroup out of memory: Killed process 48223 (pt_main_thread) total-vm:1kB",
       "kernel.oom_kill",
       {{"comm", "pt_main_thread"}}},
      {"NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", "kernel.gpu_fallen_off", {}},
      {"NVRM: Xid (PCI:0000:3b:00): 79, pid=48223, name=python, GPU has fallen off the bus.",
       "kernel.xid",
       {{"xid", "79"}}},
      // mlx5 events.c
      {"mlx5_core 0000:41:00.0: Port module event: module 0, Cable unplugged",
       "kernel.mlx5_module_event",
       {{"module", "0"}, {"event", "Cable unplugged"}}},
      {"mlx5_core 0000:41:00.0: Port module event[error]: module 1, Cable error, High Temperature",
       "kernel.mlx5_module_event",
       {{"error_flag", "[error]"}, {"module", "1"}}},
      {"mlx5_core 0000:41:00.0 ens1f0np0: Link down", "kernel.link_down", {}},
      // mlx5 cmd.c mlx5_cmd_check (5.x) and mlx5_cmd_out_err (6.x) on a queue create command
      {"[1899678.679848] mlx5_core 0000:5e:00.0: mlx5_cmd_check:824:(pid 46096): CREATE_QP(0x500) "
       "op_mod(0x0) failed, status limits exceeded(0x8), syndrome (0x19c6d6)",
       "kernel.mlx5_cmd_limits",
       {{"command", "CREATE_QP"}}},
      {"mlx5_core 0000:41:00.0: mlx5_cmd_out_err:838:(pid 9): CREATE_CQ(0x400) op_mod(0x0) "
       "failed, status limits exceeded(0x8), syndrome (0x1b2c3d), err(-12)",
       "kernel.mlx5_cmd_limits",
       {{"command", "CREATE_CQ"}}},
      // ... and on a memory-key create (a registration the firmware refused)
      {"mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid 233522): CREATE_MKEY(0x200) "
       "op_mod(0x0) failed, status limits exceeded(0x8), syndrome (0x18af6), err(-12)",
       "kernel.mlx5_cmd_limits",
       {{"command", "CREATE_MKEY"}}},
      // kmod tools/modprobe.c "modprobe: ERROR: could not insert '%s': %s"
      {"modprobe: ERROR: could not insert 'nv_peer_mem': Invalid argument",
       "kmod.peermem_insert_failed",
       {{"module", "nv_peer_mem"}, {"error", "Invalid argument"}}},
      {"modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown "
       "parameter (see dmesg)",
       "kmod.peermem_insert_failed",
       {{"module", "nvidia_peermem"}}},
      // infiniband-diags ibstat.c "\t\tPhysical state: %s"
      {"\t\tPhysical state: Disabled", "ibstat.port_no_link", {{"phys_state", "Disabled"}}},
      {"\t\tPhysical state: Polling", "ibstat.port_no_link", {{"phys_state", "Polling"}}},
      // cuda-samples p2pBandwidthLatencyTest.cu "Device=%d %s Access Peer Device=%d"
      {"Device=0 CANNOT Access Peer Device=2",
       "cuda_samples.p2p_cannot_access",
       {{"cuda_dev", "0"}, {"peer_dev", "2"}}},
  };
}
TEST_CASE("kernel log rows: OOM killer, GPU off the bus, NIC module events") {
  CheckCases(KernelCases());
}

std::vector<RowCase> MpiCases() {
  return {
      {"mpirun noticed that process rank 3 with PID 48223 on node gpu07 exited on signal 9 "
       "(Killed).",
       "mpi.ompi_rank_signalled",
       {{"launcher", "mpirun"},
        {"rank", "3"},
        {"pid", "48223"},
        {"host", "gpu07"},
        {"signal", "9"},
        {"signal_name", "Killed"}}},
      {"prterun noticed that process rank 0 with PID 1201 on node gpu01 exited on signal 6 "
       "(Aborted).",
       "mpi.ompi_rank_signalled",
       {{"launcher", "prterun"}, {"signal", "6"}}},
      {"mpirun detected that one or more processes exited with non-zero status, thus causing",
       "mpi.ompi_nonzero_exit",
       {}},
      {"ORTE has lost communication with a remote daemon.", "mpi.ompi_lost_daemon", {}},
      {"=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "mpi.hydra_bad_termination", {}},
      {"=   RANK 3 PID 48223 RUNNING AT gpu07",
       "mpi.hydra_running_at",
       {{"rank", "3"}, {"pid", "48223"}, {"host", "gpu07"}}},
      {"=   PID 48223 RUNNING AT gpu07", "mpi.hydra_running_at", {{"pid", "48223"}}},
      {"=   KILLED BY SIGNAL: 9 (Killed)",
       "mpi.hydra_killed_by_signal",
       {{"signal", "9"}, {"signal_name", "Killed"}}},
      {"=   EXIT CODE: 139", "mpi.hydra_exit_code", {{"exitcode", "139"}}},
      // PRRTE 3.0 help-prun.txt wraps [prun:proc-aborted-strsignal] after "exited on".
      {"prterun noticed that process rank 2 with PID 1201 on node gpu01 exited on",
       "mpi.ompi_rank_signalled",
       {{"launcher", "prterun"}, {"rank", "2"}, {"host", "gpu01"}}},
      {"signal 9 (Killed).", "mpi.prrte_signal_line", {{"signal", "9"}, {"signal_name", "Killed"}}},
      // help-errmgr-base.txt [normal-termination-but] with ORTE's empty job id.
      {"Primary job  terminated normally, but 1 process returned",
       "mpi.ompi_normal_termination_but",
       {{"count", "1"}}},
      // help-orterun.txt [orterun:proc-exit-no-sync] (4.1) and help-prun.txt (3.0).
      {"mpirun has exited due to process rank 3 with PID 48223 on",
       "mpi.ompi_exited_due_to_rank",
       {{"launcher", "mpirun"}, {"rank", "3"}, {"pid", "48223"}}},
      {"prterun has exited due to process rank 1 with PID 7 on node gpu02 exiting",
       "mpi.ompi_exited_due_to_rank",
       {{"rank", "1"}, {"host", "gpu02"}}},
      // help-mpi-api.txt [mpi-abort].
      {"MPI_ABORT was invoked on rank 5 in communicator MPI_COMM_WORLD",
       "mpi.ompi_mpi_abort",
       {{"rank", "5"}}},
      // [orterun:non-zero-exit] / [prun:non-zero-exit] detail lines.
      {"  Process name: [[54049,1],3]", "mpi.ompi_process_name", {{"rank", "3"}}},
      {"   Process name: [prterun-gpu07-1234@1,6]", "mpi.ompi_process_name", {{"rank", "6"}}},
      // oob_tcp_connection.c (ORTE 3.0-4.1, PRRTE 3.0): the banner's first line.
      {"A process or daemon was unable to complete a TCP connection",
       "mpi.oob_tcp_connect_failed",
       {}},
      // help-errmgr-base.txt [failed-daemon-launch]: ORTE 4.1, PRRTE 2.0 and 3.0 (tool name).
      {"ORTE was unable to reliably start one or more daemons.", "mpi.daemon_launch_failed", {}},
      {"PRTE was unable to reliably start one or more daemons.", "mpi.daemon_launch_failed", {}},
      {"prterun was unable to reliably start one or more daemons.", "mpi.daemon_launch_failed", {}},
      // [failed-daemon]: ORTE's and PRRTE's spelling.
      {"An ORTE daemon has unexpectedly failed after launch and before",
       "mpi.daemon_failed_after_launch",
       {}},
      {"An PRTE daemon has unexpectedly failed after launch and before",
       "mpi.daemon_failed_after_launch",
       {}},
      // btl_tcp_endpoint.c BTL_ERROR (1.10-3.0): "[node][name][file:line:func] connect() to %s
      // failed: %s (%d)".
      {"[gpu07][[35384,1],1][btl_tcp_endpoint.c:803:mca_btl_tcp_endpoint_complete_connect] "
       "connect() to 10.0.0.2 failed: Connection refused (111)",
       "openmpi.btl_tcp_connect_failed",
       {{"peer", "10.0.0.2"}, {"error", "Connection refused"}, {"errno", "111"}}},
      {"[gpu07][[35384,1],1][btl_tcp_endpoint.c:796:mca_btl_tcp_endpoint_complete_connect] "
       "connect() to 192.168.122.1 failed: No route to host (113)",
       "openmpi.btl_tcp_connect_failed",
       {{"peer", "192.168.122.1"}, {"errno", "113"}}},
      // help-mpi-btl-tcp.txt [client connect fail]: 2.1-5.0 and the 3.1-4.1 "via" entry.
      {"WARNING: Open MPI failed to TCP connect to a peer MPI process.  This",
       "openmpi.btl_tcp_client_connect_fail",
       {}},
      {"WARNING: Open MPI failed to TCP connect to a peer MPI process via",
       "openmpi.btl_tcp_client_connect_fail",
       {}},
      // BTL_PEER_ERROR prefix, then "Unable to connect to the peer %s on port %d: %s".
      {"[[35384,1],1][btl_tcp_endpoint.c:794:mca_btl_tcp_endpoint_start_connect] from gpu07 to: "
       "gpu08 Unable to connect to the peer 10.0.0.2 on port 1024: Network is unreachable",
       "openmpi.btl_tcp_unable_to_connect",
       {{"peer", "10.0.0.2"}, {"port", "1024"}, {"error", "Network is unreachable"}}},
      // [server accept cannot find guid], its second line.
      {"another Open MPI process but cannot find a corresponding process",
       "openmpi.btl_tcp_unknown_peer",
       {}},
      // MPICH abort.c / init_impl.c.
      {"application called MPI_Abort(MPI_COMM_WORLD, 1) - process 3",
       "mpich.mpi_abort",
       {{"comm", "MPI_COMM_WORLD"}, {"errorcode", "1"}, {"rank", "3"}}},
      // errutil.c MPIR_Handle_fatal_error, 3.x (MPI_Init) and 4.x (internal_Init) names.
      {"Fatal error in MPI_Init: Other MPI error, error stack:",
       "mpich.fatal_error",
       {{"function", "MPI_Init"}, {"error", "Other MPI error"}}},
      {"Fatal error in internal_Init: Other MPI error, error stack:",
       "mpich.fatal_error",
       {{"function", "internal_Init"}}},
      // ch3 / ch4 errnames.txt in an error stack line.
      {"MPIDI_CH3_Init(120).......: channel initialization failed",
       "mpich.channel_init_failed",
       {}},
      {"MPID_Init(1304)..........: channel initialization failed", "mpich.channel_init_failed", {}},
  };
}

// srun's _task_finish lines through error(), slurmstepd's cgroup OOM count and its banners.
std::vector<RowCase> SlurmCases() {
  return {
      {"srun: error: gpu03: task 5: Out Of Memory",
       "slurm.task_oom",
       {{"host", "gpu03"}, {"tasks", "5"}}},
      {"srun: error: gpu03: tasks 0-2,5: Exited with exit code 1",
       "slurm.task_exit_code",
       {{"host", "gpu03"}, {"tasks", "0-2,5"}, {"exitcode", "1"}}},
      {"srun: error: gpu04: task 7: Segmentation fault (core dumped)",
       "slurm.task_signalled",
       {{"host", "gpu04"}, {"tasks", "7"}, {"signal_name", "Segmentation fault"}}},
      {"srun: error: gpu04: tasks 0-6: Killed",
       "slurm.task_signalled",
       {{"signal_name", "Killed"}}},
      // 23.02+ and 20.11-22.05 wordings.
      {"slurmstepd: error: Detected 1 oom_kill event in StepId=1054.0. Some of the step tasks "
       "have been OOM Killed.",
       "slurm.oom_kill_event",
       {{"count", "1"}}},
      {"slurmstepd: error: Detected 2 oom-kill event(s) in StepId=7.batch cgroup. Some of your "
       "processes may have been killed by the cgroup out-of-memory handler.",
       "slurm.oom_kill_event_old",
       {{"count", "2"}}},
      {"slurmstepd: error: *** STEP 524549.0 ON gpu01 CANCELLED AT 2024-10-09T23:01:02 DUE TO "
       "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
       "slurm.cancelled_node_failure",
       {{"job", "524549.0"}, {"host", "gpu01"}}},
      {"slurmstepd: error: *** JOB 524549 ON gpu01 CANCELLED AT 2024-10-09T23:01:02 DUE TO TIME "
       "LIMIT ***",
       "slurm.cancelled",
       {{"job", "524549"}, {"reason", "TIME LIMIT"}}},
      {"slurmstepd: error: *** STEP 524549.0 ON gpu01 CANCELLED AT 2024-10-09T23:01:02 ***",
       "slurm.cancelled",
       {{"job", "524549.0"}, {"host", "gpu01"}}},
      // step_launch.c / allocate.c error("Node failure on %s").
      {"srun: error: Node failure on gpu[03-04]", "slurm.node_failure", {{"host", "gpu[03-04]"}}},
      // jobacct_gather: "%ps exceeded memory limit (%lu > %lu), being killed" (20.11+), "Step
      // %u.%u ..." (20.02), the virtual-memory variant, the notice srun prints and slurmd's own.
      {"slurmstepd: error: StepId=1054.0 exceeded memory limit (20971520 > 20480000), being "
       "killed",
       "slurm.exceeded_memory_limit",
       {{"used_bytes", "20971520"}, {"limit_bytes", "20480000"}}},
      {"slurmstepd: error: Step 1054.0 exceeded virtual memory limit (41943040 > 40960000), "
       "being killed",
       "slurm.exceeded_memory_limit",
       {{"used_bytes", "41943040"}}},
      {"srun: Exceeded job memory limit", "slurm.exceeded_memory_limit", {}},
      {"slurmd: Job 1054 exceeded memory limit (20971520>20480000), cancelling it",
       "slurm.exceeded_memory_limit",
       {{"limit_bytes", "20480000"}}},
      // step_launch.c: %ps (20.11-26.05) and "%u.%u" (20.02).
      {"srun: error: Task launch for StepId=1234.0 failed on node gpu07: Invalid node name "
       "specified",
       "slurm.task_launch_failed",
       {{"job", "1234.0"}, {"host", "gpu07"}, {"error", "Invalid node name specified"}}},
      {"srun: error: Task launch for 1234.0 failed on node gpu08: Communication connection "
       "failure",
       "slurm.task_launch_failed",
       {{"job", "1234.0"}, {"host", "gpu08"}}},
      // slurmstepd task.c exec_task.
      {"slurmstepd: error: execve(): python: No such file or directory",
       "slurm.execve_failed",
       {{"program", "python"}, {"error", "No such file or directory"}}},
      {"slurmstepd: error: execve(): bad interpreter(/opt/venv/bin/python3): No such file or "
       "directory",
       "slurm.execve_failed",
       {{"program", "/opt/venv/bin/python3"}}},
      // srun launch.c step creation.
      {"srun: error: Unable to create step for job 1234: Requested node configuration is not "
       "available",
       "slurm.step_create_failed",
       {{"job", "1234"}, {"error", "Requested node configuration is not available"}}},
      // step_launch.c slurm_step_launch_wait_finish.
      {"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
       "slurm.step_aborted",
       {{"timeout_s", "32"}}},
      {"srun: error: Timed out waiting for job step to complete", "slurm.step_wait_timed_out", {}},
  };
}
// torch/csrc/DataLoader.cpp: the SIGBUS handler's message and _error_if_any_worker_fails.
std::vector<RowCase> DataLoaderCases() {
  return {
      // rdma-core libibverbs/init.c check_memlock_limit() (PFX "libibverbs: ").
      {"libibverbs: Warning: RLIMIT_MEMLOCK is 65536 bytes.",
       "verbs.memlock_warning",
       {{"memlock_bytes", "65536"}}},
      {"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
       "shared memory (shm).",
       "torch.dataloader_bus_error",
       {}},
      // paddle/fluid/imperative/data_loader.cc (develop, 2.x): the SIGBUS handler and the parent.
      {"ERROR: Unexpected BUS error encountered in DataLoader worker. This might be caused by "
       "insufficient shared memory (shm), please check whether use_shared_memory is set and "
       "storage space in /dev/shm is enough",
       "paddle.dataloader_bus_error",
       {}},
      {"  It may be caused by insufficient shared storage space. This problem usually occurs when "
       "using docker as a development environment.",
       "paddle.dataloader_shared_storage",
       {}},
      {"RuntimeError: DataLoader worker (pid 2841) is killed by signal: Bus error. It is possible "
       "that dataloader's workers are out of shared memory.",
       "torch.dataloader_worker_killed",
       {{"pid", "2841"}, {"signal_name", "Bus error"}}},
      {"RuntimeError: DataLoader worker (pid 77) is killed by signal: Killed.",
       "torch.dataloader_worker_killed",
       {{"signal_name", "Killed"}}},
      // DataLoader.cpp nonzero exit; dataloader.py _try_get_data (one or more pids).
      {"RuntimeError: DataLoader worker (pid 109) exited unexpectedly with exit code 1. Details "
       "are lost due to multiprocessing. Rerunning with num_workers=0 may give better error "
       "trace.",
       "torch.dataloader_worker_killed",
       {{"pid", "109"}, {"exitcode", "1"}}},
      {"RuntimeError: DataLoader worker (pid(s) 6662, 6663) exited unexpectedly",
       "torch.dataloader_worker_killed",
       {{"pid", "6662, 6663"}}},
      // DataLoader.cpp SIGSEGV / SIGFPE handlers.
      {"ERROR: Unexpected segmentation fault encountered in worker.",
       "torch.dataloader_worker_fault",
       {{"signal_name", "segmentation fault"}}},
      {"ERROR: Unexpected floating-point exception encountered in worker.",
       "torch.dataloader_worker_fault",
       {{"signal_name", "floating-point exception"}}},
  };
}
TEST_CASE("DataLoader rows: the SIGBUS shared-memory message and workers killed by a signal") {
  CheckCases(DataLoaderCases());
}

// frameworks.inc: Horovod, vLLM, SGLang, Lightning, nvidia-resiliency-ext, CPython's
// CalledProcessError, each line built from its source's format string.
std::vector<RowCase> FrameworksCases() {
  return {
      // Horovod stall_inspector.cc (0.18+, glog prefix) and operations.cc (0.12-0.17 "WARNING: ").
      {"[2021-02-02 21:19:07.345988: W horovod/common/stall_inspector.cc:107] One or more tensors "
       "were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting "
       "for remainder of ranks for more than 60 seconds. This may indicate that different ranks "
       "are trying to submit different tensors or that only subset of ranks is submitting "
       "tensors, which will cause deadlock. ",
       "horovod.stall_warning",
       {{"timeout_s", "60"}}},
      {"WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by "
       "subset of ranks and are waiting for remainder of ranks for more than 10 seconds. This may "
       "indicate that different ranks are trying to submit different tensors or that only subset "
       "of ranks is submitting tensors, which will cause deadlock.",
       "horovod.stall_warning",
       {{"timeout_s", "10"}}},
      // common.h SHUT_DOWN_ERROR as TensorFlow raises it.
      {"tensorflow.python.framework.errors_impl.UnknownError:  Horovod has been shut down. This "
       "was caused by an exception on one of the ranks or an attempt to allreduce, allgather or "
       "broadcast a tensor after one of the ranks finished execution.",
       "horovod.shut_down",
       {}},
      // stall_inspector.cc: the shutdown line (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS) and the list
      // headers of 0.20.1-0.28 and 0.16-0.20.0.
      {"One or more rank (marked by \"!\") is stalled for longer than 120 seconds. Will shutdown.",
       "horovod.stall_shutdown",
       {{"timeout_s", "120"}}},
      {"Missing ranks:", "horovod.missing_ranks", {}},
      {"Stalled ranks:", "horovod.stalled_ranks", {}},
      {"[1,0]<stderr>:Missing ranks:", "horovod.missing_ranks", {}},
      // gcs_node_manager.cc 2.x and 1.x forms.
      {"2022-09-02 12:53:00,741 WARNING worker.py:1829 -- The node with node id: "
       "5ad7fa5dd64fc1fec7a82cceecabed8e5eb247ec97064bb50a1c2a11 and address: 10.0.0.21 and node "
       "name: 10.0.0.21 has been marked dead because the detector has missed too many heartbeats "
       "from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, preempted node, "
       "etc.) ",
       "ray.node_marked_dead",
       {{"node_id", "5ad7fa5dd64fc1fec7a82cceecabed8e5eb247ec97064bb50a1c2a11"},
        {"host", "10.0.0.21"}}},
      {"The node with node id: 7c1e9a and ip: 10.0.0.22 has been marked dead because the "
       "detector has missed too many heartbeats from it. This can happen when a raylet crashes "
       "unexpectedly or has lagging heartbeats.",
       "ray.node_marked_dead",
       {{"node_id", "7c1e9a"}, {"host", "10.0.0.22"}}},
      // raylet node_manager.cc, the worker's SYSTEM_ERROR exit as the driver prints it.
      {"(raylet) A worker died or was killed while executing a task by an unexpected system "
       "error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: "
       "ffffffffffffffff8c22c88e5dbb3e566fc0518001000000 Worker ID: 1efd1674 Node ID: 0d733c08 "
       "Worker IP address: 10.0.0.21 Worker port: 10003 Worker PID: 26108 Worker exit type: "
       "SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.",
       "ray.worker_died_system_error",
       {{"exit_type", "SYSTEM_ERROR"}}},
      // ... its first sentence alone (a wrapped or cut line), and the 0.x form.
      {"A worker died or was killed while executing a task by an unexpected system error. To "
       "troubleshoot the problem, check the logs for the dead worker.",
       "ray.worker_died_system_error",
       {{"exit_type", ""}}},
      {"A worker died or was killed while executing task 00000000a2b4c6d8.",
       "ray.worker_died_system_error",
       {}},
      // DeepEP intranode.cu / utils.cuh (1.2.1, 1.0.0) and internode_ll.cu (2.1.0).
      {"DeepEP timeout for dispatch receivers, rank 5, responsible_channel = 3, tokens "
       "remained: 12",
       "deepep.kernel_timeout",
       {{"what", "dispatch receivers"}, {"rank", "5"}}},
      {"DeepEP timeout for combine senders, rank 2, responsible_channel = 0",
       "deepep.kernel_timeout",
       {{"what", "combine senders"}, {"rank", "2"}}},
      {"DeepEP timeout check failed: rank = 7, thread = 3, value = 1)",
       "deepep.kernel_timeout",
       {{"rank", "7"}}},
      {"DeepEP timeout check failed: 0 (rank = 4)", "deepep.kernel_timeout", {{"rank", "4"}}},
      {"Warning: DeepEP timeout for barrier, rank 1, dst_rank 6",
       "deepep.kernel_timeout",
       {{"what", "barrier"}, {"rank", "1"}}},
      // internode.cu: both placements of the "(... check)" qualifier, and the coordinator.
      {"DeepEP dispatch forwarder timeout (RDMA check), channel: 2, RDMA: 1, nvl: 3, dst NVL: 0, "
       "src RDMA lane: 1, head: 4, tail: 8, expected: 16",
       "deepep.internode_timeout",
       {{"what", "dispatch forwarder"}, {"channel", "2"}, {"rdma_rank", "1"}, {"nvl_rank", "3"}}},
      {"DeepEP combine forwarder (NVL check) timeout, channel: 5, RDMA: 0, nvl: 2, src NVL: 1, "
       "dst RDMA: 1, tail: 3, waiting: 1, total: 8, sub: 0, large: 0, expected: 4",
       "deepep.internode_timeout",
       {{"what", "combine forwarder (NVL check)"}, {"channel", "5"}}},
      {"DeepEP RDMA sender coordinator timeout, channel: 1, IB: 0, nvl 3, dst IB: 1, tail: 2, "
       "remaining: 5",
       "deepep.internode_timeout",
       {{"what", "RDMA sender coordinator"}, {"nvl_rank", "3"}}},
      // deep_ep.cpp std::runtime_error as Python shows it.
      {"RuntimeError: DeepEP error: CPU recv timeout",
       "deepep.cpu_timeout",
       {{"what", "CPU recv timeout"}}},
      {"RuntimeError: DeepEP error: timeout (dispatch CPU)",
       "deepep.cpu_timeout",
       {{"what", "timeout (dispatch CPU)"}}},
      // controller.cc: shapes (0.19+ request type name), data types, operations (0.9-0.18 "MPI
      // operations"), root ranks.
      {"tensorflow.python.framework.errors_impl.FailedPreconditionError: Mismatched ALLREDUCE "
       "tensor shapes: One rank sent a tensor of shape [10], but another rank sent a tensor of "
       "shape [12].",
       "horovod.mismatch",
       {{"mismatch", "ALLREDUCE tensor shapes"}}},
      {"Mismatched data types: One rank had type float32, but another rank had type float64.",
       "horovod.mismatch",
       {{"mismatch", "data types"}}},
      {"Mismatched MPI operations: One rank did an allreduce, but another rank did an allgather.",
       "horovod.mismatch",
       {{"mismatch", "MPI operations"}}},
      {"Mismatched BROADCAST root ranks: One rank specified root rank 0, but another rank "
       "specified root rank 1.",
       "horovod.mismatch",
       {{"mismatch", "BROADCAST root ranks"}}},
      // vLLM multiproc_executor.py / ray_executor_v2.py.
      {"(EngineCore_DP0 pid=265) ERROR 02-27 10:31:24 [multiproc_executor.py:231] Worker proc "
       "VllmWorker-0 died unexpectedly, shutting down executor.",
       "vllm.worker_died",
       {{"worker", "VllmWorker-0"}}},
      {"ERROR 03-02 11:00:00 [ray_executor_v2.py:464] RayWorkerProc rank=[3] died unexpectedly, "
       "shutting down executor.",
       "vllm.worker_died",
       {{"worker", "[3]"}}},
      // vLLM shm_broadcast.py long_wait_time_msg.
      {"INFO 11-21 23:27:12 [shm_broadcast.py:501] No available shared memory broadcast block "
       "found in 60 seconds. This typically happens when some processes are hanging or doing "
       "some time-consuming work (e.g. compilation, weight/kv cache quantization).",
       "vllm.shm_broadcast_wait",
       {{"timeout_s", "60"}}},
      // SGLang's launcher.
      {"[07-01 15:20:44] Rank 0 scheduler is dead. Please check if there are relevant logs.",
       "sglang.scheduler_dead",
       {{"scheduler_rank", "0"}}},
      // Lightning ddp.py reconciliate_processes.
      {"pytorch_lightning.utilities.exceptions.DeadlockDetectedException: DeadLock detected from "
       "rank: 2 ",
       "lightning.deadlock_detected",
       {{"failed_rank", "2"}}},
      // nvidia-resiliency-ext straggler_det_callback.py _print_stragglers (both wordings).
      {"[NeMo W 2024-10-01 12:00:00 straggler_det_callback:120] STRAGGLER DETECTION WARNING: Some "
       "GPUs have worse relative performance. Affected ranks: {1, 5}",
       "nvrx.straggler_detected",
       {{"ranks", "{1, 5}"}}},
      {"STRAGGLER DETECTION WARNING: Some GPUs performance dropped. Affected ranks: [162, 79]",
       "nvrx.straggler_detected",
       {{"ranks", "[162, 79]"}}},
      // CPython CalledProcessError.__str__ for a negative return code (torch.distributed.launch,
      // DeepSpeed launch.py, accelerate launch).
      {"subprocess.CalledProcessError: Command '['/opt/conda/bin/python', '-u', 'train.py', "
       "'--local_rank=3']' died with <Signals.SIGKILL: 9>.",
       "python.subprocess_died_signal",
       {{"signal_name", "SIGKILL"}, {"signal", "9"}}},
  };
}
TEST_CASE("framework rows: Horovod, vLLM, SGLang, Lightning, the straggler detector, launchers") {
  CheckCases(FrameworksCases());
}

// generic.inc: failure lines in words no source row knows, as other programs print them (the
// shapes of Python's traceback module, error(3)/perror(3) and the logging level words).
std::vector<RowCase> GenericCases() {
  return {
      {"trainer.WorkerLostError: worker 3 stopped answering", "generic.python_error", {}},
      {"mymodule.TrainerException: rank 3 left the group", "generic.python_exception", {}},
      {"[rank2] agent.c:184: Failed to pin the host buffer of 64 MiB", "generic.failed_cap", {}},
      {"the staging copy failed after 3 tries", "generic.failed", {}},
      {"TEST FAILED: all_reduce_perf returned 1", "generic.failed_upper", {}},
      {"engine.cc:70 error: rdma endpoint setup ended with status 12", "generic.error_colon", {}},
      {"transfer engine: got error 12 from the NIC", "generic.error_word", {}},
      {"E0729 05:04:30.527725 14093 rdma_endpoint.cpp:70] ERROR rdma endpoint setup",
       "generic.error_level",
       {}},
      {"ERROR: rank 5 lost its peer", "generic.error_level_colon", {}},
      {"2025-01-01 10:00:00 [ERROR] worker exited", "generic.error_level_bracket", {}},
      {"Fatal signal 11 in the proxy thread", "generic.fatal", {}},
      {"dataloader: fatal signal in worker 3", "generic.fatal_lower", {}},
      {"mlx5: fatal: QP 0x1234 left the ready state", "generic.fatal_colon", {}},
      {"2025-01-01 10:00:00 FATAL rendezvous lost", "generic.fatal_level", {}},
      {"FATAL: node gpu07 left the job", "generic.fatal_level_colon", {}},
      {"Cannot register the buffer with the NIC", "generic.cannot", {}},
      {"ucp worker cannot reach peer 10.0.0.2", "generic.cannot_lower", {}},
      {"Unable to create the communicator for group 2", "generic.unable", {}},
      {"agent: unable to open /dev/infiniband/uverbs0", "generic.unable_lower", {}},
      {"Could not find a usable NIC on this host", "generic.could_not", {}},
      {"proxy could not reach the peer", "generic.could_not_lower", {}},
      {"plugin couldn't load its library", "generic.couldnt", {}},
      {"worker 3: Aborted (core dumped) python train.py", "generic.aborted", {}},
      {"the transfer was aborted by the peer", "generic.aborted_lower", {}},
  };
}
TEST_CASE("generic failure rows take failure lines no source row knows, never INFO lines") {
  CheckCases(GenericCases());
  LineMatcher m;
  // Informational lines are not failures, whatever words they hold.
  for (const char* info :
       {"gpu07:2291:2291 [3] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v5 symbol.",
        "I1028 12:13:38.405081 632355 ProcessGroupNCCL.cpp:843] could not set the stream",
        "2025-01-01 10:00:00 INFO retrying after error: none", "INFO: Unable to find cache"}) {
    INFO(info);
    auto r = m.MatchLine(info);
    CHECK((!r || r->signature->category != std::string_view("failure_line")));
  }
  // A fact row keeps its line from the generic rows (a source row knows it).
  auto gloo = m.MatchLine(
      "[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address.");
  REQUIRE(gloo.has_value());
  CHECK(gloo->signature->id == std::string_view("gloo.loopback_fallback"));
}

TEST_CASE("Slurm rows: srun task exits and signals, cgroup OOM kills, cancellation banners") {
  CheckCases(SlurmCases());
}
TEST_CASE("MPI launcher rows: Open MPI's and Hydra's process-failure banners") {
  CheckCases(MpiCases());
}
// The rows that came from the first catalog, each with its message as its source prints it.
std::vector<RowCase> EarlierRowsCases() {
  return {
      // ProcessGroupNCCL.cpp 2.3+
      {"[rank0]:[E1201 09:14:07.060094846 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID "
       "0(default_pg) Rank 0]  failure detected by watchdog at work sequence id: 5 PG status: "
       "last enqueued work: 5, last completed work: 4",
       "torch.watchdog_failure_seq",
       {{"seq", "5"}, {"last_completed", "4"}}},
      {"[rank3]:[E ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 3] Received a "
       "dump signal due to a collective timeout from rank 1 and we will try our best to dump the "
       "debug info. Last enqueued NCCL work: 7, last completed NCCL work: 6.",
       "torch.dump_signal",
       {{"timeout_rank", "1"}, {"last_enqueued", "7"}}},
      {"[rank0]:[E ProcessGroupNCCL.cpp:1400] [PG ID 0 Rank 0] ProcessGroupNCCL's watchdog got "
       "stuck for 480 seconds without making progress in monitoring enqueued collectives.",
       "torch.watchdog_stuck",
       {{"stuck_s", "480"}}},
      {"[rank0]:[E ProcessGroupNCCL.cpp:1400] [PG ID 0 Rank 0] Heartbeat monitor timed out! "
       "Process will be terminated after dumping debug info.",
       "torch.heartbeat_timeout",
       {}},
      // ProcessGroupWrapper.cpp (TORCH_DISTRIBUTED_DEBUG=DETAIL)
      {"RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
       "collective: CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE), but Rank 1 is "
       "running collective: CollectiveFingerPrint(SequenceNumber=5, OpType=BROADCAST).",
       "torch.desync_mismatch",
       {{"rank_a", "0"}}},
      {"[rank0]:[E ProcessGroupNCCL.cpp:1345] [PG ID 0 Rank 0] ProcessGroupNCCL preparing to "
       "dump debug info.",
       "torch.fr_dump",
       {}},
      {"[rank0]:[I ProcessGroupNCCL.cpp:1250] [PG ID 0 Rank 0] Flight Recorder dumped to "
       "/tmp/nccl_trace_rank_0",
       "torch.fr_dump_written",
       {}},
      {"[E ProcessGroupNCCL.cpp:487] To avoid data inconsistency, we are taking the entire "
       "process down.",
       "torch.taking_down",
       {}},
      // NCCLUtils C10D_NCCL_CHECK
      {"torch.distributed.DistBackendError: NCCL error in: "
       "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run "
       "with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
       "torch.nccl_error",
       {{"location", "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970"},
        {"error", "unhandled system error"}}},
      // TCPStore.cpp 2.x, distributed_c10d.py 1.13 _store_based_barrier
      {"torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 "
       "clients joined.",
       "c10d.store_clients",
       {{"timeout_s", "901"}, {"joined", "1"}, {"expected", "2"}}},
      {"RuntimeError: Timed out initializing process group in store based barrier on rank: 3, "
       "for key: store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)",
       "c10d.store_barrier",
       {{"joined", "7"}, {"timeout", "0:30:00"}}},
      // init.cc ncclGetErrorString(ncclRemoteError) as torch prints it
      {"RuntimeError: NCCL communicator was aborted. NCCL error: remote process exited or there "
       "was a network error",
       "nccl.remote_exited",
       {}},
      // checks.h CUDACHECK (2.10-2.28) and cudawrap.h CUPFN "Cuda failure %d '%s'" (2.19+)
      {W("include/alloc.h:103 Cuda failure 'out of memory'"),
       "nccl.cuda_failure",
       {{"error", "out of memory"}}},
      {W("proxy.cc:1453 Cuda failure 2 'out of memory'"),
       "nccl.cuda_failure",
       {{"error", "out of memory"}}},
      // c10/cuda CUDACachingAllocator / CUDAException
      {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
       "total capacity of 79.15 GiB of which 1.05 GiB is free.",
       "torch.cuda_oom",
       {}},
      {"RuntimeError: CUDA error: an illegal memory access was encountered",
       "torch.cuda_error",
       {{"error", "an illegal memory access was encountered"}}},
      // mlx5 cmd.c mlx5_cmd_out_err (6.x): a command failure that is not a resource limit
      {"mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid 233522): MODIFY_QP(0x503) "
       "op_mod(0x0) failed, status bad parameter(0x3), syndrome (0x29e0c6), err(-22)",
       "kernel.mlx5_error",
       {}},
      // elastic multiprocessing api.py / errors/__init__.py 1.13
      {"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
       "torchrun.child_failed",
       {}},
      {"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 1 "
       "(pid: 826) of binary: /usr/bin/python3",
       "torchrun.failed_exitcode",
       {{"exitcode", "-6"}, {"local_rank", "1"}, {"pid", "826"}}},
      {"  rank      : 3 (local_rank: 1)", "torchrun.table_rank", {{"rank", "3"}}},
      {"  host      : gpu07", "torchrun.table_host", {{"host", "gpu07"}}},
      {"  exitcode  : -6 (pid: 826)", "torchrun.table_exitcode", {{"exitcode", "-6"}}},
      // enqueue.cc v2.18.3-1 NCCL_DEBUG_SUBSYS=COLL
      {I("AllReduce: opCount 1f sendbuff 0x7f1 recvbuff 0x7f2 count 1048576 datatype 7 op 0 "
         "root 0 comm 0x55d0 [nranks=16] stream 0x55d1"),
       "nccl.coll_trace",
       {{"coll", "AllReduce"}, {"opcount", "1f"}, {"nranks", "16"}}},
      // debug.cc: any other WARN
      {W("Some warning NCCL has that the catalog has no row for"), "nccl.warn", {}},
      {"gpu07:2291:2377 [3] init.cc:1 WARN something", "nccl.warn_short", {}},
  };
}
TEST_CASE("the first catalog's rows match their sources' messages") {
  CheckCases(EarlierRowsCases());
}

std::vector<RowCase> ProgressCases() {
  return {
      // The frameworks' main-process-first barriers, as a waiting rank's traceback shows them.
      {"  File \"/opt/conda/lib/python3.9/site-packages/transformers/training_args.py\", line "
       "1891, in main_process_first",
       "progress.main_process_first",
       {}},
      {"    with training_args.main_process_first(desc=\"dataset map tokenization\"):",
       "progress.main_process_first",
       {}},
      {"    with torch_distributed_zero_first(rank):  # init dataset *.cache only once if DDP",
       "progress.zero_first",
       {}},
      // Megatron-LM dataset_utils.py get_samples_mapping, gpt_dataset.py _build_index_mappings
      {"WARNING: could not find index map file "
       "/data/corpus_train_indexmap_320000mns_510msl_0.10ssp_"
       "1234s.npy, building the indices on rank 0 ...",
       "progress.megatron_building_indices",
       {}},
      {" > WARNING: could not find index map files, building the indices on rank 0 ...",
       "progress.megatron_building_indices",
       {}},
      // datasets' map bar (hf_tqdm, unit " examples"), with a script's desc and datasets' own.
      {"Running tokenizer on dataset:  47%|#####     | 3169000/6811963 [30:11<38:27, 1578.58 "
       "examples/s]",
       "progress.datasets_map_bar",
       {{"percent", "47"}, {"done", "3169000"}, {"total", "6811963"}, {"elapsed", "30:11"}}},
      {"Map (num_proc=16): 100%|##########| 52002/52002 [00:04<00:00, 11234.50 examples/s]",
       "progress.datasets_map_bar",
       {{"percent", "100"}, {"elapsed", "00:04"}}},
      // Megatron training_log: ' iteration {:8d}/{:8d} |' + ' consumed samples: {:12d} |' (the
      // newer format with the timestamp in front).
      {" [2024-05-01 10:00:00] iteration      120/  500000 | consumed samples:       122880 | "
       "elapsed time per iteration (ms): 4401.2 |",
       "progress.megatron_iteration",
       {{"step", "120"}, {"total", "500000"}}},
      // Megatron save_checkpoint: 'saving checkpoint at iteration {:7d} to {}'.
      {"saving checkpoint at iteration     500 to /ckpt",
       "progress.saving_checkpoint",
       {{"step", "500"}}},
      {"[rank3]:Saving checkpoint ...", "progress.saving_checkpoint", {{"rank", "3"}}},
      // transformers Trainer._save: f"Saving model checkpoint to {output_dir}".
      {"[INFO|trainer.py:2889] 2024-05-01 10:00:00,000 >> Saving model checkpoint to "
       "out/checkpoint-500",
       "progress.hf_saving_checkpoint",
       {}},
      // accelerate save_state: f"Saving current state to {output_dir}".
      {"05/01/2024 10:00:00 - INFO - accelerate.accelerator - Saving current state to "
       "out/step_500",
       "progress.accelerate_save_state",
       {}},
      // DeepSpeed TorchCheckpointEngine.create via log_dist(ranks=[0]).
      {"[2024-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint "
       "global_step500 is about to be saved!",
       "progress.deepspeed_checkpoint",
       {{"tag", "global_step500"}, {"rank", "0"}}},
      // Lightning ModelCheckpoint's rank_zero_info.
      {"Epoch 2, global step 1500: 'val_loss' reached 0.41230 (best 0.41230), saving model to "
       "'/ckpt/epoch=2-step=1500.ckpt' as top 1",
       "progress.lightning_checkpoint",
       {{"epoch", "2"}, {"step", "1500"}}},
      // Trainer's phase banners and its log dict.
      {"***** Running Evaluation *****", "progress.hf_phase", {{"phase", "Evaluation"}}},
      {"{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 4.9e-05, 'epoch': 0.12}",
       "progress.hf_log_dict",
       {{"epoch", "0.12"}}},
      // Lightning's tqdm bars: the validation loop's description and the epoch bar.
      {"Validation DataLoader 0:  40%|####      | 4/10 [00:01<00:02,  2.50it/s]",
       "progress.lightning_validation",
       {}},
      {"Epoch 3:  45%|####5     | 45/100 [00:10<00:12,  4.40it/s, v_num=0]",
       "progress.lightning_epoch_bar",
       {{"epoch", "3"}}},
  };
}
TEST_CASE(
    "progress rows: Megatron iterations and saves, Trainer, accelerate, DeepSpeed, Lightning") {
  CheckCases(ProgressCases());
}

// ncclGetErrorString (src/init.cc) as wrappers other than torch print it: vLLM's pynccl
// (f"NCCL error: {error_str}"), nccl-tests' "NCCL failure common.cu.. '%s'".
std::vector<RowCase> NcclResultCases() {
  return {
      {"RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
       "nccl.result_unhandled_cuda",
       {}},  // v2.18.3-1 .. v2.28
      {"gpu07: Test NCCL failure common.cu:958 'unhandled cuda error'",
       "nccl.result_unhandled_cuda",
       {}},  // v2.10.3-1 .. v2.17
      {"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
       "nccl.result_system",
       {}},
      {"RuntimeError: NCCL error: internal error - please report this issue to the NCCL "
       "developers",
       "nccl.result_internal",
       {}},
      {"RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)",
       "nccl.result_invalid_usage",
       {}},
      {"RuntimeError: NCCL error: invalid argument (run with NCCL_DEBUG=WARN for details)",
       "nccl.result_invalid_argument",
       {}},
      // init.cc ncclGetErrorString default case (v2.4.8-1 .. v2.30.7-1)
      {"Failed, NCCL error allreducePlugin.cpp:183 'unknown result code'",
       "nccl.result_unknown",
       {}},
      {"gpu07: Test NCCL failure common.cu:958 'unknown result code'", "nccl.result_unknown", {}},
      // torch's DistBackendError appends "NCCL version %s" to the result string: the error row,
      // not the version fact, is the line's match.
      {"internal error - please report this issue to the NCCL developers, NCCL version 2.19.3",
       "nccl.result_internal",
       {}},
      // checks.h NCCLCHECK "%s:%d -> %d" (v2.10.3-1 .. v2.28.9-1), SYSCHECK "%s:%d -> %d (%s)"
      // (v2.19.3-1+), group.cc "%s:%d -> %d [Async thread]".
      {I("misc/socket.cc:567 -> 2"),
       "nccl.return_trace",
       {{"src_file", "misc/socket.cc"}, {"src_line", "567"}, {"nccl_code", "2"}}},
      {I("misc/socket.cc:484 -> 2 (Connection refused)"),
       "nccl.return_trace",
       {{"nccl_code", "2"}, {"error", "Connection refused"}}},
      {I("group.cc:136 -> 2 [Async thread]"),
       "nccl.return_trace_group",
       {{"src_file", "group.cc"}}},
      {"node1: NCCL INFO include/net.h:22 -> 3", "nccl.return_trace_include", {{"nccl_code", "3"}}},
      {I("transport/net_ib.cc:368 -> 2"),
       "nccl.return_trace_transport",
       {{"src_file", "transport/net_ib.cc"}}},
      {I("transport.cc:112 -> 2"), "nccl.return_trace_transport", {{"nccl_code", "2"}}},
      {I("init.cc:1234 -> 6"), "nccl.return_trace_init", {{"nccl_code", "6"}}},
      {I("proxy.cc:1533 -> 3"), "nccl.return_trace_proxy", {{"nccl_code", "3"}}},
      {I("bootstrap.cc:91 -> 2"), "nccl.return_trace_bootstrap", {{"nccl_code", "2"}}},
      {I("enqueue.cc:2215 -> 1"), "nccl.return_trace_enqueue", {{"nccl_code", "1"}}},
      {I("graph/search.cc:1120 -> 5"), "nccl.return_trace_graph", {{"nccl_code", "5"}}},
      // proxy.cc "[Service thread] Connection closed by localRank %d" (v2.12.12-1 .. v2.28.9-1).
      {I("[Service thread] Connection closed by localRank 7"),
       "nccl.proxy_closed_by_local_rank",
       {{"local_rank", "7"}}},
      // libstdc++ vterminate.cc and c10::Error's backtrace header.
      {"terminate called after throwing an instance of 'std::runtime_error'",
       "cxx.terminate_uncaught",
       {{"exception", "std::runtime_error"}}},
      {"Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
       "ProcessGroupNCCL.cpp:565 (most recent call first):",
       "torch.exception_raised_from",
       {{"function", "checkTimeout"}}},
      // ibstat.c "\t\tState: %s" of a port that is not Active.
      {"\t\tState: Down", "ibstat.port_not_active", {{"port_state", "Down"}}},
      {"                State: Initializing",
       "ibstat.port_not_active",
       {{"port_state", "Initializing"}}},
      // Memory registration ENOMEM of libfabric users and RDMA transfer engines.
      {"fi_mr_reg failed, ret is:-12, Cannot allocate memory",
       "rdma.register_enomem",
       {{"call", "fi_mr_reg"}}},
      {"E1030 07:53:11.382602  9073 rdma_context.cpp:253] Failed to register memory "
       "0x742cf2000000: Cannot allocate memory [12]",
       "rdma.register_enomem",
       {{"call", "register memory"}}},
      // glibc malloc_printerr.
      {"free(): invalid next size (fast)", "glibc.heap_corruption", {}},
      {"double free or corruption (out)", "glibc.double_free", {}},
      {"free(): corrupted unsorted chunks", "glibc.corrupted_chunks", {}},
      {"malloc(): corrupted top size", "glibc.corrupted_chunks", {}},
      // Ray's ActorDiedError text.
      {"ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
       "ray.actor_died",
       {}},
      // Ray's memory monitor: the task's OutOfMemoryError and the raylet's summary.
      {"ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
       "ray.memory_monitor_kill",
       {}},
      {"(raylet) Task _map_task failed due to oom. Error: 1 worker(s) were killed due to the node "
       "running low on memory. Memory on the node (IP: 10.0.50.112, ID: 4cb2) was 28.62GB / "
       "30.00GB (0.954017), which exceeds the memory usage threshold of 0.950000",
       "ray.memory_monitor_kill",
       {}},
      // strerror(EADDRINUSE) thrown by torch 1.x's store and THD.
      {"RuntimeError: Address already in use", "os.address_in_use", {}},
      {"RuntimeError: Address already in use at /pytorch/torch/lib/THD/process_group/"
       "General.cpp:17",
       "os.address_in_use",
       {}},
  };
}
// Texts of other layers the corpus's train split shows without a row: cudaGetErrorString in
// other wrappers, the dynamic linker, nvidia-smi, Gloo's connects, UCX, `ulimit -a`, NCCL's abort
// line, torch 1.x's store connect; and wrapped or older variants of existing rows.
std::vector<RowCase> OtherLayerCases() {
  return {
      // Abseil's failure signal handler: the signal and the faulting PC's function.
      {"*** SIGSEGV received at time=1775734074 on cpu 19 ***",
       "abseil.signal_received",
       {{"signal_name", "SIGSEGV"}, {"time", "1775734074"}}},
      {"PC: @     0xe1e2567f5014  (unknown)  ncclLocalOpAppend()",
       "abseil.pc_in_nccl",
       {{"function", "ncclLocalOpAppend"}}},
      // THC (torch 1.x) "cuda runtime error (%d) : %s at %s:%d".
      {"RuntimeError: cuda runtime error (802) : system not yet initialized at "
       "/opt/conda/aten/src/THC/THCGeneral.cpp:50",
       "cuda.system_not_ready",
       {}},
      // CUDA samples' checkCudaErrors: "CUDA error at %s:%d code=%d(%s) \"%s\"".
      {"CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "
       "\"cudaSetDevice(currentDevice)\"",
       "cuda.system_not_ready_name",
       {}},
      // cudaErrorInvalidDevice (101) as NCCL's checks.h "Cuda failure '%s'" (2.10-2.18), "Cuda
      // failure %d '%s'" (2.19+), torch's c10_cuda_check "CUDA error: %s" and THC's "cuda
      // runtime error (%d) : %s at %s:%d"; the enum's name in the samples' checkCudaErrors.
      {"gpu07:2291:2377 [3] NCCL WARN Cuda failure 'invalid device ordinal'",
       "cuda.invalid_device_ordinal",
       {}},
      {"gpu07:2291:2377 [3] NCCL WARN Cuda failure 101 'invalid device ordinal'",
       "cuda.invalid_device_ordinal",
       {}},
      {"[rank9]: RuntimeError: CUDA error: invalid device ordinal",
       "cuda.invalid_device_ordinal",
       {{"rank", "9"}}},
      {"RuntimeError: cuda runtime error (101) : invalid device ordinal at "
       "/pytorch/aten/src/THC/THCGeneral.cpp:50",
       "cuda.invalid_device_ordinal",
       {}},
      {"CUDA error at simpleP2P.cu:98 code=101(cudaErrorInvalidDevice) \"cudaSetDevice(gpuid)\"",
       "cuda.invalid_device_name",
       {}},
      // alloc.h 2.14-2.30 ncclCudaCalloc / ncclCudaCallocAsync.
      {"gpu07:2291:2377 [3] NCCL WARN Failed to CUDA calloc async 1920 bytes",
       "nccl.cuda_calloc_failed",
       {{"bytes", "1920"}}},
      {"gpu07:2291:2377 [3] NCCL WARN Failed to CUDA calloc 4194304 bytes",
       "nccl.cuda_calloc_failed",
       {{"bytes", "4194304"}}},
      // alloc.h 2.19-2.30 ncclCudaMalloc.
      {"gpu07:2291:2377 [3] include/alloc.h:297 NCCL WARN Failed to CUDA malloc 67108864 bytes",
       "nccl.cuda_calloc_failed",
       {{"bytes", "67108864"}}},
      // mnnvl.cc 2.27-2.30, both texts.
      {"nvl72-a01:4411:4490 [0] mnnvl.cc:67 NCCL WARN MNNVL (cliqueSize 72) is available but not "
       "working on this system. Check the IMEX channel configuration "
       "(/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.",
       "nccl.mnnvl_not_working",
       {{"clique_size", "72"}, {"check", "IMEX channel configuration "}}},
      {"nvl72-a01:4411:4490 [0] mnnvl.cc:78 NCCL WARN MNNVL (cliqueSize 18) is available but not "
       "working on this system. Check the IMEX configuration (nvidia-imex-ctl -N). Set "
       "NCCL_MNNVL_ENABLE=0 to ignore this issue.",
       "nccl.mnnvl_not_working",
       {{"clique_size", "18"}, {"check", "IMEX configuration "}}},
      // init.cc 2.14-2.30, as torch's "Last error:" line repeats it.
      {"Invalid config blocking attribute value -2147483648",
       "nccl.config_blocking_invalid",
       {{"value", "-2147483648"}}},
      // graph/paths.cc 2.10-2.30.
      {"gpu07:2291:2291 [3] NCCL WARN Failed to find reverse path from remNode 0/5f000 nlinks 4 "
       "to node 0/cb000",
       "nccl.topo_reverse_path",
       {{"rem_id", "5f000"}, {"nlinks", "4"}, {"node_id", "cb000"}}},
      // enqueue.cc 2.10-2.23, 2.24-2.29 (with and without a forced NCCL_ALGO), 2.30.
      {"gpu07:2291:2291 [3] NCCL WARN Error : no algorithm/protocol available",
       "nccl.no_algorithm",
       {}},
      {"gpu07:2291:2291 [3] NCCL WARN Error : no algorithm/protocol available for function "
       "AllGather with datatype ncclInt8.",
       "nccl.no_algorithm",
       {{"function", "AllGather"}, {"datatype", "ncclInt8"}}},
      {"gpu07:2291:2291 [3] NCCL WARN Error : no algorithm/protocol available for function "
       "AllGather with datatype ncclInt8. NCCL_ALGO was set to Tree.",
       "nccl.no_algorithm_forced",
       {{"function", "AllGather"}, {"algo", "Tree"}}},
      {"gpu07:2291:2291 [3] NCCL WARN No algorithm/protocol available for function Broadcast "
       "with datatype ncclInt8. NCCL_PROTO was set to LL128.",
       "nccl.no_algorithm_forced",
       {{"function", "Broadcast"}, {"proto", "LL128"}}},
      // THC's _THError and its stderr note (torch 0.4-1.10, THCGeneral.cpp).
      {"RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
       "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265",
       "torch.thc_cuda_error",
       {{"cuda_err", "39"}, {"error", "uncorrectable ECC error encountered"}}},
      {"THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=2 : out of "
       "memory",
       "torch.thc_check_fail",
       {{"cuda_err", "2"}, {"error", "out of memory"}}},
      // NVML's error name as a GPU health agent prints it; gpud's Xid report.
      {"failed to get remapped rows for GPU-ac896b35-5782-c478-4b2a-a661de07770f: failed to get "
       "device remapped rows: ERROR_GPU_IS_LOST",
       "nvml.gpu_is_lost_name",
       {}},
      {"XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00",
       "gpud.xid_detected",
       {{"xid", "79"}, {"xid_meaning", "GPU has fallen off the bus"}, {"pci", "0000:ae:00"}}},
      {"XID 74 (NVLINK Error) detected on PCI:0000:04:00",
       "gpud.xid_detected",
       {{"xid", "74"}, {"pci", "0000:04:00"}}},
      // The kernel's IOMMU fault reports (AMD-Vi, Intel DMAR).
      {"Sep 21 09:59:59 runtime kernel: nvidia 0000:07:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT "
       "domain=0x0003 address=0x80000040 flags=0x0020]",
       "kernel.amd_iommu_page_fault",
       {{"domain", "0x0003"}, {"address", "0x80000040"}}},
      // No pci_dev for the requester: the device is in the message (5.x, and 6.x with the segment).
      {"[ 4703.568967] AMD-Vi: Event logged [IO_PAGE_FAULT device=41:00.0 domain=0x000e "
       "address=0x000003f80001b100 flags=0x0030]",
       "kernel.amd_iommu_page_fault",
       {{"domain", "0x000e"}, {"address", "0x000003f80001b100"}}},
      {"AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:04:00.0 domain=0x0000 address=0x10b4a01e0 "
       "flags=0x0070]",
       "kernel.amd_iommu_page_fault",
       {{"domain", "0x0000"}, {"address", "0x10b4a01e0"}}},
      {"DMAR: [DMA Write] Request device [3b:00.0] fault addr 7f7c0000 [fault reason 05] PTE "
       "Write access is not set",
       "kernel.dmar_fault",
       {{"pci", "3b:00.0"}, {"address", "7f7c0000"}}},
      {"DMAR: [DMA Read NO_PASID] Request device [af:00.0] fault addr 0x2e8d5000 [fault reason "
       "0x06] PTE Read access is not set",
       "kernel.dmar_fault",
       {{"pci", "af:00.0"}, {"address", "2e8d5000"}}},
      // net_ib.cc 2.23-2.28.
      {"gpu07:2291:2291 [3] NCCL WARN NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid "
       "argument",
       "nccl.ib_roce_version_read_failed",
       {{"error", "Invalid argument"}}},
      // Ray's check_version_info.
      {"RuntimeError: Version mismatch: The cluster was started with:", "ray.version_mismatch", {}},
      // cudaErrorPeerAccessUnsupported in NCCL's p2p transport and torch.
      {"n1:1:1 [0] transport/p2p.cc:1 NCCL WARN Cuda failure 'peer access is not supported "
       "between these two devices'",
       "cuda.peer_access_unsupported",
       {}},
      {"RuntimeError: CUDA error: peer access is not supported between these two devices",
       "cuda.peer_access_unsupported",
       {}},
      // UCX ib_mlx5_dv.c; libfabric EFA status 4126 in aws-ofi-nccl's completion error line.
      {"ib_mlx5_dv.c:161  UCX  ERROR   mlx5dv_devx_obj_create(QP) failed, syndrome 0: Cannot "
       "allocate memory",
       "ucx.devx_create_qp_failed",
       {{"syndrome", "0"}, {"error", "Cannot allocate memory"}}},
      {"NET/OFI Request 0x7f456c224810 completed with error. RC: 103. Error: 4126 (Unresponsive "
       "receiver (reachable by EFA device but handshake failed) My EFA addr: "
       "fi_addr_efa://[fe80::c55:2eff:fe44:db5]:0:142160333",
       "libfabric.efa_unresponsive_receiver",
       {}},
      // Build / toolkit mismatches as NCCL's checks.h and torch's c10_cuda_check print them.
      {"c76d92cccb6e:72:456 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'",
       "cuda.symbol_not_found",
       {}},
      // torch/cuda/__init__.py's capability warning, its text and the echoed source line.
      {"/opt/conda/lib/python3.8/site-packages/torch/cuda/__init__.py:146: UserWarning: "
       "NVIDIA GeForce RTX 4090 with CUDA capability sm_89 is not compatible with the current "
       "PyTorch installation.",
       "torch.cuda_capability_unsupported",
       {{"sm", "89"}}},
      {"  warnings.warn(incompatible_device_warn.format(device_name, capability, \" \".join("
       "arch_list), device_name))",
       "torch.cuda_capability_warn_line",
       {}},
      {"RuntimeError: CUDA error: no kernel image is available for execution on the device",
       "cuda.no_kernel_image",
       {}},
      {"RuntimeError: CUDA error: invalid device function", "cuda.invalid_device_function", {}},
      {"RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
       "cuda.unsupported_ptx",
       {}},
      // nccl-tests common.h CUDACHECK: "%s: Test CUDA failure %s:%d '%s'".
      {" Test CUDA failure common.cu:1045 'CUDA driver version is insufficient for CUDA runtime "
       "version'",
       "cuda.driver_insufficient",
       {}},
      // glibc _dl_lookup_symbol_x / dlerror.
      {"nccl-tests/build/all_reduce_perf: symbol lookup error: nccl-tests/build/all_reduce_perf: "
       "undefined symbol: ncclCommRegister",
       "ld.undefined_nccl_symbol",
       {{"symbol", "ncclCommRegister"}}},
      {"ImportError: /usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so: undefined "
       "symbol: ncclMemFree",
       "ld.undefined_nccl_symbol",
       {{"symbol", "ncclMemFree"}}},
      {"undefined symbol ncclCommRegister",
       "ld.undefined_nccl_symbol",
       {{"symbol", "ncclCommRegister"}}},
      // nvidia-smi.
      {"Unable to determine the device handle for GPU 0000:17:00.0: GPU is lost.  Reboot the "
       "system to recover this GPU",
       "nvml.gpu_lost",
       {{"pci", "0000:17:00.0"}}},
      {"Unable to determine the device handle for GPU0000:03:00.0: Unknown Error",
       "nvml.gpu_lost",
       {{"pci", "0000:03:00.0"}, {"error", "Unknown Error"}}},
      // ProcessGroupGloo.cpp; gloo pair.cc.
      {"RuntimeError: Gloo connectFullMesh failed with "
       "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
       "gloo.connect_full_mesh",
       {}},
      {"  what():  [/opt/conda/third_party/gloo/gloo/transport/tcp/pair.cc:724] connect "
       "[127.0.1.1]:3210: Connection refused",
       "gloo.connect_failed",
       {{"addr", "127.0.1.1"}, {"port", "3210"}, {"error", "Connection refused"}}},
      // UCX ib_md.c; `ulimit -a`; UCX debug.c.
      // (The line's head, "ibv_reg_mr(...) failed: Cannot allocate", is nccl.ibv_reg_mr's when
      // it is on the same line; here the log wrapped it.)
      {"allocate memory : Please set max locked memory (ulimit -l) to 'unlimited' (current: "
       "8192 kbytes)",
       "ucx.memlock_hint",
       {{"memlock_kb", "8192"}}},
      {"[     INFO ] < /__w/1/s/contrib/../src/uct/ib/base/ib_md.c:1193 RDMA transports are "
       "disabled because max locked memory limit (64 kbytes) is too low. Please set max locked "
       "memory (ulimit -l) to 'unlimited' >",
       "ucx.memlock_hint",
       {{"memlock_kb", "64"}}},
      {"allocate memory : Please set max locked memory (ulimit -l) to 'unlimited'",
       "ucx.memlock_hint",
       {}},
      {"max locked memory       (kbytes, -l) 2097152",
       "os.ulimit_memlock",
       {{"memlock_kb", "2097152"}}},
      {"[qgpu813:1    :0:381] Caught signal 7 (Bus error: nonexistent physical address)",
       "ucx.caught_signal",
       {{"signal", "7"}, {"signal_name", "Bus error"}}},
      // UCX debug.c backtrace frames: an NCCL function, or any function of a file in NCCL's src/.
      {" 1 0x000000000004f03d ncclLaunchPrepare()  /dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/"
       "src/enqueue.cc:574",
       "ucx.frame_in_nccl",
       {{"function", "ncclLaunchPrepare"}}},
      {" 3 0x0000000000053d4b groupLaunch()  /dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/src/"
       "group.cc:129",
       "ucx.frame_in_nccl",
       {{"function", "groupLaunch"}}},
      // glibc backtracesyms.c; c10 Backtrace.cpp.
      {"/usr/lib/x86_64-linux-gnu/libnccl.so.2(ncclProxyService+0x1a2) [0x7f3c2e1b41a2]",
       "crash.frame_libnccl",
       {{"function", "ncclProxyService"}}},
      {"frame #4: <unknown function> + 0x5e1b2 (0x7f3c2e1b41a2 in "
       "/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2)",
       "crash.frame_libnccl",
       {{"function", "<unknown"}}},
      // gdb stack.c; Open MPI stacktrace.c; Python MemoryError of a C++ std::bad_alloc.
      {"#0  0x00001554ff97c269 in ncclIbDeregMr (comm=0x0, mhandle=0x0) at transport/net_ib.cc:906",
       "gdb.frame_in_nccl",
       {{"function", "ncclIbDeregMr"}}},
      {"[rtptest1621:405884] *** Process received signal ***",
       "openmpi.process_received_signal",
       {}},
      {"    \"message\": \"MemoryError: std::bad_alloc\",", "python.memory_error_bad_alloc", {}},
      // nccl-tests common.h CUDACHECK; NVRM's assertion with nvstatuscodes.h's name; ls -l.
      {"gpu07: Test CUDA failure common.cu:1007 'unspecified launch failure'",
       "nccltests.cuda_failure",
       {{"error", "unspecified launch failure"}}},
      {"NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] "
       "(0x00000062) returned from status @ kernel_channel.c:2874",
       "nvrm.reset_required",
       {}},
      {"lrwxrwxrwx 1 root root 17 Jul 17 19:02 /opt/nccl/build/lib/libnccl.so.2 -> "
       "libnccl.so.2.27.0",
       "nccl.lib_file_version",
       {{"nccl_version", "2.27.0"}}},
      // faulthandler.c.
      {"Fatal Python error: Segmentation fault",
       "crash.fatal_python_signal",
       {{"signal_name", "Segmentation fault"}}},
      // faulthandler.c format_timeout: whole seconds, microseconds, behind a launcher's prefix.
      {"Timeout (0:05:00)!", "python.faulthandler_timeout", {{"timeout", "0:05:00"}}},
      {"Timeout (0:00:02.500000)!", "python.faulthandler_timeout", {{"timeout", "0:00:02.500000"}}},
      {"[default3]:Timeout (1:00:00)!", "python.faulthandler_timeout", {{"timeout", "1:00:00"}}},
      // init.cc commAbort (2.12-2.30).
      {I("comm 0x560c6a8aafd0 rank 0 nranks 2 cudaDev 0 busId 86000 - Abort COMPLETE"),
       "nccl.abort_complete",
       {{"rank", "0"}, {"bus_id", "86000"}}},
      // lspci -vvv's ACS control line; NCCL 2.4-2.7's mismatch WARN; socket.cc's retry INFO.
      {"                ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ "
       "EgressCtrl- DirectTrans-",
       "lspci.acs_srcvalid",
       {}},
      {W("Mismatched collective detected, please check your collective calls at and around rank "
         "11. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs"),
       "nccl.mismatched_collective",
       {{"rank", "11"}}},
      {I("Call to connect returned Connection refused, retrying"),
       "nccl.socket_connect_retrying",
       {{"error", "Connection refused"}}},
      // socket.cc 2.24-2.27 and 2.28 retry INFO; the watchdog's backtrace frame.
      {I("socketPollConnect: connect returned No route to host, retrying (26/34) after sleep for "
         "2600 msec"),
       "nccl.socket_poll_connect_retrying",
       {{"error", "No route to host"}, {"retry", "26"}, {"retries", "34"}}},
      {I("socketPollConnect: connect to 10.0.0.2<43211> returned Connection refused, retrying "
         "(3/34) after sleep for 300 msec"),
       "nccl.socket_poll_connect_retrying",
       {{"peer", "10.0.0.2<43211>"}, {"error", "Connection refused"}}},
      {"frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
       "duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x1554e9e0f8f2 in libtorch_cuda.so)",
       "torch.check_timeout_frame",
       {}},
      // CPython's traceback header.
      {"Traceback (most recent call last):", "python.traceback", {}},
      {"[rank1]: Traceback (most recent call last):", "python.traceback", {{"rank", "1"}}},
      // torch 1.x tcputil::connect.
      {"RuntimeError: connect() timed out. Original timeout was 900000 ms.",
       "c10d.connect_timed_out",
       {{"timeout_ms", "900000"}}},
      // torch 1.x's desync wording; the NVLS bind failure whose CUDA error is on the next line.
      // (A watchdog line cut inside WorkNCCL(...) stays unmatched: the supervisor's long-line
      // seam needs the whole message to match, watchdog/hang/output_seam_test.cpp.)
      {"RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
       "inconsistent collective: CollectiveFingerPrint(OpType=ALLGATHER",
       "torch.desync_mismatch",
       {{"rank_a", "0"}}},
      {"Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152:",
       "nccl.nvls_bind_failed",
       {{"size", "2097152"}}},
  };
}
TEST_CASE("rows of other layers: CUDA texts, the linker, nvidia-smi, Gloo, UCX, ulimit, aborts") {
  CheckCases(OtherLayerCases());
}

TEST_CASE("a kernel built for another GPU (invalid device function) is no device-selection row") {
  LineMatcher m;
  // cudaErrorInvalidDeviceFunction (98): the enum name extends cudaErrorInvalidDevice's.
  for (const char* line :
       {"CUDA error at kernel.cu:12 code=98(cudaErrorInvalidDeviceFunction) \"cudaGetLastError()\"",
        "RuntimeError: CUDA error: invalid device function"}) {
    INFO(line);
    auto r = m.MatchLine(line);
    if (r.has_value()) CHECK(r->signature->category != std::string_view("duplicate_gpu"));
  }
}

TEST_CASE("NCCL's other config and algorithm messages are not the new rows'") {
  LineMatcher m;
  // init.cc's neighbouring checks (cgaClusterSize, NCCL_COMM_BLOCKING) and nvls' "no
  // algorithm" INFO of another shape must not read as a version split or an NCCL defect.
  for (const char* line :
       {"gpu07:2291:2291 [3] NCCL WARN Invalid config cgaClusterSize attribute value -3",
        "gpu07:2291:2291 [3] NCCL WARN Invalid NCCL_COMM_BLOCKING value 7",
        "gpu07:2291:2291 [3] NCCL INFO Failed to find path from node 0/5f000 to node 0/cb000"}) {
    INFO(line);
    auto r = m.MatchLine(line);
    if (!r.has_value()) continue;
    CHECK(r->signature->id != std::string_view("nccl.config_blocking_invalid"));
    CHECK(r->signature->id != std::string_view("nccl.topo_reverse_path"));
    CHECK(r->signature->id != std::string_view("nccl.no_algorithm"));
  }
}

TEST_CASE(
    "Ray's patch-level warning, other Xid-less PCI lines and healthy IOMMU lines match none") {
  LineMatcher m;
  for (const char* line :
       {"2025-05-26 18:00:25,881 WARNING utils.py:1591 -- Python patch version mismatch: The "
        "cluster was started with:",
        "SXID 123 detected on PCI:0000:9b:00", "AMD-Vi: Interrupt remapping enabled",
        "DMAR: IOMMU enabled", "THCudaCheck OK"}) {
    INFO(line);
    auto r = m.MatchLine(line);
    if (!r.has_value()) continue;
    for (const char* id :
         {"ray.version_mismatch", "gpud.xid_detected", "kernel.amd_iommu_page_fault",
          "kernel.dmar_fault", "torch.thc_check_fail"}) {
      CHECK(r->signature->id != std::string_view(id));
    }
  }
}

TEST_CASE("NCCL result rows: ncclGetErrorString's texts as other wrappers print them") {
  CheckCases(NcclResultCases());
}

std::vector<RowCase> RdmaToolsCases() {
  return {
      // ibstatus with no RDMA device at all ('*': the unexpanded glob).
      {"Fatal error:  device '*': sys files not found (/sys/class/infiniband/*/ports)",
       "ibstatus.no_ports",
       {{"device", "*"}}},
      // rdma-core devinfo.c "\t\t\tstate:\t\t\t%s (%d)" and "\t\t\tphys_state:\t\t%s (%d)"
      {"\t\t\tstate:\t\t\tPORT_DOWN (1)", "devinfo.port_down", {{"port_state", "1"}}},
      {"\t\t\tstate:\t\t\tPORT_INIT (2)", "devinfo.port_init", {{"port_state", "INIT"}}},
      {"\t\t\tphys_state:\t\tPOLLING (2)", "devinfo.phys_no_link", {{"phys_state", "POLLING"}}},
      // iproute2 rdma/link.c "link %s/%u " ... "state %s physical_state %s "
      {"link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc 0 state DOWN "
       "physical_state DISABLED",
       "rdma_link.port_not_active",
       {{"dev", "mlx5_1"}, {"port", "1"}, {"port_state", "DOWN"}, {"phys_state", "DISABLED"}}},
      // mlnx-tools ibdev2netdev "$d port $port ==> $eth ($link_state)"
      {"mlx5_3 port 1 ==> ibp84s0 (Down)",
       "ibdev2netdev.port_down",
       {{"dev", "mlx5_3"}, {"port", "1"}, {"ifname", "ibp84s0"}}},
      // perftest_parameters.c " Port number %d state is %s"
      {" Port number 1 state is Down",
       "perftest.port_state",
       {{"port", "1"}, {"port_state", "Down"}}},
      // Mooncake rdma_context.cpp "Device " << name << " port not active"
      {"W0911 06:19:37.204383  3746 rdma_context.cpp:433] Device mlx5_3 port not active",
       "mooncake.port_not_active",
       {{"dev", "mlx5_3"}}},
      // show_gids "$d\t$p\t$g\t$gid\t$ipv4  \t$_type\t$_ndev", with and without an IPv4
      {"mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0b00:0048\t11.0.0.72  \tv2\tens3np0",
       "show_gids.row",
       {{"dev", "mlx5_0"}, {"gid_index", "3"}, {"addr", "11.0.0.72"}, {"roce", "v2"}}},
      {"mlx5_0\t1\t1\tfe80:0000:0000:0000:a288:c2ff:fe5b:03ec\t\t\tv2\tens3np0",
       "show_gids.row",
       {{"gid_index", "1"}, {"addr", ""}, {"roce", "v2"}}},
      // devinfo.c "\t\t\tGID[%3d]:\t\t%s"
      {"\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0c0c:0c64",
       "devinfo.gid_row",
       {{"gid_index", "2"}, {"gid", "0000:0000:0000:0000:0000:ffff:0c0c:0c64"}}},
      // ibv_wc_status_str(IBV_WC_LOC_LEN_ERR), here in the mlx5 kernel log's QP error line
      {"mlx5_bond_0/1: QP 51291 error: local length error (0x8e 0x0 0x0)",
       "verbs.wc_local_length_error",
       {}},
      // rc_pingpong.c "Failed to modify QP to RTR"; perftest "Failed to modify QP %d to RTR"
      {"Failed to modify QP to RTR", "verbs.modify_qp_rtr_failed", {{"qpn", ""}}},
      {"Failed to modify QP 1234 to RTR", "verbs.modify_qp_rtr_failed", {{"qpn", "1234"}}},
      // rc_pingpong.c "Couldn't create QP"; Mooncake PLOG "Failed to create QP: <strerror> [12]"
      {"Couldn't create QP", "verbs.create_qp_failed", {{"error", ""}}},
      {"E0729 05:04:30.527725 14093 rdma_endpoint.cpp:70] Failed to create QP: Cannot allocate "
       "memory [12]",
       "verbs.create_qp_failed",
       {{"error", "Cannot allocate memory"}}},
      // Mooncake PLOG "Failed to register memory " << addr; libfabric "gdr_pin_buffer failed!"
      {"E0511 07:42:36.355509 10240 rdma_context.cpp:198] Failed to register memory 0x2e1cbac200: "
       "Bad address [14]",
       "rdma.register_bad_address",
       {}},
      {"libfabric:6413:1763620725::core:core:cuda_gdrcopy_dev_register():320<warn> "
       "gdr_pin_buffer failed! error: Invalid argument ptr: 0xdc12000000 len: 146800640",
       "libfabric.gdr_pin_failed",
       {}},
      // Mooncake rdma_context.cpp with EINVAL; aws-ofi-nccl nccl_ofi_net.c v1.7.4 "Unable to
      // register
      // memory (type = %d) for device %d. RC: %d, Error: %s"
      {"E0819 11:21:45.193161 147554 rdma_context.cpp:588] Failed to register memory "
       "0x12397fd5800: "
       "Invalid argument [22]",
       "rdma.register_invalid_argument",
       {}},
      {"ip-10-0-1-5:3234:3425 [5] register_mr_buffers:544 NCCL WARN NET/OFI Unable to register "
       "memory (type = 2) for device 0. RC: -22, Error: Invalid argument",
       "rdma.register_invalid_argument",
       {}},
      // mlx5 mr.c create_mkey_warn "async reg mr failed. status %d"; efa_com_cmd.c
      // "Failed to allocate pd[%d]"; Mooncake's registration failing with EIO
      {"[33058.244475] infiniband mlx5_0: create_mkey_warn:158:(pid 2163): async reg mr failed. "
       "status -121",
       "kernel.mlx5_reg_mr_failed",
       {{"status", "-121"}}},
      {"[ 1632.420957] infiniband efa_0: Failed to allocate pd[-12]",
       "kernel.efa_alloc_pd_failed",
       {{"errno", "-12"}}},
      {"Failed to register memory 0x7fa3ce000000: Input/output error [5]",
       "mooncake.register_eio",
       {}},
      // lower-case QP in an application's own message
      {"[ERROR] (setup_ib.c:184:setup_ib: errno: Cannot allocate memory) Failed to create qp",
       "verbs.create_qp_failed",
       {}},
      // aws-ofi-nccl "NET/OFI Couldn't enable endpoint. RC: %d, ERROR: %s" with ENOMEM
      {"create_nccl_ofi_component:496 NCCL WARN NET/OFI Couldn't enable endpoint. RC: -12, ERROR: "
       "Cannot allocate memory",
       "ofi.enomem",
       {{"what", "Couldn't enable endpoint"}, {"rc", "-12"}}},
      // "Request %p completed with error. RC: %d. Error: %s. Completed length: %ld, Request: %s"
      // (nccl_ofi_net.c v1.4.0 .. v1.6.0, nccl_ofi_sendrecv.c v1.7.4-aws .. v1.9.2-aws)
      {"ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 completed with error. RC: "
       "20. Error: unknown error. Completed length: 0, Request: { buffer_index: 255, dev: 1 }",
       "ofi.completion_error",
       {{"rc", "20"}, {"prov_errno", ""}, {"error", "unknown error"}}},
      // "... RC: %d. Error: %d (%s). Completed length: %ld, Request: %s" (v1.11.0-aws .. v1.21.1)
      {"process_err_completion:1562 NCCL WARN NET/OFI Request 0x7f08c0001d30 completed with "
       "error. RC: 5. Error: 16 (NO_SPACE). Completed length: 0, Request: { dev: 0 }",
       "ofi.completion_error",
       {{"rc", "5"}, {"prov_errno", "16"}, {"error", "NO_SPACE"}}},
      // "Request %p seq %d completed with error. ..." (nccl_ofi_rdma.cpp v1.17.0 .. v1.21.1) and
      // "Remote write completed with error. RC: %d. Error: %d (%s). Completed length: %ld"
      {"NCCL WARN NET/OFI Request 0x7f08c0001d30 seq 12 completed with error. RC: 5. Error: 9 "
       "(Invalid receiver queue pair number (QPN)). Completed length: 0, Request: {}",
       "ofi.completion_error",
       {{"rc", "5"}, {"prov_errno", "9"}, {"error", "Invalid receiver queue pair number (QPN)"}}},
      {"NCCL WARN NET/OFI Remote write completed with error. RC: 5. Error: 3 (Remote access "
       "error). Completed length: 0",
       "ofi.completion_error",
       {{"rc", "5"}, {"prov_errno", "3"}}},
      // NVSHMEM ibgda.cpp WARN_PRINT "device %s cannot allocate buffer on the specified memory
      // type. Skipping..."
      {"WARN: device mlx5_3 cannot allocate buffer on the specified memory type. Skipping...",
       "nvshmem.nic_memtype_unsupported",
       {{"dev", "mlx5_3"}}},
      // ibrc.cpp / ibgda.cpp NVSHMEMI_ERROR_PRINT ("%s:%s:%d: " prefix).
      {"/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.0/main_nvshmem/src/modules/transport/ibrc/"
       "ibrc.cpp:nvshmemt_init:1854: neither nv_peer_mem, or nvidia_peermem detected. Skipping "
       "transport.",
       "nvshmem.no_peermem",
       {}},
      // transport.cpp nvshmemi_transport_init.
      {"src/host/transport/transport.cpp:nvshmemi_transport_init:282: init failed for transport: "
       "IBGDA",
       "nvshmem.transport_init_failed",
       {{"transport", "IBGDA"}}},
      {"src/host/transport/transport.cpp:nvshmemi_transport_init:294: Unable to initialize any "
       "transports. returning error.",
       "nvshmem.no_transport",
       {}},
      // topo.cpp.
      {"src/host/topo/topo.cpp:488: [GPU 1] Peer GPU 4 is not accessible, exiting ... ",
       "nvshmem.peer_not_accessible",
       {{"pe", "1"}, {"peer_pe", "4"}}},
      // nvshmem_api.h NONZERO_EXIT then its message.
      {"src/include/host/nvshmem_api.h:65: non-zero status: -1: No such file or directory, "
       "exiting... aborting due to error in nvshmemi_init_thread ",
       "nvshmem.init_aborted",
       {}},
      // Intel MPI's DAPL start-up message naming RLIMIT_MEMLOCK
      {"[0] DAPL startup: RLIMIT_MEMLOCK too small", "mpi.rlimit_memlock_small", {}},
      // p2pBandwidthLatencyTest's table header; /proc/cmdline; ip address's inet lines
      {"P2P Connectivity Matrix", "cuda_samples.p2p_matrix", {}},
      {"BOOT_IMAGE=/vmlinuz-5.15.0-101-generic root=/dev/mapper/ubuntu--vg-ubuntu--lv ro iommu=pt",
       "linux.cmdline_iommu",
       {{"param", "iommu"}, {"value", "pt"}}},
      {"    inet 10.1.2.3/24 brd 10.1.2.255 scope global eth0",
       "iproute2.inet_address",
       {{"addr", "10.1.2.3"}, {"prefix", "24"}, {"scope", "global"}, {"ifname", "eth0"}}},
      // perftest_resources.c "Couldn't allocate MR" (4.4-4.5) and " with error=%d" (4.5-0.20)
      {"Couldn't allocate MR", "perftest.alloc_mr_failed", {}},
      {"Couldn't allocate MR with error=14", "perftest.alloc_mr_failed", {{"errno", "14"}}},
      // its --use_cuda path: "cuMemAlloc() of a %lu bytes GPU buffer"
      {"cuMemAlloc() of a 262144 bytes GPU buffer", "perftest.cuda_buffer", {{"size", "262144"}}},
      // net-tools lib/interface.c "%s: flags=%d<%s>  mtu %d"
      {"ipogif0: flags=193<UP,RUNNING,NOARP>  mtu 65520",
       "nettools.ifconfig_interface",
       {{"ifname", "ipogif0"}, {"flags", "UP,RUNNING,NOARP"}, {"mtu", "65520"}}},
  };
}
TEST_CASE(
    "RDMA tool rows: ibv_devinfo, rdma link, ibdev2netdev, show_gids, perftest, other stacks") {
  CheckCases(RdmaToolsCases());
}

// strerror(3) / gai_strerror texts as other layers print them (Python's OSError, Go, gRPC,
// launchers), and the framework device rows of cuda.inc; a source's own row of the same text
// matches first.
std::vector<RowCase> ErrnoTextCases() {
  return {
      {"ConnectionRefusedError: [Errno 111] Connection refused", "errno.econnrefused", {}},
      {"dial tcp 10.0.0.2:29500: connect: connection refused", "errno.econnrefused", {}},
      {"OSError: [Errno 113] No route to host", "errno.ehostunreach", {}},
      {"OSError: [Errno 101] Network is unreachable", "errno.enetunreach", {}},
      {"TimeoutError: [Errno 110] Connection timed out", "errno.etimedout", {}},
      {"ConnectionResetError: [Errno 104] Connection reset by peer", "errno.econnreset", {}},
      {"BrokenPipeError: [Errno 32] Broken pipe", "errno.epipe", {}},
      {"OSError: [Errno 99] Cannot assign requested address", "errno.eaddrnotavail", {}},
      {"socket.gaierror: [Errno -2] Name or service not known", "errno.eai_noname", {}},
      {"socket.gaierror: [Errno -3] Temporary failure in name resolution", "errno.eai_again", {}},
      {"OSError: [Errno 28] No space left on device: '/dev/shm/psm_shm.1'", "errno.enospc", {}},
      {"mmap failed: Cannot allocate memory", "errno.enomem", {}},
      {"ERRNO: Bad address.", "errno.efault", {}},
      {"OSError: [Errno 24] Too many open files: '/proc/self/fd'", "errno.emfile", {}},
      {"accept4: Too many open files in system", "errno.emfile", {}},
      // TensorFlow's cuda_platform.cc "failed initializing StreamExecutor for CUDA device
      // ordinal %d: %s" (and XLA's " stream group %d" form)
      {"F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value instead of "
       "handling error Internal: failed initializing StreamExecutor for CUDA device ordinal 0: "
       "Internal: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY",
       "tensorflow.stream_executor_init",
       {{"cuda_dev", "0"}}},
      // vLLM's gpu_worker.py start-up check, with and without the device name
      {"ValueError: Free memory on device cuda:0 (12.18/23.56 GiB) on startup is less than "
       "desired GPU memory utilization (0.92, 21.67 GiB).",
       "vllm.startup_free_memory",
       {{"cuda_dev", "cuda:0"}, {"free_gib", "12.18"}, {"total_gib", "23.56"}}},
      {"ValueError: Free memory on device (61.05/119.7 GiB) on startup is less than desired",
       "vllm.startup_free_memory",
       {{"free_gib", "61.05"}}},
      // nvls.cc "NVLS Bind mem %p UC handle 0x%llx MC handle 0x%llx size %zi" (2.17-2.22)
      {I("NVLS Bind mem 0xac0000000 UC handle 0x7f3310ccb240 MC handle 0x7f3310ccaa20 size "
         "1073741824"),
       "nccl.nvls_bind_mem",
       {{"size", "1073741824"}}},
  };
}
TEST_CASE("errno text rows: the C library's messages when no source's own row matched") {
  CheckCases(ErrnoTextCases());
  // The sources' own rows of the same texts still match first.
  LineMatcher m;
  auto r = m.MatchLine(W("Call to ibv_reg_mr failed with error Cannot allocate memory"));
  REQUIRE(r.has_value());
  CHECK(std::string_view(r->signature->id).substr(0, 6) != "errno.");
}

// The RDMA and MPI stacks beside NCCL (UCX, aws-ofi-nccl, Open MPI's openib BTL, MVAPICH2), one
// case per format variant read from their sources at the tags the comments name.
std::vector<RowCase> OtherStacksCases() {
  constexpr const char* kUcx = "[1733000000.123456] [gpu07:2291:0]        ib_mlx5_log.c:171  UCX  ";
  auto U = [&](const char* s) { return std::string(kUcx) + s; };
  return {
      // ucx src/uct/ib/mlx5/ib_mlx5_log.c v1.17.0: "%s on %s:%d/%s (synd 0x%x vend 0x%x hw_synd
      // %d/%d)"; the protection error before the generic syndrome row
      {U("ERROR Local protection error on mlx5_0:1/IB (synd 0x4 vend 0x56 hw_synd 0/0)"),
       "ucx.local_protection_error",
       {{"hca", "mlx5_0"}, {"port", "1"}, {"link", "IB"}}},
      // ib_mlx5_log.c v1.10.0: the syndrome's text without " error" (1.2-1.15)
      {"[lxbk1127:2330856:0:2330856] ib_mlx5_log.c:177  Local protection on mlx5_1:1/IB (synd "
       "0x4 vend 0x56 hw_synd 0/0)",
       "ucx.local_protection_error",
       {{"hca", "mlx5_1"}, {"port", "1"}}},
      {"[lxbk1127:2330856:0:2330856] ib_mlx5_log.c:177  Remote QP on mlx5_1:1/IB (synd 0x14 vend "
       "0x0 hw_synd 0/0)",
       "ucx.mlx5_completion_error",
       {{"error", "Remote QP"}, {"hca", "mlx5_1"}}},
      // rc_verbs_iface.c v1.9.0 "send completion with error: %s qpn 0x%x wrid 0x%lx vendor_err
      // 0x%x" with ibv_wc_status_str()
      {"[gpu07:2291:0:2291] rc_verbs_iface.c:65   UCX  ERROR send completion with error: local "
       "protection error qpn 0x1a2 wrid 0x7 vendor_err 0x56",
       "ucx.local_protection_error",
       {}},
      {U("ERROR Remote access error on mlx5_2:1/RoCE (synd 0x13 vend 0x88 hw_synd 0/0)"),
       "ucx.mlx5_completion_error",
       {{"error", "Remote access error"},
        {"hca", "mlx5_2"},
        {"link", "RoCE"},
        {"syndrome", "0x13"},
        {"vendor_err", "0x88"}}},
      {U("ERROR Receive-no-ready retry count exceeded on mlx5_0:1/IB (synd 0x16 vend 0x0 hw_synd "
         "0/0)"),
       "ucx.mlx5_completion_error",
       {{"error", "Receive-no-ready retry count exceeded"}}},
      // ib_mlx5_log.c v1.4.0: "Error on QP 0x%x wqe[%03d]: %s (synd 0x%x vend 0x%x) opcode %s"
      {"[jazz21:194169:0:194169] ib_mlx5_log.c:113  FATAL: Error on QP 0x2e5d6 wqe[007]: Remote "
       "operation error (synd 0x14 vend 0x0) opcode RDMA_READ",
       "ucx.mlx5_completion_error",
       {{"error", "Remote operation error"}, {"syndrome", "0x14"}}},
      // ucp_worker.c v1.3.0 "Error %s was not handled for ep %p - %s"
      {"[clx-hercules-065:1411 :0]     ucp_worker.c:373  UCX  ERROR Error Endpoint timeout was "
       "not handled for ep 0x9ce460 - ud/mlx5_0:1",
       "ucx.endpoint_timeout",
       {}},
      // ucp_ep.c v1.17.0 "ep %p: error '%s' on %s will not be handled since no error callback is
      // installed"
      {"[gpu07:2291:0]         ucp_ep.c:1511 UCX  ERROR ep 0x7f3a: error 'Endpoint timeout' on "
       "rc_mlx5/mlx5_0:1 will not be handled since no error callback is installed",
       "ucx.endpoint_timeout",
       {}},
      // ud_iface.c v1.5.0 ucs_fatal "transport error: %s"
      {"[clx-orion-095:15382:0:15382]    ud_iface.c:781  Fatal: transport error: Endpoint timeout",
       "ucx.endpoint_timeout",
       {}},
      // ud_ep.c v1.17.0 "UD endpoint %p to %s:%d: unhandled timeout error"
      {"[gpu07:2291:0:2300]        ud_ep.c:278  Fatal: UD endpoint 0x55e2a0 to mlx5_0:1: "
       "unhandled timeout error",
       "ucx.ud_unhandled_timeout",
       {{"peer", "mlx5_0:1"}}},
      {"[gpu07:2291:0]         ucp_ep.c:1511 UCX  ERROR ep 0x7f3a: error 'Connection reset by "
       "remote peer' on rc_mlx5/mlx5_0:1 will not be handled since no error callback is installed",
       "ucx.ep_error_not_handled",
       {{"error", "Connection reset by remote peer"}, {"lane", "rc_mlx5/mlx5_0:1"}}},
      // ucp_worker.c v1.8.0 "error '%s' will not be handled for ep %p - %s since no error
      // callback is installed"
      {"[gpu07:2291:0]     ucp_worker.c:541  UCX  ERROR error 'Input/output error' will not be "
       "handled for ep 0x7f3a - rc_verbs/mlx5_0:1 since no error callback is installed",
       "ucx.ep_error_not_handled",
       {{"error", "Input/output error"}, {"lane", "rc_verbs/mlx5_0:1"}}},
      // ucp_context.c v1.17.0 "no usable transports/devices (asked %s)"
      {"[gpu07:2291:0]    ucp_context.c:1493 UCX  ERROR no usable transports/devices (asked ib "
       "on network:mlx5_0:1 )",
       "ucx.no_usable_transports",
       {{"asked", "ib on network:mlx5_0:1 "}}},
      // Open MPI pml_ucx.c v4.1.6 "ucp_ep_create(proc=%d) failed: %s" with UCS_ERR_UNREACHABLE
      {"pml_ucx.c:424  Error: ucp_ep_create(proc=3) failed: Destination is unreachable",
       "ucx.destination_unreachable",
       {}},
      // ib_md.c v1.17.0 "%s(address=%p, length=%zu, access=0x%lx) failed: %s": ENOMEM is memlock
      // (the hint follows when the limit is finite), other errors the generic registration row
      {"[gpu07:2291:0]          ib_md.c:293  UCX  ERROR ibv_reg_mr(address=0x7f1c2c000000, "
       "length=268435456, access=0xf) failed: Cannot allocate memory : Please set max locked "
       "memory (ulimit -l) to 'unlimited' (current: 65536 kbytes)",
       "nccl.ibv_reg_mr_enomem",
       {{"call", "ibv_reg_mr"}}},
      {"[gpu07:2291:0]          ib_md.c:293  UCX  ERROR ibv_reg_dmabuf_mr(address=0x7f1c2c000000, "
       "length=268435456, access=0xf) failed: Bad address",
       "nccl.ibv_reg_mr",
       {{"call", "ibv_reg_dmabuf_mr"}, {"error", "Bad address"}}},
      // ib_iface.c v1.17.0 "%s: ibv_create_cq(cqe=%d) failed: %s : Please set max locked ..."
      // and ib_mlx5_dv.c v1.22.0 "ibv_create_cq()"
      {"[gpu07:2291:0]       ib_iface.c:1158 UCX  ERROR mlx5_0: ibv_create_cq(cqe=4096) failed: "
       "Cannot allocate memory : Please set max locked memory (ulimit -l) to 'unlimited' "
       "(current: 64 kbytes)",
       "nccl.ibv_create_cq_enomem",
       {{"call", "ibv_create_cq"}}},
      {"[ampere:1188443:0]          ib_log.c:246  UCX  ERROR mlx5_0: ibv_create_cq() failed: "
       "Cannot allocate memory. Please set max locked memory (ulimit -l) to 'unlimited' "
       "(current: 64 kbytes)",
       "nccl.ibv_create_cq_enomem",
       {{"call", "ibv_create_cq"}}},
      // aws-ofi-nccl nccl_ofi_net.c v1.7.4-aws, nccl_ofi_rdma.c v1.11.0-aws, nccl_ofi_net.cpp
      // v1.17.0
      {W("NET/OFI Couldn't find any optimal provider"), "ofi.no_provider", {}},
      {W("NET/OFI OFI fi_getinfo() call failed: No data available"),
       "ofi.no_provider",
       {{"error", "No data available"}}},
      {W("NET/OFI Unable to find a protocol that worked.  Failing initialization."),
       "ofi.no_provider",
       {}},
      // Open MPI btl_openib_component.c v4.1.6: BTL_PEER_ERROR prefix, then "error polling %s
      // with status %s status number %d for wr_id %lx opcode %d  vendor error %d qp_idx %d"
      {"[gcn-4-11.sdsc.edu:mpi_rank_10][MPIDI_CH3I_MRAILI_Cq_poll] src/mpid/ch3/channels/mrail/"
       "src/gen2/ibv_channel_manager.c:586: [] Got completion with error 12, vendor code=0x81, "
       "dest rank=17",
       "mvapich2.cq_poll_retry_exceeded",
       {{"vendor_err", "0x81"}, {"peer_rank", "17"}}},
      {"[gpu07][[54049,1],3][btl_openib_component.c:3685:handle_wc] from gpu07 to: gpu08 error "
       "polling LP CQ with status RETRY EXCEEDED ERROR status number 12 for wr_id 7f3a opcode 0  "
       "vendor error 129 qp_idx 0",
       "openmpi.openib_poll_retry_exceeded",
       {{"cq", "LP CQ"}, {"error", "RETRY EXCEEDED ERROR"}, {"vendor_err", "129"}}},
      {"[gpu07][[54049,1],3][btl_openib_component.c:3685:handle_wc] from gpu07 to: gpu08 error "
       "polling HP CQ with status REMOTE ACCESS ERROR status number 10 for wr_id 7f3a opcode 1  "
       "vendor error 136 qp_idx 3",
       "openmpi.openib_poll_error",
       {{"status", "10"}, {"error", "REMOTE ACCESS ERROR"}, {"vendor_err", "136"}}},
      // help-mpi-btl-openib.txt v4.1.6 [init-fail-no-mem], its second line
      {"allocate some locked memory.  This typically can indicate that the",
       "openmpi.openib_init_no_locked_memory",
       {}},
      // help-mpi-btl-openib.txt v4.1.8 [error in device init], its first line
      {"WARNING: There was an error initializing an OpenFabrics device.",
       "openmpi.openib_device_init_error",
       {}},
      // MVAPICH2 vbuf.c 2.3: "[%s %d] Cannot register vbuf region" and the UD pool's form
      {"[src/mpid/ch3/channels/mrail/src/gen2/vbuf.c 534] Cannot register vbuf region",
       "mvapich2.vbuf_register_failed",
       {}},
      {"[gpu07:mpi_rank_3][allocate_ud_vbuf_region] Cannot register vbuf region (ibv_reg_mr "
       "errno=12 Cannot allocate memory)",
       "mvapich2.vbuf_register_failed",
       {{"errno", "12"}, {"error", "Cannot allocate memory"}}},
  };
}
TEST_CASE("RDMA and MPI stacks beside NCCL: UCX, aws-ofi-nccl, Open MPI openib, MVAPICH2") {
  CheckCases(OtherStacksCases());
}

TEST_CASE("look-alike lines of healthy jobs and other tools are not the launcher rows'") {
  LineMatcher m;
  // Open MPI's verbose connect progress, another tool's "Missing ranks: [..]" inside a sentence,
  // a timeout echoed with its unit, DeepEP's init banner: none is a failure these rows name.
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"btl: tcp: attempting to connect() to [[35384,1],2] address 10.0.0.2 on port 1024",
       "openmpi.btl_tcp_connect_failed"},
      {"btl:tcp: connect() to 10.0.0.2:1024 completed", "openmpi.btl_tcp_connect_failed"},
      {"TimeoutError: Missing ranks: [1, 2]", "horovod.missing_ranks"},
      {"File barrier timed out after 600s. Stalled ranks: [3].", "horovod.stalled_ranks"},
      {"Timeout (ms): 5000!", "python.faulthandler_timeout"},
      {"Timeout (0:05:00)! retrying", "python.faulthandler_timeout"},
      {"DeepEP initialized with NCCL version: 2.27.3 (loaded library)", "deepep.kernel_timeout"},
  };
  for (const auto& [line, id] : cases) {
    INFO(line);
    auto r = m.MatchLine(line);
    if (r.has_value()) CHECK(r->signature->id != std::string_view(id));
  }
}

TEST_CASE("every catalog row is the first match of at least one message from its source") {
  std::set<std::string> tested;
  for (auto table :
       {IbCompletionCases, IbAsyncEventsCases, VerbsCases,     IbFactsCases,   ShmCases,
        SocketErrorsCases, SocketFactsCases,   InitCases,      RasCases,       TopologyCases,
        TorchC10dCases,    C10dStoreCases,     GlooCases,      TorchrunCases,  KernelCases,
        MpiCases,          EarlierRowsCases,   ProgressCases,  SlurmCases,     DataLoaderCases,
        NcclResultCases,   OtherLayerCases,    RdmaToolsCases, ErrnoTextCases, OtherStacksCases,
        FrameworksCases,   GenericCases}) {
    for (const RowCase& c : table()) tested.insert(c.id);
  }
  std::size_t rows = 0;
  for (const Signature& s : Catalog()) {
    ++rows;
    INFO(s.id);
    CHECK(tested.count(std::string(s.id)) == 1);
  }
  CHECK(rows >= 140);
}
