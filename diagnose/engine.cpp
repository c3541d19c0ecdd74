#include "diagnose/engine.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/strings.h"

namespace sl::diagnose {

namespace {

using Lines = std::vector<const Match*>;

// ---- the vocabulary ----

constexpr CategoryInfo kCategories[] = {
    {"gid_index",
     "Unset NCCL_IB_GID_INDEX on NCCL >= 2.21 (it picks a RoCE v2 IPv4 GID itself), or set the "
     "RoCE v2 IPv4 index of each node (show_gids); pods may differ per node.",
     "show_gids on every node (type v2 with an IPv4 address at the index in use?) and the "
     "NET/IB QP lines (GID index, subnet prefix) of NCCL_DEBUG=INFO."},
    {"mtu_mismatch", "One MTU end to end (HCA active_mtu, netdev MTU, switch ports) on every node.",
     "ibv_devinfo active_mtu and `ip link` MTU on every node; failures only at large sizes."},
    {"memlock",
     "Set the locked-memory limit to unlimited where the ranks run (limits.conf, slurmd's "
     "LimitMEMLOCK, the container runtime's --ulimit memlock=-1).",
     "`ulimit -l` inside the job (not the login shell) and the errno of ibv_reg_mr/ibv_create_cq."},
    {"qp_or_resource_limit",
     "Use fewer QPs (NCCL_IB_QPS_PER_CONNECTION, fewer channels) or raise the HCA/driver "
     "resource limits.",
     "whether the failure appears only above some node count, and the HCA's max_qp/max_cq."},
    {"shm_too_small",
     "Give the container a bigger /dev/shm (--shm-size, an emptyDir with medium Memory) or set "
     "NCCL_SHM_DISABLE=1.",
     "`df -h /dev/shm` inside the job."},
    {"ib_port_down_or_link_flap",
     "Fix the cable, transceiver or switch port; exclude the port (NCCL_IB_HCA) on every node "
     "meanwhile.",
     "ibstat state and link_downed counters of the port, the kernel log around the failure."},
    {"retry_exceeded_network",
     "Check the fabric counters (symbol/link errors, congestion, adaptive routing) along the path; "
     "NCCL_IB_TIMEOUT gives more headroom.",
     "NET/IB QP lines (GID, MTU) and show_gids on both nodes: a GID or MTU difference is the "
     "cause, else the fabric."},
    {"socket_ifname_wrong",
     "Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on (e.g. =eth0, or "
     "^docker0,lo), or run the container with host networking.",
     "the NCCL_DEBUG=INFO lines 'Bootstrap : Using' and 'NET/Socket : Using' on every node."},
    {"firewall_or_port",
     "Open the ports NCCL and the c10d store use between the nodes (firewall, security groups), "
     "or pin them (NCCL_SOCKET_PORT_RANGE-style settings, MASTER_PORT) to an open range.",
     "`nc -zv PEER PORT` between the nodes on the interface NCCL uses."},
    {"acs_iommu_p2p",
     "Disable ACS on the PCIe switches' bridges (setpci) and set the IOMMU to passthrough.",
     "lspci -vvv ACSCtl on the bridges above GPUs and NICs; the error with NCCL_NET_GDR_LEVEL=0."},
    {"gdr_peermem",
     "Load nvidia-peermem (or use DMA-BUF: NCCL >= 2.19 with a kernel and driver that support "
     "it) so that NCCL uses GPUDirect RDMA.",
     "`lsmod | grep peermem`, the NCCL INFO transport lines (/GDRDMA) and the bus bandwidth."},
    {"gpu_xid_or_driver",
     "Reset or reboot the node (restart nvidia-fabricmanager) and drain it if it recurs.",
     "the kernel log (NVRM: Xid) and nvidia-smi -q on the node."},
    {"duplicate_gpu",
     "Select the device from LOCAL_RANK (torch.cuda.set_device(local_rank)) before the process "
     "group starts.",
     "the [dev] field of each rank's NCCL INFO lines."},
    {"desync_collective_mismatch",
     "Make every rank call the same collectives in the same order with the same shapes.",
     "Flight Recorder dumps of all ranks (op type, sizes per sequence number)."},
    {"straggler_or_slow_rank",
     "Move the slow work (evaluation, checkpointing, data loading) off the critical path or do "
     "it on every rank, or raise the process-group timeout where the wait is expected.",
     "Flight Recorder dumps of all ranks: the late rank has not entered the collective."},
    {"oom_or_crash_other_rank",
     "Look at the first rank that died (its own output, OOM killer lines in the kernel log) and "
     "fix that failure; the other ranks' errors follow from it.",
     "the exit code and time of death of every rank (torchrun's failure table, the kernel log)."},
    {"version_mismatch", "Run the same NCCL, torch and CUDA versions on every node (one image).",
     "the 'NCCL version' line of every rank."},
    {"rail_topology_cross_nic",
     "Set NCCL_CROSS_NIC=0, or fix the rail routing so that every NIC reaches every rail.",
     "whether only connections across rails fail (NET/IB QP lines of each pair)."},
    {"nccl_bug", "Upgrade NCCL to a release whose notes fix this.",
     "the NCCL release notes for the version in use."},
};

// ---- helpers over evidence ----

bool Is(const Match& m, std::string_view id) { return m.signature->id == id; }

bool Has(const Match& m, std::string_view text) { return m.line.find(text) != std::string::npos; }

// Every kept line that `pick` selects; true when there was one.
template <class Pick>
bool Collect(const Evidence& ev, Pick&& pick, Lines* out) {
  bool any = false;
  for (const Match& m : ev.matches()) {
    if (pick(m)) {
      out->push_back(&m);
      any = true;
    }
  }
  return any;
}

bool AnyOf(const Evidence& ev, std::initializer_list<std::string_view> ids, Lines* out) {
  return Collect(
      ev,
      [&](const Match& m) {
        return std::any_of(ids.begin(), ids.end(), [&](std::string_view id) { return Is(m, id); });
      },
      out);
}

std::string Lower(std::string_view s) { return ToLower(s); }

// ---- conditions: the IB fabric ----

bool RetryExceeded(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        return Is(m, "nccl.ib_status_retry_exceeded") || Has(m, "IBV_WC_RETRY_EXC_ERR") ||
               Has(m, "transport retry counter exceeded");
      },
      out);
}

// NCCL prints the QP's GID as "(%lX/%lX)" of the big-endian subnet prefix and interface id
// (net_ib.cc, 2.12-2.28): on little-endian hosts fe80::/64 reads "80FE"; print variants that
// byte-swap read "FE80000000000000". A link-local GID is not routable: RoCE v1 or the v2 GID
// without an IP address, the wrong index for traffic between subnets or nodes.
bool IsLinkLocalPrefix(std::string_view spn) {
  std::string s = Lower(spn);
  return s == "80fe" || (s.size() >= 4 && s.substr(0, 4) == "fe80");
}

bool LinkLocalGid(const Evidence& ev, Lines* out) {
  bool any = false;
  for (const Match* m : ev.Distinct("nccl.ib_qp_info", "gid_prefix")) {
    if (IsLinkLocalPrefix(m->Field("gid_prefix"))) {
      out->push_back(m);
      any = true;
    }
  }
  // ibv_modify_qp failures name the local GID itself on 2.24+ ("local GID fe80::...").
  for (const Match* m : ev.Distinct("nccl.ibv_modify_qp", "local_gid")) {
    if (IsLinkLocalPrefix(m->Field("local_gid"))) {
      out->push_back(m);
      any = true;
    }
  }
  return any;
}

bool ModifyQpFailed(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"nccl.ibv_modify_qp"}, out);
}

bool RoceInUse(const Evidence& ev, Lines* out) {
  return Collect(
      ev, [](const Match& m) { return Is(m, "nccl.ib_using") && Has(m, "/RoCE"); }, out);
}

bool QpMtuDiffers(const Evidence& ev, Lines* out) {
  Lines mtus = ev.Distinct("nccl.ib_qp_info", "mtu");
  if (mtus.size() < 2) return false;
  out->insert(out->end(), mtus.begin(), mtus.end());
  return true;
}

bool VerbsEnomem(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        if (Is(m, "nccl.ibv_reg_mr_enomem")) return true;
        return (Is(m, "nccl.ibv_reg_mr") || Is(m, "nccl.ibv_create")) &&
               (Has(m, "Cannot allocate memory") || Has(m, "ENOMEM") || Has(m, "errno 12") ||
                Has(m, "with 12 ") || Has(m, "error 12"));
      },
      out);
}

bool RegMrFailed(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"nccl.ibv_reg_mr", "nccl.ibv_reg_mr_enomem"}, out);
}

bool CreateQpFailed(const Evidence& ev, Lines* out) {
  return Collect(
      ev, [](const Match& m) { return Is(m, "nccl.ibv_create") && Has(m, "ibv_create_qp"); }, out);
}

// ---- conditions: sockets and interfaces ----

// Interfaces that do not reach other nodes: container bridges, loopback, tunnels, link-local.
bool IsBadInterface(std::string_view ifname, std::string_view addr) {
  const std::string n = Lower(ifname);
  for (std::string_view p : {"docker", "lo", "tun", "tap", "virbr", "veth", "br-", "cni", "flannel",
                             "cali", "weave", "kube-bridge"}) {
    if (n.rfind(p, 0) == 0 && (p != "lo" || n == "lo" || n.rfind("lo:", 0) == 0)) return true;
  }
  const std::string a = Lower(addr);
  return a.rfind("127.", 0) == 0 || a.rfind("169.254.", 0) == 0 || a.rfind("fe80", 0) == 0 ||
         a.rfind("172.17.", 0) == 0 || a == "::1";
}

constexpr std::string_view kInterfaceRows[] = {"nccl.bootstrap_using", "nccl.socket_using"};

bool BadInterface(const Evidence& ev, Lines* out) {
  bool any = AnyOf(ev, {"nccl.loopback_interface"}, out);
  for (std::string_view row : kInterfaceRows) {
    for (const Match* m : ev.Distinct(row, "addr")) {
      if (IsBadInterface(m->Field("ifname"), m->Field("addr"))) {
        out->push_back(m);
        any = true;
      }
    }
  }
  return any;
}

bool GoodInterface(const Evidence& ev, Lines* out) {
  bool any = false;
  for (std::string_view row : kInterfaceRows) {
    for (const Match* m : ev.Distinct(row, "addr")) {
      if (!IsBadInterface(m->Field("ifname"), m->Field("addr"))) {
        out->push_back(m);
        any = true;
      }
    }
  }
  return any;
}

// ECONNREFUSED (111) and EHOSTUNREACH (113) as strerror, c10d's "errno: 111" or a bare number.
bool RefusedOrUnreachable(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        const bool socket_row = Is(m, "nccl.socket_connect") ||
                                Is(m, "nccl.socket_connect_refused") ||
                                Is(m, "nccl.socket_retries_exceeded") ||
                                Is(m, "c10d.store_connect") || Has(m, "onnect");
        return socket_row && (Has(m, "Connection refused") || Has(m, "No route to host") ||
                              Has(m, "errno: 111") || Has(m, "errno: 113") || Has(m, "error 111") ||
                              Has(m, "error 113"));
      },
      out);
}

// ---- conditions: versions and protocol ----

// "NCCL version 2.18.3" anywhere (NCCL's own banner, torch's error text): the versions seen.
bool TwoNcclVersions(const Evidence& ev, Lines* out) {
  std::map<std::string, const Match*> seen;
  auto note = [&seen](std::string_view line, const Match* m) {
    for (std::size_t p = line.find("NCCL version "); p != std::string_view::npos;
         p = line.find("NCCL version ", p + 1)) {
      std::size_t e = p + 13;
      while (e < line.size() &&
             (std::isdigit(static_cast<unsigned char>(line[e])) || line[e] == '.'))
        ++e;
      std::string v(line.substr(p + 13, e - p - 13));
      while (!v.empty() && v.back() == '.') v.pop_back();
      if (std::count(v.begin(), v.end(), '.') == 2) seen.emplace(v, m);
    }
  };
  for (const Match* m : ev.Distinct("nccl.version", "nccl_version")) note(m->line, m);
  for (const Match& m : ev.matches()) note(m.line, &m);
  if (seen.size() < 2) return false;
  for (const auto& [v, m] : seen) out->push_back(m);
  return true;
}

bool AddressFamilyError(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"nccl.socket_bad_family"}, out);
}

// ---- conditions: GPUDirect RDMA ----

bool IbInUse(const Evidence& ev, Lines* out) {
  if (AnyOf(ev, {"nccl.ib_using"}, out)) return true;
  for (const Match* m : ev.Distinct("nccl.channel_net", "net")) {
    if (m->Field("net") == "IB") {
      out->push_back(m);
      return true;
    }
  }
  return false;
}

// Transport lines over IB, none of them with /GDRDMA (net.cc prints the suffix when the channel
// uses it): GPUDirect RDMA is off on every channel.
bool IbWithoutGdr(const Evidence& ev, Lines* out) {
  if (ev.Count("nccl.channel_net_gdrdma") > 0) return false;
  for (const Match* m : ev.Distinct("nccl.channel_net", "net")) {
    if (m->Field("net") == "IB") {
      out->push_back(m);
      return true;
    }
  }
  return false;
}

// net_ib.cc 2.10-2.18: "GPU Direct RDMA Disabled for HCA %d '%s' (no module)".
bool GdrNoModule(const Evidence& ev, Lines* out) {
  return Collect(
      ev, [](const Match& m) { return Is(m, "nccl.gdr_disabled") && Has(m, "(no module)"); }, out);
}

// NCCL RAS (ras.cc, 2.24+): "N ranks have launched up to operation X" for the bulk and "Rank R
// has launched up to operation Y" / "Rank R has not launched any operations" for the odd ones.
bool RasRanksBehind(const Evidence& ev, Lines* out) {
  long long bulk = -1, bulk_count = 0;
  for (const Match* m : ev.Distinct("nccl.ras_ranks_ops", "opcount")) {
    auto n = ParseInt(m->Field("count"));
    auto op = ParseInt(m->Field("opcount"));
    if (n.ok() && op.ok() && *n > bulk_count) {
      bulk_count = *n;
      bulk = *op;
    }
  }
  if (bulk < 0) return false;
  bool any = false;
  for (const Match* m : ev.Distinct("nccl.ras_rank_ops", "rank")) {
    auto op = ParseInt(m->Field("opcount"));
    if (op.ok() && *op != bulk) {
      out->push_back(m);
      any = true;
    }
  }
  for (const Match* m : ev.Distinct("nccl.ras_rank_no_ops", "rank")) {
    out->push_back(m);
    any = true;
  }
  return any;
}

// ---- conditions: ranks ----

// Per-rank op counts (torch's "last enqueued work" in the dump signal and watchdog lines):
// every rank but a few agrees and those are behind -> the late ranks.
bool OpCountsOddOneBehind(const Evidence& ev, Lines* out) {
  std::map<std::string, std::pair<long long, const Match*>> by_rank;
  for (std::string_view row : {"torch.dump_signal", "torch.watchdog_failure_seq"}) {
    for (const Match* m : ev.Distinct(row, "rank")) {
      auto n = ParseInt(m->Field("last_enqueued"));
      if (n.ok()) by_rank.emplace(m->Field("rank"), std::make_pair(*n, m));
    }
  }
  if (RasRanksBehind(ev, out)) return true;
  if (by_rank.size() < 3) return false;
  std::map<long long, int> votes;
  for (const auto& [r, v] : by_rank) ++votes[v.first];
  auto mode = std::max_element(votes.begin(), votes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (votes.size() < 2 || mode->second * 2 <= static_cast<int>(by_rank.size())) return false;
  bool any = false;
  for (const auto& [r, v] : by_rank) {
    if (v.first < mode->first) {
      out->push_back(v.second);
      any = true;
    }
  }
  return any;
}

// Watchdog timeouts from every rank seen but one: that rank is where the others wait.
bool AllButOneRankTimeOut(const Evidence& ev, Lines* out) {
  std::set<std::string> timed_out, seen;
  for (const Match* m : ev.Distinct("torch.watchdog_timeout", "rank"))
    timed_out.insert(m->Field("rank"));
  if (timed_out.size() < 2) return false;
  const Match* odd = nullptr;
  for (const Signature& s : Catalog()) {
    if (s.category == "rank_process_failed") continue;
    for (const Match* m : ev.Distinct(s.id, "rank")) {
      const std::string r = m->Field("rank");
      if (!timed_out.count(r) && seen.insert(r).second) odd = m;
    }
  }
  if (seen.size() != 1) return false;
  out->push_back(odd);
  return true;
}

// srun reports every task's end, and once one task failed it kills the others (SIGKILL after
// the kill wait): only its first task line in a file is a death of its own.
bool FirstSrunTaskLine(const Evidence& ev, const Match& m) {
  for (const Match& o : ev.matches()) {
    if ((Is(o, "slurm.task_signalled") || Is(o, "slurm.task_exit_code") ||
         Is(o, "slurm.task_oom")) &&
        o.source == m.source && o.line_number < m.line_number) {
      return false;
    }
  }
  return true;
}

// A rank that died on its own: CUDA OOM, the kernel's or Slurm's OOM killer, SIGKILL/SIGSEGV/
// SIGBUS exit codes in torchrun's failure table or the launchers' banners (-6 is not one: it is
// the watchdog taking the process down).
bool RankDied(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [&ev](const Match& m) {
        if (Is(m, "torch.cuda_oom") || Is(m, "kernel.oom_kill")) return true;
        // A CUDA call inside NCCL or torch that failed for memory ("Cuda failure 'out of
        // memory'", CUDA error: out of memory) is the same death by another row.
        if (m.signature->category == "cuda_error" && Has(m, "out of memory")) return true;
        // Slurm's cgroup OOM kill of a task, a node the job lost (its ranks died with it).
        if (Is(m, "slurm.task_oom") || Is(m, "slurm.oom_kill_event") ||
            Is(m, "slurm.oom_kill_event_old") || Is(m, "slurm.cancelled_node_failure")) {
          return true;
        }
        // The launchers' signal reports (mpirun/prterun, Hydra, srun's strsignal text): 9 is the
        // OOM killer (or a kill -9), 11 and 7 a crash.
        const std::string sig = m.Field("signal");
        const std::string name = m.Field("signal_name");
        if (Is(m, "slurm.task_signalled") && !FirstSrunTaskLine(ev, m)) return false;
        if (sig == "9" || sig == "11" || sig == "7" || name == "Killed" ||
            name == "Segmentation fault" || name == "Bus error") {
          return true;
        }
        const std::string code = m.Field("exitcode");
        // Hydra's EXIT CODE is the raw wait status of a process killed by a signal.
        if (auto c = ParseInt(code); Is(m, "mpi.hydra_exit_code") && c.ok()) {
          const long long s = *c & 0x7f;
          return s == 9 || s == 11 || s == 7;
        }
        return code == "-9" || code == "-11" || code == "-7" || code == "137" || code == "139";
      },
      out);
}

bool SurvivorErrors(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        return Is(m, "nccl.remote_exited") || Has(m, "Connection reset by peer") ||
               Has(m, "remote process exited") || Has(m, "ncclRemoteError") ||
               Has(m, "Connection closed by peer") ||
               m.signature->category == "collective_timeout" ||
               m.signature->category == "peer_exit_or_network" ||
               m.signature->category == "store_timeout";
      },
      out);
}

// ---- conditions: progress output (the late rank) ----

bool TimedOut(const Evidence& ev, const std::string& who) {
  const auto& t = ev.timed_out();
  return std::find(t.begin(), t.end(), who) != t.end();
}

// A process other than the ones that timed out. Frameworks print progress on rank 0 only
// (rank_zero_info, log_dist(ranks=[0]), the Trainer's main process), so a line without a rank
// stands for rank 0: it is that rank only while rank 0 is not among those that timed out.
bool OutsideTimeouts(const Evidence& ev, const Progress& p) {
  if (ev.timed_out().empty() || TimedOut(ev, p.who)) return false;
  return !p.who.empty() || !TimedOut(ev, "0");
}

// Work one rank does alone while the others wait in the next collective.
bool IsSavingOrEvaluating(const Match& m) {
  const std::string_view id = m.signature->id;
  for (std::string_view row : {"progress.saving_checkpoint", "progress.hf_saving_checkpoint",
                               "progress.accelerate_save_state", "progress.deepspeed_checkpoint",
                               "progress.lightning_checkpoint", "progress.lightning_validation"}) {
    if (id == row) return true;
  }
  const std::string phase = Lower(m.Field("phase"));
  return id == "progress.hf_phase" && (phase == "evaluation" || phase == "prediction");
}

// A rank that did not time out printed progress after the first timeout in the same file: it
// was still working while the others waited for it.
bool ProgressAfterTimeout(const Evidence& ev, Lines* out) {
  bool any = false;
  for (const Progress& p : ev.progress()) {
    if (!OutsideTimeouts(ev, p)) continue;
    for (const TimeoutSeen& t : ev.timeouts()) {
      if (t.source == p.source && p.last.line_number > t.first.line_number) {
        out->push_back(&p.last);
        out->push_back(&t.first);
        any = true;
      }
    }
  }
  return any;
}

// The last thing a rank that did not time out printed was a checkpoint save or an evaluation.
bool SavingWhileOthersTimeOut(const Evidence& ev, Lines* out) {
  bool any = false;
  for (const Progress& p : ev.progress()) {
    if (OutsideTimeouts(ev, p) && IsSavingOrEvaluating(p.last)) {
      out->push_back(&p.last);
      any = true;
    }
  }
  if (any && !ev.timeouts().empty()) out->push_back(&ev.timeouts().front().first);
  return any;
}

// Iteration counters per rank where a minority stands at another step than the rest (ahead:
// it skipped a collective or keeps going; behind: it is late), while ranks time out.
bool LastProgressDiffers(const Evidence& ev, Lines* out) {
  if (ev.timed_out().empty()) return false;
  std::map<std::string, const Progress*> by_who;
  for (const Progress& p : ev.progress()) {
    if (p.max_step < 0 || p.who.empty()) continue;
    auto [it, fresh] = by_who.emplace(p.who, &p);
    if (!fresh && p.max_step > it->second->max_step) it->second = &p;
  }
  if (by_who.size() < 3) return false;
  std::map<long long, int> votes;
  for (const auto& [w, p] : by_who) ++votes[p->max_step];
  auto mode = std::max_element(votes.begin(), votes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (votes.size() < 2 || mode->second * 2 <= static_cast<int>(by_who.size())) return false;
  for (const auto& [w, p] : by_who) {
    if (p->max_step != mode->first) out->push_back(&p->last);
  }
  return true;
}

// ---- conditions: CUDA error texts and launcher-level facts ----

// cudaGetErrorString() texts (CUDA runtime driver_types.h, 11.x-12.x) that NCCL ("Cuda failure
// '%s'") and torch ("CUDA error: %s") print, by what they point at.
constexpr std::string_view kCudaHardwareErrors[] = {
    "uncorrectable ECC error encountered",         // cudaErrorECCUncorrectable
    "an uncorrectable NVLink error was detected",  // cudaErrorNvlinkUncorrectable
    "system not yet initialized",                  // cudaErrorSystemNotReady
    "system has unsupported display driver / cuda driver combination",  // ...SystemDriverMismatch
    "GPU has fallen off the bus",
};

bool CudaText(const Evidence& ev, std::initializer_list<std::string_view> texts, Lines* out) {
  return Collect(
      ev,
      [&](const Match& m) {
        if (m.signature->kind == EvidenceKind::kFact) return false;
        return std::any_of(texts.begin(), texts.end(),
                           [&](std::string_view t) { return Has(m, t); });
      },
      out);
}

bool CudaHardwareError(const Evidence& ev, Lines* out) {
  bool any = false;
  for (std::string_view t : kCudaHardwareErrors) any = CudaText(ev, {t}, out) || any;
  return any;
}

// cudaErrorInvalidDevice: a rank asked for a GPU index the node does not have (LOCAL_RANK
// beyond the GPUs, or CUDA_VISIBLE_DEVICES narrowed): the device selection is wrong.
bool InvalidDeviceOrdinal(const Evidence& ev, Lines* out) {
  return CudaText(ev, {"invalid device ordinal"}, out);
}

// cudaErrorPeerAccessUnsupported in NCCL's P2P transport: the platform refuses peer access.
bool PeerAccessUnsupported(const Evidence& ev, Lines* out) {
  return CudaText(ev, {"peer access is not supported between these two devices"}, out);
}

bool MemlockWarning(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"verbs.memlock_warning"}, out);
}

// What a small memlock limit breaks: verbs calls, IB completions, NCCL errors of the IB
// transport.
bool IbOrVerbsFailure(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        const std::string_view id = m.signature->id;
        return m.signature->kind != EvidenceKind::kFact &&
               (id.substr(0, 8) == "nccl.ib_" || id.substr(0, 9) == "nccl.ibv_" ||
                m.signature->category == "nccl_error" ||
                m.signature->category == "ib_completion_error");
      },
      out);
}

bool StoreConnectTimeout(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"c10d.store_connect_timeout"}, out);
}

bool GlooLoopback(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"gloo.loopback_fallback"}, out);
}

// Gloo's own failures between ranks (connect timeouts, closed or reset pairs, op timeouts).
bool GlooFailed(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        return m.signature->id.substr(0, 5) == "gloo." &&
               m.signature->kind == EvidenceKind::kSymptom;
      },
      out);
}

// net_socket.cc 2.12-2.28: "message truncated : receiving %d bytes instead of %d. ... there may
// be a mismatch in collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO)".
bool SocketMessageTruncated(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"nccl.net_socket_truncated"}, out);
}

// bootstrap.cc: the peers' bootstrap messages or communicator sizes disagree.
bool BootstrapMismatch(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"nccl.bootstrap_truncated", "nccl.bootstrap_root_mismatch"}, out);
}

constexpr NamedCondition kConditions[] = {
    {"retry_exceeded", RetryExceeded, "IB completions with status 12 (transport retry exceeded)"},
    {"link_local_gid", LinkLocalGid, "a NET/IB QP line whose GID has the link-local prefix fe80"},
    {"modify_qp_failed", ModifyQpFailed, "ibv_modify_qp failures (QP to RTR/RTS)"},
    {"roce", RoceInUse, "NET/IB : Using ... /RoCE"},
    {"qp_mtu_differs", QpMtuDiffers, "NET/IB QP lines with different MTUs"},
    {"verbs_enomem", VerbsEnomem, "ibv_reg_mr / ibv_create_* failing with ENOMEM"},
    {"reg_mr_failed", RegMrFailed, "ibv_reg_mr failures"},
    {"create_qp_failed", CreateQpFailed, "ibv_create_qp failures"},
    {"bad_interface", BadInterface,
     "bootstrap or NET/Socket on a bridge, loopback, tunnel or link-local address"},
    {"good_interface", GoodInterface, "bootstrap or NET/Socket on a routable interface"},
    {"refused_or_unreachable", RefusedOrUnreachable,
     "socket connects failing with Connection refused (111) / No route to host (113)"},
    {"two_nccl_versions", TwoNcclVersions, "two different 'NCCL version' values"},
    {"address_family_error", AddressFamilyError,
     "a socket address of a family that is neither AF_INET nor AF_INET6 (garbled peer info)"},
    {"ib_in_use", IbInUse, "NET/IB in use"},
    {"ib_without_gdr", IbWithoutGdr, "IB transport lines, none with /GDRDMA"},
    {"gdr_no_module", GdrNoModule, "GPU Direct RDMA Disabled for HCA ... (no module)"},
    {"op_counts_odd_one_behind", OpCountsOddOneBehind,
     "per-rank last enqueued op counts where a minority of ranks is behind the rest"},
    {"all_but_one_rank_time_out", AllButOneRankTimeOut,
     "watchdog timeouts from every rank seen but one"},
    {"rank_died", RankDied, "a rank killed by OOM, SIGKILL, SIGSEGV or SIGBUS"},
    {"survivor_errors", SurvivorErrors,
     "other ranks' errors that follow a death (remote exited, connection reset, timeouts)"},
    {"cuda_hardware_error", CudaHardwareError,
     "a CUDA error text of the GPU or driver (uncorrectable ECC/NVLink, system not ready, driver "
     "mismatch, fallen off the bus)"},
    {"invalid_device_ordinal", InvalidDeviceOrdinal, "CUDA 'invalid device ordinal'"},
    {"peer_access_unsupported", PeerAccessUnsupported,
     "CUDA 'peer access is not supported between these two devices'"},
    {"memlock_warning", MemlockWarning, "libibverbs' RLIMIT_MEMLOCK warning (limit <= 32 KiB)"},
    {"ib_or_verbs_failure", IbOrVerbsFailure, "verbs call failures, IB completion or NCCL errors"},
    {"store_connect_timeout", StoreConnectTimeout,
     "the c10d client socket timed out connecting to the store"},
    {"gloo_loopback", GlooLoopback, "Gloo fell back to the loopback address"},
    {"gloo_failed", GlooFailed, "Gloo connect/read/timeout failures"},
    {"socket_message_truncated", SocketMessageTruncated,
     "NET/Socket message truncated (collective sizes or NCCL settings differ between ranks)"},
    {"bootstrap_mismatch", BootstrapMismatch,
     "bootstrap messages or communicator sizes that disagree between ranks"},
    {"progress_after_timeout", ProgressAfterTimeout,
     "progress output of a rank that did not time out, after the first timeout in its file"},
    {"saving_while_others_time_out", SavingWhileOthersTimeOut,
     "a checkpoint save or evaluation as the last progress line of a rank that did not time out"},
    {"last_progress_differs", LastProgressDiffers,
     "per-rank iteration counters where a minority of ranks stands at another step, with timeouts"},
};

constexpr Rule kRules[] = {
    {"gid_index.retry_with_link_local_gid",
     "gid_index",
     0.85,
     {"retry_exceeded", "link_local_gid"},
     "",
     "IB completions failed with retry exceeded while the QPs use a link-local GID: RoCE "
     "packets addressed with it are not routed between the nodes."},
    {"gid_index.modify_qp_with_link_local_gid",
     "gid_index",
     0.8,
     {"modify_qp_failed", "link_local_gid"},
     "",
     "ibv_modify_qp failed while the QPs use a link-local GID."},
    {"gid_index.modify_qp_on_roce",
     "gid_index",
     0.6,
     {"modify_qp_failed", "roce"},
     "",
     "ibv_modify_qp failed on RoCE: the GID index does not address the peer."},
    {"mtu_mismatch.retry_with_qp_mtu_differs",
     "mtu_mismatch",
     0.85,
     {"retry_exceeded", "qp_mtu_differs"},
     "",
     "IB completions failed with retry exceeded and the QPs were set up with different MTUs."},
    {"mtu_mismatch.qp_mtu_differs",
     "mtu_mismatch",
     0.6,
     {"qp_mtu_differs"},
     "",
     "The nodes' QPs were set up with different MTUs."},
    {"socket_ifname_wrong.bad_interface",
     "socket_ifname_wrong",
     0.8,
     {"bad_interface"},
     "",
     "NCCL bootstraps or runs sockets over an interface other nodes cannot reach."},
    {"firewall_or_port.refused_on_right_interface",
     "firewall_or_port",
     0.75,
     {"refused_or_unreachable", "good_interface"},
     "bad_interface",
     "Connections between nodes were refused or unreachable although NCCL uses a routable "
     "interface."},
    {"firewall_or_port.refused",
     "firewall_or_port",
     0.45,
     {"refused_or_unreachable"},
     "bad_interface",
     "Connections between nodes were refused or unreachable."},
    {"version_mismatch.two_nccl_versions",
     "version_mismatch",
     0.85,
     {"two_nccl_versions"},
     "",
     "The ranks run different NCCL versions."},
    {"version_mismatch.address_family",
     "version_mismatch",
     0.6,
     {"address_family_error"},
     "",
     "A peer's address arrived with a family that is neither IPv4 nor IPv6: the exchanged "
     "structures differ between the ends, as when their NCCL versions do."},
    {"gdr_peermem.ib_without_gdrdma",
     "gdr_peermem",
     0.6,
     {"ib_in_use", "ib_without_gdr"},
     "",
     "NCCL uses IB but no transport line has /GDRDMA: GPUDirect RDMA is off."},
    {"gdr_peermem.no_module",
     "gdr_peermem",
     0.7,
     {"gdr_no_module"},
     "",
     "NCCL found no peer-memory module for the HCA: GPUDirect RDMA is off."},
    {"memlock.verbs_enomem",
     "memlock",
     0.7,
     {"verbs_enomem"},
     "",
     "Registering or creating verbs resources failed with ENOMEM: the locked-memory limit."},
    {"memlock.reg_mr_failed",
     "memlock",
     0.4,
     {"reg_mr_failed"},
     "verbs_enomem",
     "ibv_reg_mr failed: a small memlock limit, or GPU memory that cannot be registered."},
    {"gdr_peermem.reg_mr_failed",
     "gdr_peermem",
     0.35,
     {"reg_mr_failed"},
     "verbs_enomem",
     "ibv_reg_mr on GPU memory fails when no peer-memory module or DMA-BUF support is there."},
    {"qp_or_resource_limit.create_qp_failed",
     "qp_or_resource_limit",
     0.55,
     {"create_qp_failed"},
     "",
     "ibv_create_qp failed: the HCA ran out of QPs or another resource."},
    {"straggler_or_slow_rank.op_counts",
     "straggler_or_slow_rank",
     0.7,
     {"op_counts_odd_one_behind"},
     "",
     "Most ranks enqueued one more collective than the late rank(s): the others wait for them."},
    {"straggler_or_slow_rank.all_but_one_time_out",
     "straggler_or_slow_rank",
     0.5,
     {"all_but_one_rank_time_out"},
     "rank_died",
     "Every rank but one timed out in the collective: the one that did not is late."},
    {"oom_or_crash_other_rank.died_then_survivors_fail",
     "oom_or_crash_other_rank",
     0.75,
     {"rank_died", "survivor_errors"},
     "",
     "A rank died (OOM or a fatal signal) and the other ranks' errors follow from it."},
    {"oom_or_crash_other_rank.rank_died",
     "oom_or_crash_other_rank",
     0.55,
     {"rank_died"},
     "",
     "A rank died of OOM or a fatal signal."},
    {"gpu_xid_or_driver.cuda_hardware_error",
     "gpu_xid_or_driver",
     0.75,
     {"cuda_hardware_error"},
     "",
     "A CUDA call failed with an error of the GPU or its driver (ECC, NVLink, fabric manager not "
     "ready, driver mismatch)."},
    {"duplicate_gpu.invalid_device_ordinal",
     "duplicate_gpu",
     0.55,
     {"invalid_device_ordinal"},
     "",
     "A rank asked for a GPU index the node does not have: the device is not selected from "
     "LOCAL_RANK (or more ranks than GPUs run on the node)."},
    {"acs_iommu_p2p.peer_access_unsupported",
     "acs_iommu_p2p",
     0.45,
     {"peer_access_unsupported"},
     "",
     "CUDA refused peer access between two GPUs of the node: the PCIe topology (ACS, IOMMU, "
     "virtualisation) blocks P2P; NCCL_P2P_DISABLE=1 works around it."},
    {"socket_ifname_wrong.gloo_loopback_and_failure",
     "socket_ifname_wrong",
     0.7,
     {"gloo_loopback", "gloo_failed"},
     "",
     "Gloo bound to the loopback address (the hostname does not resolve to a routable address) "
     "and its connections between ranks failed."},
    {"version_mismatch.bootstrap_mismatch",
     "version_mismatch",
     0.45,
     {"bootstrap_mismatch"},
     "two_nccl_versions",
     "NCCL's bootstrap messages had other sizes than the peer expected: the exchanged structures "
     "differ, as when nodes run different NCCL releases."},
    {"desync_collective_mismatch.socket_message_truncated",
     "desync_collective_mismatch",
     0.45,
     {"socket_message_truncated"},
     "two_nccl_versions",
     "A peer sent more data than this rank posted for the operation: the ranks called it with "
     "different sizes (or run with different NCCL_PROTO/NCCL_ALGO)."},
    {"memlock.rlimit_warning_and_ib_failure",
     "memlock",
     0.8,
     {"memlock_warning", "ib_or_verbs_failure"},
     "",
     "libibverbs warned that the locked-memory limit is tiny and verbs/IB operations failed: "
     "memory registration needs that limit."},
    {"memlock.rlimit_warning",
     "memlock",
     0.4,
     {"memlock_warning"},
     "ib_or_verbs_failure",
     "libibverbs warned that the locked-memory limit is tiny (<= 32 KiB)."},
    {"firewall_or_port.store_connect_timeout",
     "firewall_or_port",
     0.35,
     {"store_connect_timeout"},
     "rank_died",
     "Connecting to the c10d store timed out (no refusal): packets to MASTER_ADDR:MASTER_PORT are "
     "dropped, or the store host is not up."},
    {"straggler_or_slow_rank.progress_after_timeout",
     "straggler_or_slow_rank",
     0.65,
     {"progress_after_timeout"},
     "rank_died",
     "A rank kept printing progress after the others timed out in a collective: they waited "
     "for it."},
    {"straggler_or_slow_rank.saving_while_others_time_out",
     "straggler_or_slow_rank",
     0.6,
     {"saving_while_others_time_out"},
     "rank_died",
     "The rank that did not time out was last saving a checkpoint or evaluating: the others "
     "waited for it in the next collective."},
    {"straggler_or_slow_rank.last_progress_differs",
     "straggler_or_slow_rank",
     0.55,
     {"last_progress_differs"},
     "rank_died",
     "One rank's iteration counter stands apart from the others' while ranks time out."},
};

// A category another one explains: retry exceeded is the fabric's fault only when no GID, MTU
// or port evidence accounts for it.
struct Supersede {
  std::string_view weaker, stronger;
};
constexpr Supersede kSupersedes[] = {
    {"retry_exceeded_network", "gid_index"},
    {"retry_exceeded_network", "mtu_mismatch"},
    {"retry_exceeded_network", "ib_port_down_or_link_flap"},
    // A worker killed by SIGBUS in a full /dev/shm is the shm's doing, not a crash of its own.
    {"oom_or_crash_other_rank", "shm_too_small"},
};

// What symptoms point at when nothing decides, and what would.
struct SymptomHint {
  std::string_view category, hint;
};
constexpr SymptomHint kSymptomHints[] = {
    {"collective_timeout",
     "a collective timed out: a late rank (straggler), a rank that died, or the network. "
     "Decide with the Flight Recorder dumps of all ranks (did every rank enter the same SeqNum?), "
     "the NCCL_DEBUG=INFO log (WARN and transport lines) and the first rank that exited."},
    {"watchdog_stuck",
     "the watchdog itself stopped: a CUDA call blocked by a hung kernel or the driver. Decide "
     "with the stacks of all ranks and the kernel log (Xid)."},
    {"store_timeout",
     "the c10d store did not answer: a rank that never started or died, or the store's "
     "address/port unreachable. Decide with MASTER_ADDR/PORT reachability and every rank's start."},
    {"nccl_error",
     "NCCL returned an error: its WARN lines name the cause. Rerun with NCCL_DEBUG=INFO "
     "(NCCL_DEBUG_FILE per rank) and give those files to diagnose."},
    {"rank_process_failed",
     "a worker exited: its own output before the failure table says why. Give diagnose every "
     "rank's output (torchrun --tee 3, or the error files)."},
    {"peer_exit_or_network",
     "a peer closed the connection: it died, or the network failed. Decide with the first rank "
     "that exited and the IB counters."},
    {"ib_completion_error",
     "an IB completion error: the status code and the NET/IB QP lines (GID, MTU) decide."},
    {"cuda_error", "a CUDA error: the kernel log (Xid) and the rank's stack decide."},
    {"nccl_warning", "NCCL warned: rerun with NCCL_DEBUG=INFO for the lines around the warning."},
};

}  // namespace

std::span<const Rule> Rules() { return kRules; }
std::span<const NamedCondition> Conditions() { return kConditions; }
std::span<const CategoryInfo> Categories() { return kCategories; }

const CategoryInfo* FindCategory(std::string_view name) {
  for (const CategoryInfo& c : kCategories) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

namespace {

const NamedCondition* FindCondition(std::string_view name) {
  for (const NamedCondition& c : kConditions) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

EvidenceLine Cite(const Match& m) {
  return {m.source, m.line_number, m.line.substr(0, 600), std::string(m.signature->id)};
}

// What the lines say about where: node, rank, port, GPU, peer (the first line that names each).
Entity EntityOf(const Lines& lines) {
  Entity e;
  auto first = [](std::string* slot, const std::string& v) {
    if (slot->empty() && !v.empty()) *slot = v;
  };
  for (const Match* m : lines) {
    first(&e.node, m->Field("host"));
    first(&e.node, m->Field("pod"));
    first(&e.rank, m->Field("rank"));
    first(&e.rank, m->Field("timeout_rank"));
    first(&e.rank, m->Field("rank_a"));
    const std::string hca = m->Field("hca");
    first(&e.port, hca.empty() || m->Field("port").empty() ? hca : hca + ":" + m->Field("port"));
    first(&e.gpu, m->Field("dev"));
    first(&e.gpu, m->Field("cuda_dev"));
    first(&e.gpu, m->Field("pci"));
    first(&e.gpu, m->Field("gpu"));
    first(&e.peer, m->Field("peer"));
  }
  return e;
}

// One category's running total while the rules are applied.
struct Tally {
  double miss = 1;  // product of (1 - confidence): noisy-or of independent contributions
  std::vector<EvidenceLine> evidence;
  Lines lines;
  std::vector<std::string> rules, why;
  std::string row_fix;
  double best = 0;
  Entity entity;
};

void Contribute(Tally* t, std::string rule, double confidence, const Lines& lines,
                std::string_view why) {
  t->miss *= 1 - confidence;
  t->rules.push_back(std::move(rule));
  if (!why.empty()) t->why.emplace_back(why);
  for (const Match* m : lines) {
    if (t->evidence.size() >= 12) break;
    bool dup = false;
    for (const auto& e : t->evidence)
      dup = dup || (e.file == m->source && e.line == m->line_number);
    if (!dup) t->evidence.push_back(Cite(*m));
  }
  if (confidence > t->best) {
    t->best = confidence;
    t->lines.insert(t->lines.begin(), lines.begin(), lines.end());
  } else {
    t->lines.insert(t->lines.end(), lines.begin(), lines.end());
  }
}

// Rows whose category is a cause name it by themselves: a cause row fully, a symptom typical
// of the cause (status=12 for the fabric) less. Facts never do.
void ApplyRows(const Evidence& ev, std::map<std::string, Tally>* tallies, Diagnosis* d) {
  std::set<std::string_view> done;
  for (const Match& m : ev.matches()) {
    const Signature& s = *m.signature;
    if (s.kind == EvidenceKind::kFact || FindCategory(s.category) == nullptr) continue;
    if (!done.insert(s.id).second) continue;
    const double base = std::min(0.9, 0.3 + s.priority / 200.0);
    const double c = s.kind == EvidenceKind::kCause ? base : base * 0.75;
    Lines lines;
    for (const Match& o : ev.matches()) {
      if (o.signature == m.signature) lines.push_back(&o);
    }
    Tally& t = (*tallies)[std::string(s.category)];
    Contribute(&t, "row:" + std::string(s.id), c, lines, "");
    if (t.row_fix.empty()) t.row_fix = std::string(s.fix);
    d->fired.push_back(
        {"row:" + std::string(s.id), std::string(s.category), c, {{std::string(s.id), {Cite(m)}}}});
  }
  if (const Match* x = ev.Desync()) {
    Tally& t = (*tallies)[std::string(x->signature->category)];
    Contribute(&t, "row:" + std::string(x->signature->id), 0.8, {x}, "");
    d->fired.push_back({"row:" + std::string(x->signature->id),
                        std::string(x->signature->category),
                        0.8,
                        {{"coll_desync", {Cite(*x)}}}});
  }
}

void ApplyRules(const Evidence& ev, std::map<std::string, Tally>* tallies, Diagnosis* d) {
  std::map<std::string_view, std::pair<bool, Lines>> memo;
  auto test = [&](std::string_view name) -> const std::pair<bool, Lines>& {
    auto it = memo.find(name);
    if (it != memo.end()) return it->second;
    std::pair<bool, Lines> r{false, {}};
    if (const NamedCondition* c = FindCondition(name)) r.first = c->test(ev, &r.second);
    return memo.emplace(name, std::move(r)).first->second;
  };
  for (const Rule& rule : kRules) {
    bool all = true;
    for (std::string_view w : rule.when) {
      if (!w.empty() && !test(w).first) all = false;
    }
    if (!all || (!rule.unless.empty() && test(rule.unless).first)) continue;
    Firing f{std::string(rule.id), std::string(rule.category), rule.confidence, {}};
    Lines lines;
    for (std::string_view w : rule.when) {
      if (w.empty()) continue;
      const Lines& l = test(w).second;
      lines.insert(lines.end(), l.begin(), l.end());
      std::vector<EvidenceLine> cited;
      for (const Match* m : l) {
        if (cited.size() < 6) cited.push_back(Cite(*m));
      }
      f.conditions.emplace_back(std::string(w), std::move(cited));
    }
    Contribute(&(*tallies)[std::string(rule.category)], std::string(rule.id), rule.confidence,
               lines, rule.why);
    d->fired.push_back(std::move(f));
  }
}

void CollectSymptoms(const Evidence& ev, Diagnosis* d) {
  for (const Match& m : ev.matches()) {
    const Signature& s = *m.signature;
    if (s.kind == EvidenceKind::kFact || FindCategory(s.category) != nullptr) continue;
    if (s.priority <= 0 && s.severity < Severity::kWarning) continue;
    auto it = std::find_if(d->symptoms.begin(), d->symptoms.end(),
                           [&](const Symptom& x) { return x.category == s.category; });
    if (it == d->symptoms.end()) {
      d->symptoms.push_back({std::string(s.category), 0, Cite(m)});
      it = d->symptoms.end() - 1;
    }
    it->count += ev.Count(s.id) > 0 ? 1 : 0;
  }
  for (Symptom& s : d->symptoms) {
    std::size_t n = 0;
    for (const Signature& row : Catalog()) {
      if (row.category == s.category) n += ev.Count(row.id);
    }
    s.count = std::max<std::size_t>(n, 1);
  }
}

std::string Decider(const std::vector<Symptom>& symptoms) {
  std::string out;
  for (const SymptomHint& h : kSymptomHints) {
    for (const Symptom& s : symptoms) {
      if (s.category == h.category) out += (out.empty() ? "" : " ") + std::string(h.hint);
    }
  }
  if (out.empty()) {
    out =
        "No known failure line was found. Give diagnose the NCCL_DEBUG=INFO output of every rank "
        "(NCCL_DEBUG_FILE), the Flight Recorder dumps of all ranks, the kernel log and a "
        "preflight of every node.";
  }
  return out;
}

}  // namespace

Diagnosis Diagnose(const Evidence& evidence, std::span<const CauseClaim> claims) {
  Diagnosis d;
  d.recognised = evidence.total();
  std::map<std::string, Tally> tallies;
  ApplyRows(evidence, &tallies, &d);
  ApplyRules(evidence, &tallies, &d);
  for (const CauseClaim& c : claims) {
    if (FindCategory(c.category) == nullptr) continue;
    Tally& t = tallies[c.category];
    Contribute(&t, c.source + ":" + c.rule, c.confidence, {}, c.why);
    for (const auto& e : c.evidence) {
      if (t.evidence.size() < 12) t.evidence.push_back(e);
    }
    if (t.entity.empty()) t.entity = c.entity;
    d.fired.push_back(
        {c.source + ":" + c.rule, c.category, c.confidence, {{c.source, c.evidence}}});
  }
  for (const Supersede& s : kSupersedes) {
    auto weak = tallies.find(std::string(s.weaker));
    if (weak != tallies.end() && tallies.count(std::string(s.stronger))) {
      weak->second.miss = 1 - (1 - weak->second.miss) * 0.5;
    }
  }
  for (auto& [category, t] : tallies) {
    const CategoryInfo* info = FindCategory(category);
    Cause c;
    c.category = category;
    c.confidence = std::min(0.97, 1 - t.miss);
    c.entity = t.entity.empty() ? EntityOf(t.lines) : t.entity;
    c.evidence = std::move(t.evidence);
    c.rules = std::move(t.rules);
    c.why = Join(t.why, " ");
    c.fix = std::string(info->fix);
    if (!t.row_fix.empty()) c.fix += " (" + t.row_fix + ")";
    c.decide = std::string(info->decide);
    d.causes.push_back(std::move(c));
  }
  // Best first; equal confidence keeps the vocabulary's order (more specific causes first).
  auto order = [](const std::string& name) { return FindCategory(name) - &kCategories[0]; };
  std::sort(d.causes.begin(), d.causes.end(), [&](const Cause& a, const Cause& b) {
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    return order(a.category) < order(b.category);
  });
  CollectSymptoms(evidence, &d);
  if (d.causes.empty()) {
    Cause u;
    u.category = "unknown";
    u.decide = Decider(d.symptoms);
    for (const Symptom& s : d.symptoms) {
      if (u.evidence.size() < 12) u.evidence.push_back(s.first);
    }
    u.why = d.symptoms.empty() ? "Nothing the catalog knows was found."
                               : "Only symptoms were found; they do not name a cause.";
    d.causes.push_back(std::move(u));
  }
  return d;
}

}  // namespace sl::diagnose
