#include "diagnose/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "common/strings.h"
#include "diagnose/job_facts.h"
#include "diagnose/terms.h"
#include "nccl/socket.h"

namespace sl::diagnose {

namespace {

using Lines = std::vector<const Match*>;

// ---- helpers over evidence ----

bool Is(const Match& m, std::string_view id) { return m.signature->id == id; }

bool Has(const Match& m, std::string_view text) { return m.line.find(text) != std::string::npos; }

// NCCLCHECK's return trace lines (nccl_result.inc: one row per source directory).
bool IsReturnTrace(const Match& m) { return m.signature->id.starts_with("nccl.return_trace"); }

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

// IB completions with an access status (enum ibv_wc_status: 8 IBV_WC_LOC_ACCESS_ERR, 10
// IBV_WC_REM_ACCESS_ERR): a memory region the work request names is not (or no longer)
// registered for that access -- GPU memory without a working peer-memory path, or a
// registration the locked-memory limit cut short -- not the fabric losing packets. Status 4
// (local protection) has a row of its own, nccl.ib_status_loc_prot (ACS/IOMMU).
bool IbAccessError(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        if (!Is(m, "nccl.ib_completion")) return false;
        const std::string st = m.Field("status");
        return st == "8" || st == "10";
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

// The GIDs the evidence names: the QP lines' prefixes, the local GID of ibv_modify_qp failures
// (2.24+, "local GID fe80::...") and of IB completion errors (2.18+, "localGid fe80::...").
constexpr std::pair<std::string_view, std::string_view> kGidFields[] = {
    {"nccl.ib_qp_info", "gid_prefix"},
    {"nccl.ibv_modify_qp", "local_gid"},
    {"nccl.ib_status_retry_exceeded", "local_gid"},
    {"nccl.ib_status_loc_prot", "local_gid"},
    {"nccl.ib_status_flush", "local_gid"},
    {"nccl.ib_completion", "local_gid"},
};

Lines GidsSeen(const Evidence& ev) {
  Lines out;
  for (const auto& [row, field] : kGidFields) {
    for (const Match* m : ev.Distinct(row, field)) out.push_back(m);
  }
  return out;
}

std::string GidOf(const Match& m) {
  const std::string p = m.Field("gid_prefix");
  return p.empty() ? m.Field("local_gid") : p;
}

bool LinkLocalGid(const Evidence& ev, Lines* out) {
  bool any = false;
  for (const Match* m : GidsSeen(ev)) {
    if (IsLinkLocalPrefix(GidOf(*m))) {
      out->push_back(m);
      any = true;
    }
  }
  return any;
}

// QP lines whose GIDs are all routable (none link-local): the GID addresses the peer.
bool RoutableGid(const Evidence& ev, Lines* out) {
  const Lines gids = ev.Distinct("nccl.ib_qp_info", "gid_prefix");
  if (gids.empty()) return false;
  for (const Match* m : gids) {
    if (IsLinkLocalPrefix(m->Field("gid_prefix"))) return false;
  }
  out->insert(out->end(), gids.begin(), gids.end());
  return true;
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
        if (Is(m, "nccl.ibv_reg_mr_enomem") || Is(m, "rdma.register_enomem")) return true;
        return (Is(m, "nccl.ibv_reg_mr") || Is(m, "nccl.ibv_create")) &&
               (Has(m, "Cannot allocate memory") || Has(m, "ENOMEM") || Has(m, "errno 12") ||
                Has(m, "with 12 ") || Has(m, "error 12"));
      },
      out);
}

// ibv_reg_dmabuf_mr (NCCL 2.13+) registers GPU memory through DMA-BUF: its failure is the
// GPUDirect RDMA path's (kernel, driver or HCA without DMA-BUF support), not a locked-memory limit.
bool IsDmabufReg(const Match& m) { return Has(m, "ibv_reg_dmabuf_mr"); }

bool RegMrFailed(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        return (Is(m, "nccl.ibv_reg_mr") || Is(m, "nccl.ibv_reg_mr_enomem")) && !IsDmabufReg(m);
      },
      out);
}

bool DmabufRegFailed(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        return (Is(m, "nccl.ibv_reg_mr") || Is(m, "nccl.ibv_reg_mr_enomem")) && IsDmabufReg(m);
      },
      out);
}

bool CreateQpFailed(const Evidence& ev, Lines* out) {
  return Collect(
      ev, [](const Match& m) { return Is(m, "nccl.ibv_create") && Has(m, "ibv_create_qp"); }, out);
}

// ---- conditions: sockets and interfaces ----

// Interfaces that do not reach other nodes: nccl/socket.h keeps the one list.
bool IsBadInterface(std::string_view ifname, std::string_view addr) {
  return nccl::IsNonRoutableInterface(ifname, addr);
}

constexpr std::string_view kInterfaceRows[] = {"nccl.bootstrap_using", "nccl.socket_using",
                                               "nccl.net_using_interface"};

// Every "[N]name:addr<port>" of an interface list (NET/Socket : Using, the bootstrap line before
// 2.10): NCCL uses them all, so one the other nodes cannot reach is enough to fail.
bool ListHasBadInterface(std::string_view list) {
  static const std::regex kEntry(R"(\[\d+\]([^:\s]+):([^<\s]+)<)");
  const std::string text(list);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kEntry);
       it != std::sregex_iterator(); ++it) {
    if (IsBadInterface((*it)[1].str(), (*it)[2].str())) return true;
  }
  return false;
}

// The gateway of a Docker network (the host's own bridge address, x.y.0.1 in Docker's default
// address pools 172.17-172.31/16: docker0 is 172.17.0.1, user networks' br-<id> 172.18.0.1 on):
// a peer address there means that node advertised its bridge, not the cluster interface.
bool IsDockerGateway(std::string_view addr) {
  static const std::regex kGateway(R"(^172\.(1[7-9]|2[0-9]|3[01])\.0\.1$)");
  return std::regex_match(std::string(addr.substr(0, addr.find('<'))), kGateway);
}

bool BadInterface(const Evidence& ev, Lines* out) {
  bool any = AnyOf(ev, {"nccl.loopback_interface"}, out);
  // An NCCL socket connect or transfer to a peer at a loopback, link-local or Docker-bridge
  // address ("Connect to 172.18.0.1<49273> failed : Connection refused"): the peer advertised
  // an interface the other nodes cannot reach.
  for (const char* row :
       {"nccl.socket_connect_refused", "nccl.socket_connect", "nccl.socket_io_failed"}) {
    for (const Match* m : ev.Distinct(row, "peer")) {
      const std::string peer = m->Field("peer");
      const std::string host = peer.substr(0, peer.find('<'));
      if (IsDockerGateway(host) || nccl::IsNonRoutableInterface("", host)) {
        out->push_back(m);
        any = true;
      }
    }
  }
  // Gloo connecting to a loopback address another rank advertised (127.0.1.1 from /etc/hosts).
  for (const char* row : {"gloo.connect_failed", "gloo.remote_addr"}) {
    for (const Match* m : ev.Distinct(row, "addr")) {
      if (IsBadInterface("", m->Field("addr"))) {
        out->push_back(m);
        any = true;
      }
    }
  }
  for (std::string_view row : kInterfaceRows) {
    for (const Match* m : ev.Distinct(row, "addr")) {
      if (IsBadInterface(m->Field("ifname"), m->Field("addr")) ||
          ListHasBadInterface(m->Field("interfaces"))) {
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
      if (!IsBadInterface(m->Field("ifname"), m->Field("addr")) &&
          !ListHasBadInterface(m->Field("interfaces"))) {
        out->push_back(m);
        any = true;
      }
    }
  }
  return any;
}

// The c10d store (MASTER_ADDR) the ranks connect to, as socket.cpp / TCPStore.cpp print it
// ("trying to connect to (172.17.0.2, 29500)", "failed to connect/validate to host 0.0.0.0:51216"),
// at an address other nodes cannot reach: the unspecified 0.0.0.0, loopback, link-local or
// Docker's default bridge. The rendezvous was advertised on the wrong interface.
bool StoreAddressUnroutable(const Evidence& ev, Lines* out) {
  static const std::regex kHost(
      R"((?:connect to \(?|to host |connect to any address of )\[?([0-9a-fA-F.:]+?)\]?(?:[:,)\s]|$))");
  return Collect(
      ev,
      [](const Match& m) {
        if (m.signature->category != std::string_view("store_timeout")) return false;
        std::smatch h;
        if (!std::regex_search(m.line, h, kHost)) return false;
        const std::string host = h[1].str();
        return host == "0.0.0.0" || IsBadInterface("", host);
      },
      out);
}

// c10d's store read that timed out ("Socket Timeout", also inside "retrieving ncclUniqueId from
// [0] via c10d key-value store ... got error: Socket Timeout") with no failed connect to the
// store: the ranks reached it, but the key they wait for was not set in time -- the rank that
// sets it (rank 0 creating the ncclUniqueId, a barrier's last arrival) was late.
bool StoreWaitTimeout(const Evidence& ev, Lines* out) {
  const bool connect_failed = ev.Count("c10d.store_connect") > 0 ||
                              ev.Count("c10d.store_connect_timeout") > 0 ||
                              ev.Count("c10d.connect_timed_out") > 0;
  if (connect_failed) return false;
  return Collect(
      ev,
      [](const Match& m) {
        return Is(m, "c10d.socket_timeout") ||
               (Is(m, "torch.unique_id_store_error") && Has(m, "Socket Timeout"));
      },
      out);
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

// "NCCL version 2.18.3" anywhere (NCCL's own banner, torch's error text) and the library's
// file names (libnccl.so.2.23.4): the versions seen.
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
  // The library's file names: two releases installed where the job loads NCCL from.
  for (const Match* m : ev.Distinct("nccl.lib_file_version", "nccl_version")) {
    seen.emplace(m->Field("nccl_version"), m);
  }
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

// NCCL disabled GPUDirect RDMA for an HCA (with or without its "(no module)" reason).
bool GdrDisabledForHca(const Evidence& ev, Lines* out) {
  return Collect(
      ev, [](const Match& m) { return Is(m, "nccl.gdr_disabled") && !m.Field("hca_name").empty(); },
      out);
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

// The watchdog's timeouts of one SeqNum with different OpType or NumelIn on different ranks
// ("WorkNCCL(SeqNum=13807, OpType=ALLREDUCE, NumelIn=11274112, ...)" on ranks 0-6, NumelIn=10942336
// on rank 7): the ranks entered different collectives under one sequence number, a desync.
bool TimeoutsDifferAtSeq(const Evidence& ev, Lines* out) {
  std::map<std::string, const Match*> first_of_seq;
  bool any = false;
  for (std::string_view field : {"op", "numel_in"}) {
    for (const Match* m : ev.Distinct("torch.watchdog_timeout", field)) {
      const std::string seq = m->Field("seq");
      if (seq.empty()) continue;
      auto [it, fresh] = first_of_seq.try_emplace(seq, m);
      const Match* f = it->second;
      if (!fresh && f->Field("op") + "/" + f->Field("numel_in") !=
                        m->Field("op") + "/" + m->Field("numel_in")) {
        out->push_back(f);
        out->push_back(m);
        any = true;
      }
    }
  }
  return any;
}

// Watchdog timeouts of one process group whose SeqNums differ between ranks. A collective
// completes on no rank until every rank of its group has joined it, so rank A still waiting in
// SeqNum X while rank B waits in Y > X means their SeqNum X were not the same call: a rank issued
// a collective the others did not (a desync). Sequence numbers count per process group (the
// `pg` field where torch prints one); lines without a group count as one group.
bool TimeoutSeqsDifferInGroup(const Evidence& ev, Lines* out) {
  std::map<std::string, std::map<std::string, const Match*>> seqs_by_pg;
  for (const Match* m : ev.Distinct("torch.watchdog_timeout", "seq")) {
    const std::string seq = m->Field("seq");
    if (!seq.empty()) seqs_by_pg[m->Field("pg")].try_emplace(seq, m);
  }
  for (const auto& [pg, seqs] : seqs_by_pg) {
    if (seqs.size() < 2) continue;
    for (const auto& [seq, m] : seqs) {
      if (out->size() < 3) out->push_back(m);
    }
    return true;
  }
  return false;
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

// A DataLoader worker killed by SIGBUS: its batches live in /dev/shm, and torch's DataLoader.cpp
// follows "is killed by signal: Bus error." with "It is possible that dataloader's workers are out
// of shared memory. Please try to raise your shared memory limit."
bool IsDataLoaderBusKill(const Match& m) {
  return Is(m, "torch.dataloader_worker_killed") && m.Field("signal_name") == "Bus error";
}

// The process crashed inside NCCL: Abseil's faulting PC in an NCCL function, or a backtrace
// frame (glibc's, torch's c10) in libnccl.
bool CrashInNccl(const Evidence& ev, Lines* out) {
  return AnyOf(ev, {"abseil.pc_in_nccl", "crash.frame_libnccl"}, out);
}

// glibc found its heap corrupted (free(): invalid ..., double free or corruption) in a process
// that printed NCCL's own lines and nothing that names another cause: memory NCCL (or the
// library calling it) wrote past, an NCCL or plugin defect more often than the user's.
bool HeapCorruptionWithNccl(const Evidence& ev, Lines* out) {
  const bool nccl = std::any_of(ev.matches().begin(), ev.matches().end(), [](const Match& m) {
    return m.signature->id.starts_with("nccl.") || Has(m, "NCCL");
  });
  return nccl &&
         AnyOf(ev, {"glibc.heap_corruption", "glibc.double_free", "glibc.corrupted_chunks"}, out);
}

// A rank that died on its own: CUDA OOM, the kernel's or Slurm's OOM killer, SIGKILL/SIGSEGV/
// SIGBUS exit codes in torchrun's failure table or the launchers' banners (-6 is not one: it is
// the watchdog taking the process down).
bool RankDied(const Evidence& ev, Lines* out) {
  Lines in_nccl;
  const bool crash_in_nccl = CrashInNccl(ev, &in_nccl);
  return Collect(
      ev,
      [&ev, crash_in_nccl](const Match& m) {
        if (Is(m, "torch.cuda_oom") || Is(m, "nccl.cuda_calloc_failed") ||
            Is(m, "kernel.oom_kill")) {
          return true;
        }
        // A DataLoader worker killed by SIGBUS died of a full /dev/shm (sigbus_no_backing):
        // shm_too_small, not a crash of its own.
        if (IsDataLoaderBusKill(m)) return false;
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
        // A crash whose faulting PC or frames are inside libnccl is the crash_in_nccl
        // condition's (an NCCL defect), not a rank that died under its peers.
        if (crash_in_nccl && (sig == "11" || sig == "6" || name == "Segmentation fault" ||
                              name == "SIGSEGV" || name == "SIGABRT")) {
          return false;
        }
        if (sig == "9" || sig == "11" || sig == "7" || name == "Killed" ||
            name == "Segmentation fault" || name == "Bus error" || name == "SIGSEGV" ||
            name == "SIGBUS" || name == "SIGKILL") {
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

// torch's CUDA OOM message lists the processes holding memory on that GPU ("Process 101553 has
// 1.19 GiB memory in use. Process 101552 has ..."): several processes on one GPU of a
// distributed job are ranks that created their context on a device not theirs (cuda:0 before
// set_device).
bool OomOtherProcessesOnGpu(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        if (!Is(m, "torch.cuda_oom")) return false;
        std::size_t n = 0;
        for (std::size_t at = m.line.find("Process "); at != std::string::npos;
             at = m.line.find("Process ", at + 8)) {
          if (m.line.compare(at, 8, "Process ") == 0 &&
              m.line.find(" memory in use", at) != std::string::npos) {
            ++n;
          }
        }
        return n >= 2;
      },
      out);
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

// NCCL's result strings (ncclGetErrorString, src/init.cc 2.10-2.28) and their enum names (torch
// prints both), in any recognised line whichever row matched it: what kind of NCCL failure.
// NCCLCHECK's return trace ("misc/socket.cc:567 -> 2") carries the same result as its
// ncclResult_t number (src/nccl.h.in): `codes` are those of the texts.
bool NcclResult(const Evidence& ev, std::initializer_list<std::string_view> texts,
                std::initializer_list<std::string_view> codes, Lines* out) {
  bool any = CudaText(ev, texts, out);
  std::set<std::string> seen;
  for (const Match& m : ev.matches()) {
    if (!IsReturnTrace(m)) continue;
    const std::string code = m.Field("nccl_code");
    if (std::find(codes.begin(), codes.end(), code) == codes.end()) continue;
    if (seen.insert(code).second) out->push_back(&m);
    any = true;
  }
  return any;
}
bool NcclResultCuda(const Evidence& ev, Lines* out) {
  return NcclResult(ev, {"unhandled cuda error", "ncclUnhandledCudaError"}, {"1"}, out);
}
bool NcclResultSystem(const Evidence& ev, Lines* out) {
  return NcclResult(ev, {"unhandled system error", "ncclSystemError"}, {"2"}, out);
}
bool NcclResultInternal(const Evidence& ev, Lines* out) {
  return NcclResult(ev, {"internal error - please report", "ncclInternalError"}, {"3"}, out);
}
bool NcclResultInvalidUsage(const Evidence& ev, Lines* out) {
  return NcclResult(
      ev, {"invalid usage", "ncclInvalidUsage", "invalid argument", "ncclInvalidArgument"},
      {"4", "5"}, out);
}
bool NcclResultRemote(const Evidence& ev, Lines* out) {
  return NcclResult(ev, {"remote process exited or there was a network error", "ncclRemoteError"},
                    {"6"}, out);
}

// NCCL's "Init COMPLETE" / "Abort COMPLETE" lines name each member's busId: two ranks of one
// host on one busId share a GPU. NCCL rejects that during init, so such a job often prints only
// "Init START": those count within one communicator (its commId; a split's line has none), as
// one GPU is in many communicators under other rank numbers.
bool SameBusIdTwoRanks(const Evidence& ev, Lines* out) {
  std::map<std::string, std::pair<std::string, const Match*>> first;  // host|bus -> rank, line
  for (const Match& m : ev.matches()) {
    if (!Is(m, "nccl.init_start") || m.Field("comm_id").empty()) continue;
    const std::string key = m.Field("host") + "|" + m.Field("comm_id") + "|" + m.Field("bus_id");
    auto [it, fresh] = first.try_emplace(key, m.Field("rank"), &m);
    if (!fresh && it->second.first != m.Field("rank")) {
      out->push_back(it->second.second);
      out->push_back(&m);
      return true;
    }
  }
  for (std::string_view row : {"nccl.init_complete", "nccl.abort_complete"}) {
    for (const Match* m : ev.Distinct(row, "rank")) {
      const std::string key = m->Field("host") + "|" + m->Field("bus_id");
      auto [it, fresh] = first.try_emplace(key, m->Field("rank"), m);
      if (!fresh && it->second.first != m->Field("rank")) {
        out->push_back(it->second.second);
        out->push_back(m);
        return true;
      }
    }
  }
  return false;
}

// A SIGBUS whose fault address has no backing page ("Bus error: nonexistent physical address",
// UCX's handler; torch's DataLoader hint, a DataLoader worker killed by SIGBUS): a shared-memory
// mapping past what /dev/shm holds.
bool SigbusNoBacking(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        return (Is(m, "ucx.caught_signal") && m.Field("signal") == "7" &&
                Has(m, "nonexistent physical address")) ||
               Is(m, "torch.dataloader_bus_error") || IsDataLoaderBusKill(m);
      },
      out);
}

// A datasets map/filter bar that stopped short of 100 % after 25 minutes or more: one process
// was still preprocessing when the others' first collective (or barrier) reached torch's default
// 30-minute timeout. Elapsed is tqdm's "[MM:SS<" or "[H:MM:SS<".
bool PreprocessingAtTimeout(const Evidence& ev, Lines* out) {
  return Collect(
      ev,
      [](const Match& m) {
        if (!Is(m, "progress.datasets_map_bar")) return false;
        const auto percent = ParseInt(m.Field("percent"));
        if (!percent.ok() || *percent >= 100) return false;
        long long seconds = 0;
        for (std::string_view part : Split(m.Field("elapsed"), ':')) {
          const auto v = ParseInt(part);
          if (!v.ok()) return false;
          seconds = seconds * 60 + *v;
        }
        return seconds >= 25 * 60;
      },
      out);
}

constexpr NamedCondition kConditions[] = {
    {"gdr_disabled_for_hca", GdrDisabledForHca,
     "GPU Direct RDMA Disabled for HCA ... (any reason)"},
    {"routable_gid", RoutableGid, "NET/IB QP lines whose GIDs are all routable (none fe80)"},
    {"crash_in_nccl", CrashInNccl,
     "a crash whose faulting PC or backtrace frames are inside libnccl"},
    {"heap_corruption_with_nccl", HeapCorruptionWithNccl,
     "glibc's heap-corruption abort in a process that printed NCCL's lines"},
    {"ib_access_error", IbAccessError,
     "IB completions with an access status (8 or 10 of enum ibv_wc_status)"},
    {"preprocessing_at_timeout", PreprocessingAtTimeout,
     "a datasets map/filter progress bar short of 100 % after 25 minutes or more (a process still "
     "preprocessing when the others' collective reached the 30-minute timeout)"},
    {"sigbus_no_backing", SigbusNoBacking,
     "a bus error on a page without backing (a shared-memory mapping beyond /dev/shm), or a "
     "DataLoader worker killed by SIGBUS"},
    {"same_bus_id_two_ranks", SameBusIdTwoRanks,
     "two ranks of one host whose NCCL communicator lines name the same busId"},
    {"nccl_result_cuda", NcclResultCuda, "NCCL's 'unhandled cuda error' (ncclUnhandledCudaError)"},
    {"nccl_result_system", NcclResultSystem, "NCCL's 'unhandled system error' (ncclSystemError)"},
    {"nccl_result_internal", NcclResultInternal, "NCCL's 'internal error' (ncclInternalError)"},
    {"nccl_result_invalid_usage", NcclResultInvalidUsage,
     "NCCL's 'invalid usage' / 'invalid argument' (ncclInvalidUsage, ncclInvalidArgument)"},
    {"nccl_result_remote", NcclResultRemote,
     "NCCL's 'remote process exited or there was a network error' (ncclRemoteError)"},
    {"retry_exceeded", RetryExceeded, "IB completions with status 12 (transport retry exceeded)"},
    {"link_local_gid", LinkLocalGid,
     "a GID with the link-local prefix fe80 (NET/IB QP line, ibv_modify_qp or completion error)"},
    {"modify_qp_failed", ModifyQpFailed, "ibv_modify_qp failures (QP to RTR/RTS)"},
    {"roce", RoceInUse, "NET/IB : Using ... /RoCE"},
    {"qp_mtu_differs", QpMtuDiffers, "NET/IB QP lines with different MTUs"},
    {"verbs_enomem", VerbsEnomem, "ibv_reg_mr / ibv_create_* failing with ENOMEM"},
    {"reg_mr_failed", RegMrFailed, "ibv_reg_mr failures (not the DMA-BUF one)"},
    {"dmabuf_reg_failed", DmabufRegFailed,
     "ibv_reg_dmabuf_mr failures (GPUDirect RDMA by DMA-BUF)"},
    {"oom_other_processes_on_gpu", OomOtherProcessesOnGpu,
     "a CUDA OOM whose message lists two or more other processes holding memory on that GPU"},
    {"create_qp_failed", CreateQpFailed, "ibv_create_qp failures"},
    {"bad_interface", BadInterface,
     "bootstrap or NET/Socket on a bridge, loopback, tunnel or link-local address, or a socket "
     "peer at one (a Docker network's gateway 172.17-31.0.1)"},
    {"good_interface", GoodInterface, "bootstrap or NET/Socket on a routable interface"},
    {"store_wait_timeout", StoreWaitTimeout,
     "a c10d store read timed out (Socket Timeout) and no connect to the store failed"},
    {"store_address_unroutable", StoreAddressUnroutable,
     "the c10d store the ranks connect to is at 0.0.0.0, a loopback, link-local or Docker-bridge "
     "address"},
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
    {"timeouts_differ_at_seq", TimeoutsDifferAtSeq,
     "watchdog timeouts of one SeqNum whose OpType or NumelIn differ between ranks"},
    {"timeout_seqs_differ_in_group", TimeoutSeqsDifferInGroup,
     "watchdog timeouts of one process group at different SeqNums on different ranks"},
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
    {"retry_exceeded_network.retry_with_routable_gid",
     "retry_exceeded_network",
     0.6,
     {"retry_exceeded", "routable_gid"},
     "qp_mtu_differs",
     "IB completions failed with retry exceeded although the QPs use routable GIDs and one MTU: "
     "packets are lost in the fabric."},
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
    {"straggler_or_slow_rank.store_wait_timeout",
     "straggler_or_slow_rank",
     0.45,
     {"store_wait_timeout"},
     "",
     "The ranks reached the c10d store but timed out waiting for a key (Socket Timeout): the rank "
     "that sets it -- rank 0 creating the NCCL unique id, the last one at a barrier -- was busy "
     "elsewhere (data preprocessing, evaluation, a checkpoint)."},
    {"socket_ifname_wrong.store_on_unroutable_address",
     "socket_ifname_wrong",
     0.7,
     {"store_address_unroutable"},
     "",
     "The ranks try to reach the c10d store at an address other nodes cannot reach (0.0.0.0, "
     "loopback, a container bridge): the rendezvous was advertised on the wrong interface."},
    {"socket_ifname_wrong.refused_on_bad_interface",
     "socket_ifname_wrong",
     0.85,
     {"refused_or_unreachable", "bad_interface"},
     "",
     "Connections were refused or unreachable while NCCL uses an interface the other nodes "
     "cannot reach: the interface, not a filter."},
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
    {"gdr_peermem.disabled_for_hca",
     "gdr_peermem",
     0.55,
     {"gdr_disabled_for_hca"},
     "gdr_no_module",
     "NCCL disabled GPUDirect RDMA for an HCA: transfers go through host memory."},
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
    {"gdr_peermem.ib_access_error",
     "gdr_peermem",
     0.45,
     {"ib_access_error"},
     "",
     "IB work requests completed with an access error: the memory they name is not "
     "registered for the NIC (GPU memory without a working GPUDirect path, or a registration cut "
     "short), not packets lost in the fabric."},
    {"gdr_peermem.reg_mr_failed",
     "gdr_peermem",
     0.35,
     {"reg_mr_failed"},
     "verbs_enomem",
     "ibv_reg_mr on GPU memory fails when no peer-memory module or DMA-BUF support is there."},
    {"gdr_peermem.dmabuf_reg_failed",
     "gdr_peermem",
     0.6,
     {"dmabuf_reg_failed"},
     "",
     "NCCL could not register GPU memory through DMA-BUF: the kernel, the NVIDIA driver or the "
     "HCA driver lacks DMA-BUF support for GPUDirect RDMA (NCCL_DMABUF_ENABLE=0 falls back to "
     "the peer-memory module, which must then be loaded)."},
    {"duplicate_gpu.oom_other_processes_on_gpu",
     "duplicate_gpu",
     0.55,
     {"oom_other_processes_on_gpu"},
     "",
     "A GPU ran out of memory while several other processes held memory on it: ranks created "
     "their CUDA context on a device not their own (cuda:0 before torch.cuda.set_device)."},
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
    {"shm_too_small.sigbus_no_backing",
     "shm_too_small",
     0.6,
     {"sigbus_no_backing"},
     "",
     "A process died of a bus error on a page without backing: a shared-memory segment larger "
     "than what /dev/shm can hold."},
    {"duplicate_gpu.same_bus_id",
     "duplicate_gpu",
     0.8,
     {"same_bus_id_two_ranks"},
     "",
     "Two ranks of one host run their communicators on the same GPU (busId)."},
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
    {"desync_collective_mismatch.timeouts_differ_at_seq",
     "desync_collective_mismatch",
     0.8,
     {"timeouts_differ_at_seq"},
     "",
     "Ranks timed out in the same SeqNum with different collectives or sizes: they called "
     "different collectives in the same order slot (a desync), so none of them can complete."},
    {"desync_collective_mismatch.timeouts_at_different_seqs",
     "desync_collective_mismatch",
     0.55,
     {"timeout_seqs_differ_in_group"},
     "rank_died",
     "Ranks of one process group timed out waiting in different SeqNums: a collective completes "
     "on no rank until all have joined it, so their sequences no longer line up -- one rank "
     "issued a collective the others did not (a conditional collective, uneven data). Compare "
     "the ranks' Flight Recorder dumps or TORCH_DISTRIBUTED_DEBUG=DETAIL at the lower SeqNum."},
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
    // ... and so are NCCL's frames on that process's backtrace: the crash is inside NCCL because
    // NCCL touched its shared-memory segment.
    {"nccl_bug", "shm_too_small"},
    // Connections refused while NCCL uses an interface the nodes cannot reach: the interface.
    {"firewall_or_port", "socket_ifname_wrong"},
    // An unroutable interface in NCCL's "Using" lines does not explain a full /dev/shm: the
    // shared-memory segment failed on this host before any socket to another node mattered.
    {"socket_ifname_wrong", "shm_too_small"},
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

// What would tell two causes apart, for the pairs the differential most often puts first and
// second; other pairs fall back to both categories' decide text.
struct PairSeparator {
  std::string_view a, b, text;
};
constexpr PairSeparator kSeparators[] = {
    {"straggler_or_slow_rank", "oom_or_crash_other_rank",
     "the exit code and time of death of every rank (torchrun's failure table, the kernel log's "
     "OOM killer lines) show whether a rank died first; the Flight Recorder dumps of all ranks "
     "show "
     "whether one rank never entered the collective the others wait in."},
    {"straggler_or_slow_rank", "desync_collective_mismatch",
     "the Flight Recorder dumps of all ranks: a late rank has not entered the collective yet, a "
     "desync has ranks in different collectives (op, sizes) under one sequence number."},
    {"oom_or_crash_other_rank", "desync_collective_mismatch",
     "whether a rank exited first (torchrun's failure table, the kernel log) or every rank stayed "
     "alive in different collectives (Flight Recorder dumps of all ranks)."},
    {"socket_ifname_wrong", "firewall_or_port",
     "the 'Bootstrap : Using' and 'NET/Socket : Using' lines of every node (NCCL_DEBUG=INFO): a "
     "bridge, loopback or tunnel interface is the interface; a routable one with refusals is a "
     "filter. `nc -zv PEER PORT` on that interface decides."},
    {"firewall_or_port", "oom_or_crash_other_rank",
     "whether the peer process was still alive when the connection was refused (its own output, "
     "torchrun's failure table): a dead peer refuses every connection too."},
    {"gid_index", "retry_exceeded_network",
     "show_gids on both nodes and the NET/IB QP lines (GID index, subnet prefix): a link-local "
     "or RoCE v1 GID, or indexes that differ per node, is the GID; a routable v2 GID leaves the "
     "fabric."},
    {"mtu_mismatch", "retry_exceeded_network",
     "a preflight of every node (active_mtu, netdev MTU) shows whether the MTU differs; failures "
     "only at large message sizes point at the MTU."},
    {"ib_port_down_or_link_flap", "retry_exceeded_network",
     "ibstat and the port's link_downed / symbol error counters on both nodes, and the kernel log "
     "around the failure: a port that went down is the flap."},
    {"memlock", "gdr_peermem",
     "`ulimit -l` inside the job and `lsmod | grep peermem`: ENOMEM with a small limit is memlock; "
     "registrations of GPU memory failing with an unlimited limit is GPUDirect."},
    {"memlock", "qp_or_resource_limit",
     "`ulimit -l` inside the job, and whether the failure appears only above some node count "
     "(HCA max_qp/max_cq)."},
    {"gpu_xid_or_driver", "nccl_bug",
     "the kernel log (NVRM: Xid) and nvidia-smi -q on the node, and the fabric manager's state: a "
     "GPU or driver fault shows there; a clean node with the same error points at NCCL's release "
     "notes."},
    {"gpu_xid_or_driver", "oom_or_crash_other_rank",
     "the kernel log of the node of the first rank that died: an Xid or a GPU off the bus is the "
     "GPU, an OOM killer line or a CUDA out-of-memory error is the crash."},
    {"version_mismatch", "nccl_bug",
     "the 'NCCL version' line of every rank: different versions are the mismatch; one version "
     "everywhere leaves its release notes."},
};

}  // namespace

std::span<const Rule> Rules() { return kRules; }
std::span<const NamedCondition> Conditions() { return kConditions; }
std::span<const CategoryInfo> Categories() { return sl::Causes(); }

const CategoryInfo* FindCategory(std::string_view name) { return sl::FindCause(name); }

std::string Separator(std::string_view a, std::string_view b) {
  for (const PairSeparator& p : kSeparators) {
    if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return std::string(p.text);
  }
  const CategoryInfo* x = FindCategory(a);
  const CategoryInfo* y = FindCategory(b);
  if (x == nullptr || y == nullptr) return "";
  return fmt::format("for {}: {} For {}: {}", a, x->decide, b, y->decide);
}

namespace {

EvidenceLine Cite(const Match& m) {
  return {m.source, m.line_number, m.line.substr(0, 600), std::string(m.signature->id)};
}

std::vector<EvidenceLine> CiteAll(const Lines& lines, std::size_t cap = 6) {
  std::vector<EvidenceLine> out;
  for (const Match* m : lines) {
    if (out.size() >= cap) break;
    out.push_back(Cite(*m));
  }
  return out;
}

// Whether line `m` is of the process the entity describes so far: a line of another rank, host
// or pid must not lend its node or GPU ("[rank3]: CUDA out of memory" followed by rank 0's NCCL
// lines on n1 is rank 3, not "n1, rank 3, GPU 0"). A rank-less line joins a ranked entity only
// through the same host:pid.
bool SameProcess(const Entity& e, const std::string& pid, const Match& m) {
  const std::string rank = m.Field("rank"), host = m.Field("host"), mpid = m.Field("pid");
  if (!e.rank.empty() && !rank.empty()) return rank == e.rank;
  if (!host.empty() && !e.node.empty() && host != e.node) return false;
  if (!mpid.empty() && !pid.empty()) return mpid == pid;
  return e.rank.empty();
}

// An RDMA device's name as the kernel's drivers give it (mlx5_0, mlx4_1, bnxt_re0, rxe0, efa_0,
// irdma1, hfi1_0, qedr0, siw0, erdma_0, hns_0, ionic_0), not a CUDA device index.
bool IsRdmaDeviceName(std::string_view v) {
  for (std::string_view p : {"mlx4_", "mlx5_", "bnxt_re", "rxe", "efa", "irdma", "hfi1_", "qedr",
                             "siw", "erdma", "hns_", "ionic_"}) {
    if (v.starts_with(p)) return true;
  }
  return false;
}

// What the lines say about where: node, rank, port, GPU, peer (the first line that names each),
// from the lines of one process only.
Entity EntityOf(const Lines& lines) {
  Entity e;
  std::string pid;
  auto first = [](std::string* slot, const std::string& v) {
    if (slot->empty() && !v.empty()) *slot = v;
  };
  for (const Match* m : lines) {
    if (m != lines.front() && !SameProcess(e, pid, *m)) continue;
    first(&e.node, m->Field("host"));
    first(&e.node, m->Field("pod"));
    first(&pid, m->Field("pid"));
    first(&e.rank, m->Field("rank"));
    first(&e.rank, m->Field("timeout_rank"));
    first(&e.rank, m->Field("rank_a"));
    const std::string hca = m->Field("hca");
    first(&e.port, hca.empty() || m->Field("port").empty() ? hca : hca + ":" + m->Field("port"));
    // "dev" is NCCL's CUDA device ("[3]") on most lines, an RDMA device on the tools' tables
    // (show_gids' DEV column "mlx5_0"): the port, not a GPU.
    const std::string dev = m->Field("dev");
    first(IsRdmaDeviceName(dev) ? &e.port : &e.gpu, dev);
    first(&e.gpu, m->Field("cuda_dev"));
    first(&e.gpu, m->Field("pci"));
    first(&e.gpu, m->Field("gpu"));
    first(&e.peer, m->Field("peer"));
  }
  return e;
}

// One category's running total while the rules are applied: the rules' combined confidence
// (a feature of the model), the lines and the entity the cause cites.
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

// The features in the order first seen; the same id twice keeps the larger value and both
// lines.
class FeatureSet {
 public:
  void Add(const std::string& id, double value, std::string_view source,
           std::vector<EvidenceLine> lines) {
    auto [it, fresh] = index_.try_emplace(id, items_.size());
    if (fresh) items_.push_back({id, value, std::string(source), {}, {}});
    Feature& f = items_[it->second];
    f.value = std::max(f.value, value);
    for (auto& l : lines) {
      if (f.lines.size() < 6) f.lines.push_back(std::move(l));
    }
  }
  std::vector<Feature> Take() { return std::move(items_); }

 private:
  std::vector<Feature> items_;
  std::map<std::string, std::size_t> index_;
};

// A row's confidence as the rules saw it: a cause row by itself, a symptom typical of the cause
// (status=12 for the fabric) less.
double RowConfidence(const Signature& s) {
  const double base = std::min(0.9, 0.3 + s.priority / 200.0);
  return s.kind == EvidenceKind::kCause ? base : base * 0.75;
}

// Every row that matched is a feature ("row:<id>"), and so is each (kind, category) of the
// cause and symptom rows; rows of a cause category contribute to that category's tally.
void ApplyRows(const Evidence& ev, std::map<std::string, Tally>* tallies, FeatureSet* fs,
               Diagnosis* d) {
  std::map<const Signature*, Lines> by_row;
  std::vector<const Signature*> order;
  for (const Match& m : ev.matches()) {
    auto [it, fresh] = by_row.try_emplace(m.signature);
    if (fresh) order.push_back(m.signature);
    it->second.push_back(&m);
  }
  for (const Signature* s : order) {
    const Lines& lines = by_row[s];
    fs->Add("row:" + std::string(s->id), 1, s->provenance, CiteAll(lines, 3));
    if (s->kind == EvidenceKind::kFact) continue;
    const char* kind = s->kind == EvidenceKind::kCause ? "cause:" : "symptom:";
    fs->Add(kind + std::string(s->category), 1, "catalog rows of this kind and category",
            CiteAll(lines, 3));
    if (FindCategory(s->category) == nullptr) continue;
    const double c = RowConfidence(*s);
    Tally& t = (*tallies)[std::string(s->category)];
    Contribute(&t, "row:" + std::string(s->id), c, lines, "");
    if (t.row_fix.empty()) t.row_fix = std::string(s->fix);
    d->fired.push_back({"row:" + std::string(s->id),
                        std::string(s->category),
                        c,
                        {{std::string(s->id), {Cite(*lines.front())}}}});
  }
  if (const Match* x = ev.Desync()) {
    Tally& t = (*tallies)[std::string(x->signature->category)];
    Contribute(&t, "row:" + std::string(x->signature->id), 0.8, {x}, "");
    fs->Add("struct:coll_desync", 1, "NCCL collective traces of one opCount that differ",
            {Cite(*x)});
    d->fired.push_back({"row:" + std::string(x->signature->id),
                        std::string(x->signature->category),
                        0.8,
                        {{"coll_desync", {Cite(*x)}}}});
  }
}

using Memo = std::map<std::string_view, std::pair<bool, Lines>>;

// Every condition is evaluated once: those that hold are features ("cond:<name>").
Memo TestConditions(const Evidence& ev, FeatureSet* fs) {
  Memo memo;
  for (const NamedCondition& c : kConditions) {
    std::pair<bool, Lines> r{false, {}};
    r.first = c.test(ev, &r.second);
    if (r.first) fs->Add("cond:" + std::string(c.name), 1, c.means, CiteAll(r.second));
    memo.emplace(c.name, std::move(r));
  }
  return memo;
}

void ApplyRules(const Memo& memo, std::map<std::string, Tally>* tallies, FeatureSet* fs,
                Diagnosis* d) {
  auto test = [&](std::string_view name) -> const std::pair<bool, Lines>& {
    static const std::pair<bool, Lines> kNo{false, {}};
    auto it = memo.find(name);
    return it == memo.end() ? kNo : it->second;
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
      f.conditions.emplace_back(std::string(w), CiteAll(l));
    }
    fs->Add("rule:" + std::string(rule.id), 1, rule.why, CiteAll(lines));
    Contribute(&(*tallies)[std::string(rule.category)], std::string(rule.id), rule.confidence,
               lines, rule.why);
    d->fired.push_back(std::move(f));
  }
}

void ApplyClaims(std::span<const CauseClaim> claims, std::map<std::string, Tally>* tallies,
                 FeatureSet* fs, Diagnosis* d) {
  for (const CauseClaim& c : claims) {
    if (FindCategory(c.category) == nullptr) continue;
    fs->Add(c.source + ":" + c.rule, c.confidence, c.source, c.evidence);
    fs->Add("claim:" + c.category, c.confidence, "claims of other sources for this category",
            c.evidence);
    Tally& t = (*tallies)[c.category];
    Contribute(&t, c.source + ":" + c.rule, c.confidence, {}, c.why);
    for (const auto& e : c.evidence) {
      if (t.evidence.size() < 12) t.evidence.push_back(e);
    }
    if (t.entity.empty()) t.entity = c.entity;
    d->fired.push_back(
        {c.source + ":" + c.rule, c.category, c.confidence, {{c.source, c.evidence}}});
  }
}

// The rules' combined confidence per category ("engine:<category>"), after the categories that
// explain another one have weakened it.
void EngineFeatures(std::map<std::string, Tally>* tallies, FeatureSet* fs) {
  for (const Supersede& s : kSupersedes) {
    auto weak = tallies->find(std::string(s.weaker));
    if (weak != tallies->end() && tallies->count(std::string(s.stronger))) {
      weak->second.miss = 1 - (1 - weak->second.miss) * 0.5;
    }
  }
  for (const auto& [category, t] : *tallies) {
    fs->Add("engine:" + category, std::min(0.97, 1 - t.miss),
            "the rules' combined confidence (noisy-or of the rows, rules and claims naming it)",
            {t.evidence.begin(), t.evidence.begin() + std::min<std::size_t>(3, t.evidence.size())});
  }
}

// Symptom categories that are errors of their own (not a wait).
bool IsErrorSymptom(std::string_view category) {
  // A rank's death (CUDA OOM, a fatal signal, a crash frame) is an error too: the first one in
  // the log is the failure the others' errors follow from.
  for (std::string_view c :
       {"nccl_error", "ib_completion_error", "cuda_error", "peer_exit_or_network", "nccl_warning",
        "watchdog_stuck", "cuda_oom", "rank_process_failed", "oom_or_crash_other_rank"}) {
    if (c == category) return true;
  }
  return false;
}

// Failure evidence: any line above a fact, a rule that held, another source's claim.
bool FailureEvidence(const Evidence& ev, const Diagnosis& d) {
  if (!d.fired.empty()) return true;
  return std::any_of(ev.matches().begin(), ev.matches().end(), [](const Match& m) {
    return m.signature->kind != EvidenceKind::kFact &&
           (m.signature->priority > 0 || m.signature->severity >= Severity::kWarning);
  });
}

// A process group numbers its collectives from 1 (ProcessGroupNCCL's seqCollective_); the first
// few are set-up: the barrier of init_process_group's store-based or device barrier and DDP's
// broadcast of the module states in its constructor (_sync_module_states). A timeout there means
// the ranks never started training together: one rank came late to the start (preparing data,
// loading a checkpoint) or never came, rather than a collective mismatch in the training loop.
constexpr long long kEarlySeq = 5;

void EarlyTimeout(const Evidence& ev, FeatureSet* fs) {
  for (const char* id : {"torch.watchdog_timeout", "torch.worknccl_desc"}) {
    for (const Match* m : ev.Distinct(id, "seq")) {
      const auto seq = ParseInt(m->Field("seq"));
      if (seq.ok() && *seq >= 1 && *seq <= kEarlySeq) {
        fs->Add("struct:timeout_early_seq", 1,
                "a collective among the process group's first few (SeqNum <= 5) timed out",
                {Cite(*m)});
        return;
      }
    }
  }
}

// torch's watchdog timeouts: on one rank or several, and which collective (its OpType): a
// BROADCAST or BARRIER waited on is where a late rank is usually caught, an ALLREDUCE of the
// training step where a dead one is.
void TimeoutShape(const Evidence& ev, FeatureSet* fs) {
  EarlyTimeout(ev, fs);
  const Lines ranks = ev.Distinct("torch.watchdog_timeout", "rank");
  if (ranks.empty()) return;
  fs->Add(ranks.size() == 1 ? "struct:timeout_one_rank" : "struct:timeout_many_ranks", 1,
          "the processes whose watchdog timed out in a collective", CiteAll(ranks, 3));
  // Rank 0 is where the extra work of a job runs alone (evaluation, checkpoint saving, building
  // a dataset cache, logging): while it does, the others wait and their watchdogs fire, not its.
  if (std::none_of(ranks.begin(), ranks.end(),
                   [](const Match* m) { return m->Field("rank") == "0"; })) {
    fs->Add("struct:timeout_not_rank0", 1,
            "the ranks whose watchdog timed out do not include rank 0", CiteAll(ranks, 3));
  }
  // Ranks stuck in different collectives (other sequence numbers, ops or sizes) did not call the
  // same thing: a desync; one collective everywhere is waiting for someone.
  const std::pair<const char*, const char*> differ[] = {
      {"seq", "struct:timeout_seqs_differ"},
      {"op", "struct:timeout_ops_differ"},
      {"numel_in", "struct:timeout_sizes_differ"}};
  for (const auto& [field, id] : differ) {
    const Lines values = ev.Distinct("torch.watchdog_timeout", field);
    if (values.size() >= 2) {
      fs->Add(id, 1, "timed-out collectives of different ranks disagree", CiteAll(values, 3));
    }
  }
  if (ranks.size() >= 2 && ev.Distinct("torch.watchdog_timeout", "seq").size() == 1) {
    fs->Add("struct:timeout_same_seq", 1, "every timed-out rank waits in the same collective",
            CiteAll(ranks, 3));
  }
  for (const Match* m : ev.Distinct("torch.watchdog_timeout", "op")) {
    std::string op = Lower(m->Field("op"));
    while (!op.empty() && op.front() == '_') op.erase(op.begin());
    if (!op.empty()) {
      fs->Add("struct:timeout_op:" + op, 1, "the OpType of a timed-out collective", {Cite(*m)});
    }
  }
}

// An error line: above a fact, and a cause row or an error symptom (not a wait).
bool IsErrorLine(const Match& m) {
  const Signature& s = *m.signature;
  return s.kind != EvidenceKind::kFact &&
         (s.kind == EvidenceKind::kCause || IsErrorSymptom(s.category));
}

// The NCCL release series ("2.18") of every "NCCL version 2.18.3" the evidence holds: which
// releases ran, so that the model can learn the series whose defects the corpus shows.
void NcclSeries(const Evidence& ev, FeatureSet* fs) {
  // torch before 1.10 printed NCCL's version code 21104 as "21.1.4" (code/1000, then digits).
  static const std::regex kVersion(R"(NCCL version:? (?:2\.(\d{1,2})|2(\d)\.(\d))\.\d+)");
  for (const Match& m : ev.matches()) {
    if (m.line.find("NCCL version") == std::string::npos) continue;
    std::smatch v;
    if (!std::regex_search(m.line, v, kVersion)) continue;
    const std::string minor = v[1].matched ? v[1].str() : v[2].str() + v[3].str();
    fs->Add("struct:nccl_series:2." + minor, 1, "the NCCL release series the job ran", {Cite(m)});
  }
}

// When and where the failure struck, as a person reads it: after NCCL's Init COMPLETE or training
// progress (a job that ran, then broke: a crash, a flap, a hang) or before (setup: interfaces,
// firewall, GIDs, versions).
void ErrorPhase(const Evidence& ev, const Match& first, FeatureSet* fs) {
  bool init = false, progress = false;
  for (const Match& m : ev.matches()) {
    if (&m == &first || m.source != first.source || m.line_number >= first.line_number) continue;
    init = init || m.signature->id == std::string_view("nccl.init_complete");
    progress = progress || m.signature->category == std::string_view("progress");
  }
  fs->Add(init ? "struct:error_after_init" : "struct:error_before_init", 1,
          "the first error line comes after (or before) an NCCL Init COMPLETE of its file",
          {Cite(first)});
  if (progress) {
    fs->Add("struct:error_after_progress", 1, "training progress lines precede the first error",
            {Cite(first)});
  }
}

// On one host or several, whether or not any line is an error: a hang with no error line on a
// single node (the benchmark's device table, NCCL's host:pid prefixes all name one machine) is
// not a network's, and one node cannot be firewalled off from itself.
void HostSpread(const Evidence& ev, FeatureSet* fs) {
  std::set<std::string> hosts;
  for (const Match& m : ev.matches()) {
    if (const std::string h = m.Field("host"); !h.empty()) hosts.insert(h);
  }
  if (hosts.size() == 1) fs->Add("struct:hosts_one", 1, "the lines name one host only", {});
  if (hosts.size() >= 2) fs->Add("struct:hosts_many", 1, "the lines name several hosts", {});
}

// Who errs: the error lines of one rank (or host) only, or of several. One rank failing first
// while the others wait points at that rank (its crash, its GPU); every rank reporting the same
// error points at something they share (a library, a setting, a collective called differently).
void ErrorSpread(const Evidence& ev, FeatureSet* fs) {
  std::set<std::string> who;
  std::set<std::string_view> rows;
  const Match* first = nullptr;
  for (const Match& m : ev.matches()) {
    if (!IsErrorLine(m)) continue;
    if (first == nullptr) first = &m;
    rows.insert(m.signature->id);
    std::string w = m.Field("rank");
    if (w.empty()) w = m.Field("host");
    if (!w.empty()) who.insert(w);
  }
  if (first == nullptr) return;
  ErrorPhase(ev, *first, fs);
  // The first error in the log's order is usually the cause; later ones are its cascade.
  fs->Add("first:" + std::string(first->signature->category), 1,
          "the category of the first error line", {Cite(*first)});
  if (who.size() == 1) fs->Add("struct:errors_one_rank", 1, "error lines of one process", {});
  if (who.size() >= 2) fs->Add("struct:errors_many_ranks", 1, "error lines of several ranks", {});
  if (rows.size() == 1 && who.size() >= 2) {
    fs->Add("struct:same_error_everywhere", 1, "several ranks report the same error row",
            {Cite(*first)});
  }
}

// Where each chain of NCCL's return trace starts: the first "file:line -> code" line of a
// process after a line that is not one (its file is the function that failed: misc/socket.cc,
// transport/net_ib.cc, misc/shmutils.cc), as a feature "trace_origin:<file>".
void TraceOrigins(const Evidence& ev, FeatureSet* fs) {
  std::set<std::string> in_chain;  // processes ("host:pid") whose last kept line is a trace line
  for (const Match& m : ev.matches()) {
    const std::string who = m.source + "|" + m.Field("host") + ":" + m.Field("pid");
    if (!IsReturnTrace(m)) {
      in_chain.erase(who);
      continue;
    }
    if (!in_chain.insert(who).second) continue;
    fs->Add("trace_origin:" + m.Field("src_file"), 1,
            "the NCCL source file where a chain of NCCL's return trace starts", {Cite(m)});
  }
}

// The vocabulary's terms (diagnose/terms.h) in the lines the catalog knows only as failures or
// symptoms -- the generic failure rows', NCCL's WARN catch-all's, and a symptom row's (a CUDA
// failure, an NCCL error, a crash; not a timeout's): what such a line talks about ("ibv_create_qp",
// "RLIMIT_MEMLOCK", "/dev/shm", "driver version is insufficient"), one feature "term:<id>" per
// term. A cause row's line is read by that row (and its rules), not again by its words; facts
// are not failures.
void TermFeatures(const Evidence& ev, FeatureSet* fs) {
  for (const Match& m : ev.matches()) {
    if (m.signature->kind != EvidenceKind::kSymptom) continue;
    // A timeout's line is about the wait itself ("SeqNum", "timed out"), not what made it.
    const std::string_view cat = m.signature->category;
    if (cat == "collective_timeout" || cat == "store_timeout" || cat == "watchdog_stuck") continue;
    for (std::string_view id : TermsIn(m.line)) {
      fs->Add("term:" + std::string(id), 1, "a term of the vocabulary in a failure line",
              {Cite(m)});
    }
  }
}

// The CUDA error text a failed call names (cudaGetErrorString, whichever wrapper printed it) and
// the NCCL source file of each WARN ("graph/rings.cc", "transport/net_ib.cc"): what failed,
// and where in NCCL, for lines the rows only know as "a CUDA failure" or "an NCCL warning".
void TextFeatures(const Evidence& ev, FeatureSet* fs) {
  static const std::regex kWarnFile(R"(\] ([A-Za-z_/]+\.(?:cc|cu|h|cpp)):\d+ NCCL WARN)");
  for (const Match& m : ev.matches()) {
    if (m.signature->kind == EvidenceKind::kFact) continue;
    const std::string_view cat = m.signature->category;
    if (cat == "cuda_error" || cat == "gpu_xid_or_driver") {
      std::string e = Lower(m.Field("error"));
      if (e.size() > 60) e.resize(60);
      while (!e.empty() && !std::isalnum(static_cast<unsigned char>(e.back()))) e.pop_back();
      if (!e.empty())
        fs->Add("cuda_error:" + e, 1, "the CUDA error text of a failed call", {Cite(m)});
    }
    std::smatch w;
    if (std::regex_search(m.line, w, kWarnFile)) {
      fs->Add("warn_file:" + w[1].str(), 1, "the NCCL source file of a WARN line", {Cite(m)});
    }
  }
  TraceOrigins(ev, fs);
  TermFeatures(ev, fs);
  for (const Match* m : ev.Distinct("torch.exception_raised_from", "function")) {
    fs->Add("raised_from:" + m->Field("function"), 1, "the torch function that raised a c10::Error",
            {Cite(*m)});
  }
}

// The locked-memory limit the log shows (`ulimit -a`'s "max locked memory (kbytes, -l)", UCX's
// "(current: 64 kbytes)"): unlimited leaves a registration failure to the HCA or GPUDirect, a
// number points at the limit.
void MemlockLimit(const Evidence& ev, FeatureSet* fs) {
  for (const Match& m : ev.matches()) {
    std::string v = m.Field("memlock_kb");
    // UCX's hint rides on the line of the call that failed, which another row matched first.
    if (const auto at = m.line.find("locked memory (ulimit -l)");
        v.empty() && at != std::string::npos) {
      if (const auto cur = m.line.find("(current: ", at); cur != std::string::npos) {
        v = m.line.substr(cur + 10, 9);
      }
    }
    if (v.empty()) continue;
    const bool unlimited = v.rfind("unlimited", 0) == 0 || v.rfind("infinity", 0) == 0;
    fs->Add(unlimited ? "struct:memlock_unlimited" : "struct:memlock_limited", 1,
            "the locked-memory limit the log shows (ulimit -l): unlimited or a number", {Cite(m)});
  }
}

// The interfaces NCCL's sockets (NET/Socket, or Bootstrap before 2.10) say they use: several
// means NCCL_SOCKET_IFNAME was left unset on a host with many, and NCCL spreads its connections
// over all of them (a bad one among them is the condition bad_interface).
void SocketInterfaces(const Evidence& ev, FeatureSet* fs) {
  static const std::regex kEntry(R"(\[\d+\]([^:\s]+):)");
  for (const Match& m : ev.matches()) {
    const std::string_view id = m.signature->id;
    if (id != "nccl.socket_using" && id != "nccl.bootstrap_using") continue;
    std::set<std::string> names;
    for (auto it = std::sregex_iterator(m.line.begin(), m.line.end(), kEntry);
         it != std::sregex_iterator(); ++it) {
      names.insert((*it)[1].str());
    }
    if (names.size() >= 2) {
      fs->Add("struct:socket_ifs_several", 1, "NCCL's sockets list several interfaces", {Cite(m)});
      return;
    }
  }
}

// The evidence's shape: symptoms with nothing that names a cause, a timeout without any error.
void StructFeatures(const Evidence& ev, const Diagnosis& d, FeatureSet* fs) {
  if (!FailureEvidence(ev, d)) {
    // Unknown leads; the fit learns which causes such logs had (their base rates), rather than
    // leaving the ranking to the intercepts, which other features' weights shape.
    fs->Add("struct:no_failure_evidence", 1, "no line is a failure the catalog knows", {});
    return;
  }
  if (!d.decided) fs->Add("struct:symptoms_only", 1, "symptoms and nothing that names a cause", {});
  bool timeout = false, error = false;
  for (const Match& m : ev.matches()) {
    if (m.signature->kind == EvidenceKind::kFact) continue;
    timeout = timeout || m.signature->category == "collective_timeout";
    error =
        error || m.signature->kind == EvidenceKind::kCause || IsErrorSymptom(m.signature->category);
  }
  if (timeout && !error) {
    fs->Add("struct:timeout_without_error", 1, "a collective timed out and no line is an error",
            {});
  }
  TimeoutShape(ev, fs);
  NcclSeries(ev, fs);
  MemlockLimit(ev, fs);
  SocketInterfaces(ev, fs);
  HostSpread(ev, fs);
  ErrorSpread(ev, fs);
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

// Rows, conditions, rules and claims: the features, the tallies the causes cite, the firings.
std::vector<Feature> Analyse(const Evidence& ev, std::span<const CauseClaim> claims,
                             std::map<std::string, Tally>* tallies, Diagnosis* d) {
  FeatureSet fs;
  ApplyRows(ev, tallies, &fs, d);
  ApplyRules(TestConditions(ev, &fs), tallies, &fs, d);
  ApplyClaims(claims, tallies, &fs, d);
  d->decided = !tallies->empty();
  EngineFeatures(tallies, &fs);
  StructFeatures(ev, *d, &fs);
  TextFeatures(ev, &fs);
  return fs.Take();
}

// Contributions below this share of a score are not shown as a cause's evidence.
constexpr double kPushShown = 0.05;
// The differential keeps the first kMinShown causes, and more down to kShownProbability, at
// most kMaxShown.
constexpr std::size_t kMinShown = 3, kMaxShown = 8;
constexpr double kShownProbability = 0.01;

// The features that raised category `k`'s score, strongest first, and their lines.
void PushesOf(const Model& model, int k, const std::vector<Feature>& features, Cause* c) {
  for (const Feature& f : features) {
    const auto* w = model.Weights(f.id);
    if (w == nullptr) continue;
    const double push = (*w)[static_cast<std::size_t>(k)] * f.value;
    if (push > kPushShown) c->pushed.push_back({f.id, push});
  }
  std::sort(c->pushed.begin(), c->pushed.end(),
            [](const Push& a, const Push& b) { return a.contribution > b.contribution; });
  for (const Push& p : c->pushed) {
    auto f = std::find_if(features.begin(), features.end(),
                          [&](const Feature& x) { return x.id == p.feature; });
    for (const EvidenceLine& e : f->lines) {
      if (c->evidence.size() >= 12) break;
      const bool dup = std::any_of(c->evidence.begin(), c->evidence.end(), [&](const auto& x) {
        return x.file == e.file && x.line == e.line;
      });
      if (!dup) c->evidence.push_back(e);
    }
  }
}

// One cause of the differential: the model's probability, the tally's lines, entity and
// reasoning when rules named it, the lines of the features that pushed it.
Cause MakeCause(const Model& model, int k, double p, const std::vector<Feature>& features,
                std::map<std::string, Tally>* tallies) {
  Cause c;
  c.category = model.categories[static_cast<std::size_t>(k)];
  c.probability = p;
  const CategoryInfo* info = FindCategory(c.category);
  c.fix = std::string(info->fix);
  c.decide = std::string(info->decide);
  if (auto it = tallies->find(c.category); it != tallies->end()) {
    Tally& t = it->second;
    c.entity = t.entity.empty() ? EntityOf(t.lines) : t.entity;
    c.evidence = std::move(t.evidence);
    c.rules = std::move(t.rules);
    c.why = Join(t.why, " ");
    if (!t.row_fix.empty()) c.fix += " (" + t.row_fix + ")";
  }
  PushesOf(model, k, features, &c);
  return c;
}

// The differential: every cause class of the model with its probability, best first; equal
// probabilities keep the vocabulary's order (more specific causes first).
void Rank(const Model& model, std::map<std::string, Tally>* tallies, Diagnosis* d) {
  std::vector<std::pair<std::string, double>> x;
  for (const Feature& f : d->features) x.emplace_back(f.id, f.value);
  const std::vector<double> p = model.Probabilities(x);
  for (std::size_t k = 0; k < p.size(); ++k) {
    if (FindCategory(model.categories[k]) == nullptr) continue;
    d->causes.push_back(MakeCause(model, static_cast<int>(k), p[k], d->features, tallies));
  }
  std::sort(d->causes.begin(), d->causes.end(), [](const Cause& a, const Cause& b) {
    if (a.probability != b.probability) return a.probability > b.probability;
    return CauseIndex(a.category) < CauseIndex(b.category);
  });
  std::size_t keep = 0;
  while (keep < d->causes.size() && keep < kMaxShown &&
         (keep < kMinShown || d->causes[keep].probability >= kShownProbability)) {
    ++keep;
  }
  d->causes.resize(keep);
  if (d->causes.size() >= 2) d->separate = Separator(d->causes[0].category, d->causes[1].category);
  for (const Cause& c : d->causes) {
    const auto k = static_cast<std::size_t>(model.Index(c.category));
    d->priors.push_back(model.intercepts[k]);
    for (Feature& f : d->features) {
      const auto* w = model.Weights(f.id);
      f.weights.push_back(w == nullptr ? 0.0 : (*w)[k]);
    }
  }
}

Cause Unknown(const std::vector<Symptom>& symptoms) {
  Cause u;
  u.category = "unknown";
  u.probability = 0;  // not a cause: it claims nothing the probabilities could be scored on
  u.decide = Decider(symptoms);
  for (const Symptom& s : symptoms) {
    if (u.evidence.size() < 12) u.evidence.push_back(s.first);
  }
  u.why = symptoms.empty() ? "Nothing the catalog knows was found."
                           : "Only symptoms were found; they do not name a cause.";
  return u;
}

}  // namespace

std::vector<Feature> ExtractFeatures(const Evidence& evidence, std::span<const CauseClaim> claims) {
  std::map<std::string, Tally> tallies;
  Diagnosis d;
  return Analyse(evidence, claims, &tallies, &d);
}

Diagnosis Diagnose(const Evidence& evidence, std::span<const CauseClaim> claims,
                   const Model* model) {
  Diagnosis d;
  d.recognised = evidence.total();
  std::map<std::string, Tally> tallies;
  d.features = Analyse(evidence, claims, &tallies, &d);
  CollectSymptoms(evidence, &d);
  const Model& m = model != nullptr ? *model : FittedModel();
  if (!m.categories.empty()) Rank(m, &tallies, &d);
  if (!FailureEvidence(evidence, d) || d.causes.empty()) {
    // Nothing failed that the catalog knows: unknown leads, with what would decide; the
    // model's ranking of the facts alone (its priors, mostly) follows as the base rates.
    d.decided = false;
    d.separate.clear();
    d.causes.insert(d.causes.begin(), Unknown(d.symptoms));
    if (d.causes.size() > kMinShown + 1) d.causes.resize(kMinShown + 1);
    if (!d.priors.empty()) d.priors.insert(d.priors.begin(), 0.0);
    for (Feature& f : d.features) {
      if (!f.weights.empty()) f.weights.insert(f.weights.begin(), 0.0);
    }
  }
  return d;
}

// ---- the vocabulary's own knowledge, as pseudo-observations for the fit ----

namespace {

// A row's pseudo-observation is the log of that one line, as far as the catalog knows the line
// (its substrings, no fields): every feature such a log has -- the row, its kind and category,
// the conditions its text meets, and the shape (the first error, before any Init COMPLETE) -- so
// that the fit weighs a row the corpus lacks as it would weigh a real log of it, not by its row
// feature alone.
std::vector<std::pair<std::string, double>> RowAloneFeatures(const Signature& s) {
  Match m;
  m.signature = &s;
  m.line = std::string(s.prefilter);
  if (!s.also.empty()) m.line += " " + std::string(s.also);
  m.source = "prior";
  m.line_number = 1;
  Evidence ev;
  ev.Add(std::move(m));
  std::vector<std::pair<std::string, double>> out;
  for (const Feature& f : ExtractFeatures(ev, {})) out.emplace_back(f.id, f.value);
  return out;
}

// What an expert reads from evidence that does not decide by itself: the causes it leaves
// open besides the one its rule or row names, each with the weight of its pseudo-observation
// (the same features, labelled with that cause). `of` is a rule ("rule:ID"), a row ("row:ID")
// or every row of a symptom category ("symptom:CATEGORY": symptoms name no cause, so without
// these a watchdog timeout alone would weigh nothing). Read from the sources' own meaning of
// the texts (NCCL's, torch's, the verbs' and the C library's), never fitted.
constexpr Alternative kAlternatives[] = {
    // A collective timed out: a late rank, a dead one, or ranks in different collectives.
    {.of = "symptom:collective_timeout", .category = "straggler_or_slow_rank", .weight = 0.4},
    {.of = "symptom:collective_timeout", .category = "oom_or_crash_other_rank", .weight = 0.3},
    {.of = "symptom:collective_timeout", .category = "desync_collective_mismatch", .weight = 0.2},
    // The watchdog itself is stuck in a CUDA call: the GPU or driver, else NCCL.
    {.of = "symptom:watchdog_stuck", .category = "gpu_xid_or_driver", .weight = 0.4},
    {.of = "symptom:watchdog_stuck", .category = "nccl_bug", .weight = 0.2},
    // The store did not answer: the address or port unreachable, or a rank that never came.
    {.of = "symptom:store_timeout", .category = "firewall_or_port", .weight = 0.3},
    {.of = "symptom:store_timeout", .category = "socket_ifname_wrong", .weight = 0.25},
    {.of = "symptom:store_timeout", .category = "oom_or_crash_other_rank", .weight = 0.2},
    // A worker exited; a peer closed: most often a crash, else the fabric under it.
    {.of = "symptom:rank_process_failed", .category = "oom_or_crash_other_rank", .weight = 0.4},
    {.of = "symptom:rank_process_failed", .category = "gpu_xid_or_driver", .weight = 0.15},
    {.of = "symptom:peer_exit_or_network", .category = "oom_or_crash_other_rank", .weight = 0.4},
    {.of = "symptom:peer_exit_or_network", .category = "ib_port_down_or_link_flap", .weight = 0.15},
    {.of = "symptom:peer_exit_or_network", .category = "firewall_or_port", .weight = 0.1},
    // An IB completion error without its status row deciding: the GID, the MTU, the port, the
    // fabric.
    {.of = "symptom:ib_completion_error", .category = "retry_exceeded_network", .weight = 0.3},
    {.of = "symptom:ib_completion_error", .category = "gid_index", .weight = 0.2},
    {.of = "symptom:ib_completion_error", .category = "mtu_mismatch", .weight = 0.15},
    {.of = "symptom:ib_completion_error", .category = "ib_port_down_or_link_flap", .weight = 0.15},
    // A CUDA error: the GPU or driver first, then NCCL, two ranks on a GPU, the P2P path.
    {.of = "symptom:cuda_error", .category = "gpu_xid_or_driver", .weight = 0.4},
    {.of = "symptom:cuda_error", .category = "nccl_bug", .weight = 0.15},
    {.of = "symptom:cuda_error", .category = "acs_iommu_p2p", .weight = 0.1},
    // A CUDA error can also be a library built for another driver or device (cudaGetErrorString's
    // texts that are not the GPU's own state).
    {.of = "symptom:cuda_error", .category = "version_mismatch", .weight = 0.1},
    // NVLink SHARP (NVLS) and Fabric Manager failures: the driver or Fabric Manager state first,
    // then an NCCL defect of the NVLS path, then a driver/Fabric Manager/NCCL version skew
    // (NCCL's init.cc and transport/nvls.cc bind multicast objects through the CUDA driver).
    {.of = "row:nccl.nvls_cuda_failure", .category = "nccl_bug", .weight = 0.3},
    {.of = "row:nccl.nvls_cuda_failure", .category = "version_mismatch", .weight = 0.15},
    {.of = "row:nccl.nvls_bind_failed", .category = "nccl_bug", .weight = 0.3},
    {.of = "row:nccl.nvls_bind_failed", .category = "version_mismatch", .weight = 0.15},
    {.of = "row:cuda.system_not_ready", .category = "version_mismatch", .weight = 0.2},
    {.of = "row:cuda.system_not_ready", .category = "nccl_bug", .weight = 0.1},
    // Registration or QP creation out of memory: the locked-memory limit, GPUDirect for GPU
    // buffers, or the HCA's own resources.
    {.of = "rule:memlock.verbs_enomem", .category = "gdr_peermem", .weight = 0.3},
    {.of = "rule:memlock.verbs_enomem", .category = "qp_or_resource_limit", .weight = 0.3},
    {.of = "rule:memlock.reg_mr_failed", .category = "gdr_peermem", .weight = 0.3},
    {.of = "rule:memlock.reg_mr_failed", .category = "qp_or_resource_limit", .weight = 0.2},
    {.of = "rule:gdr_peermem.reg_mr_failed", .category = "memlock", .weight = 0.3},
    {.of = "rule:qp_or_resource_limit.create_qp_failed", .category = "memlock", .weight = 0.35},
    {.of = "row:errno.enomem", .category = "qp_or_resource_limit", .weight = 0.2},
    {.of = "row:errno.enomem", .category = "gdr_peermem", .weight = 0.2},
    {.of = "row:errno.efault", .category = "memlock", .weight = 0.15},
    // Refused, unreachable, timed out: a filter, the wrong interface, or the peer is gone.
    {.of = "rule:firewall_or_port.refused", .category = "socket_ifname_wrong", .weight = 0.3},
    {.of = "rule:firewall_or_port.refused", .category = "oom_or_crash_other_rank", .weight = 0.2},
    // NCCL's own refused connect (socket.cc "Connect to %s failed : %s"), the row by itself: the
    // same three causes -- a filter, the wrong interface or address, a peer that is gone.
    {.of = "row:nccl.socket_connect_refused", .category = "socket_ifname_wrong", .weight = 0.3},
    {.of = "row:nccl.socket_connect_refused", .category = "oom_or_crash_other_rank", .weight = 0.2},
    {.of = "rule:firewall_or_port.store_connect_timeout",
     .category = "socket_ifname_wrong",
     .weight = 0.25},
    {.of = "row:errno.econnrefused", .category = "socket_ifname_wrong", .weight = 0.3},
    {.of = "row:errno.econnrefused", .category = "oom_or_crash_other_rank", .weight = 0.2},
    {.of = "row:errno.ehostunreach", .category = "socket_ifname_wrong", .weight = 0.35},
    {.of = "row:errno.etimedout", .category = "socket_ifname_wrong", .weight = 0.3},
    {.of = "row:errno.econnreset", .category = "ib_port_down_or_link_flap", .weight = 0.1},
    // A rank waits in the store: late, dead, or unable to reach it.
    {.of = "rule:straggler_or_slow_rank.store_wait_timeout",
     .category = "oom_or_crash_other_rank",
     .weight = 0.25},
    {.of = "rule:straggler_or_slow_rank.store_wait_timeout",
     .category = "firewall_or_port",
     .weight = 0.15},
    {.of = "rule:straggler_or_slow_rank.all_but_one_time_out",
     .category = "oom_or_crash_other_rank",
     .weight = 0.25},
    {.of = "rule:straggler_or_slow_rank.all_but_one_time_out",
     .category = "desync_collective_mismatch",
     .weight = 0.2},
    // Retry exceeded with routable GIDs: the fabric, else the port or the MTU.
    {.of = "rule:retry_exceeded_network.retry_with_routable_gid",
     .category = "ib_port_down_or_link_flap",
     .weight = 0.25},
    {.of = "rule:retry_exceeded_network.retry_with_routable_gid",
     .category = "mtu_mismatch",
     .weight = 0.2},
    // Retry exceeded (NCCL's IB status 12, UCX's transport retry count and endpoint timeouts,
    // openib's status number 12) by itself: the peer stopped answering at the transport level;
    // NCCL's and UCX's own texts for it name a link down or flapping, a wrong RoCE GID index and
    // the path MTU. The rule above narrows it when the QP lines show routable GIDs.
    // A link-local GID is NCCL's default on InfiniBand (the fe80 subnet prefix): with retry
    // exceeded it decides only on RoCE, so the fabric stays open.
    {.of = "rule:gid_index.retry_with_link_local_gid",
     .category = "retry_exceeded_network",
     .weight = 0.3},
    // An access error: GPUDirect first, a registration the memlock limit cut short.
    {.of = "rule:gdr_peermem.ib_access_error", .category = "memlock", .weight = 0.3},
    {.of = "row:nccl.ib_status_retry_exceeded", .category = "gid_index", .weight = 0.25},
    {.of = "row:nccl.ib_status_retry_exceeded",
     .category = "ib_port_down_or_link_flap",
     .weight = 0.2},
    {.of = "row:nccl.ib_status_retry_exceeded", .category = "mtu_mismatch", .weight = 0.15},
    {.of = "row:ucx.retry_exceeded", .category = "gid_index", .weight = 0.25},
    {.of = "row:ucx.retry_exceeded", .category = "ib_port_down_or_link_flap", .weight = 0.2},
    {.of = "row:ucx.retry_exceeded", .category = "mtu_mismatch", .weight = 0.15},
    {.of = "row:ucx.endpoint_timeout", .category = "gid_index", .weight = 0.25},
    {.of = "row:ucx.endpoint_timeout", .category = "ib_port_down_or_link_flap", .weight = 0.2},
    {.of = "row:ucx.ud_unhandled_timeout", .category = "gid_index", .weight = 0.25},
    {.of = "row:openmpi.openib_poll_retry_exceeded", .category = "gid_index", .weight = 0.2},
    {.of = "row:openmpi.openib_poll_retry_exceeded",
     .category = "ib_port_down_or_link_flap",
     .weight = 0.2},
    {.of = "row:mvapich2.cq_poll_retry_exceeded", .category = "gid_index", .weight = 0.2},
    {.of = "row:mvapich2.cq_poll_retry_exceeded",
     .category = "ib_port_down_or_link_flap",
     .weight = 0.2},
    // modify_qp failing on RoCE: the GID index, else the port or MTU.
    {.of = "rule:gid_index.modify_qp_on_roce",
     .category = "ib_port_down_or_link_flap",
     .weight = 0.15},
    // Invalid device ordinal: two ranks on one GPU count, else a lost GPU.
    {.of = "rule:duplicate_gpu.invalid_device_ordinal",
     .category = "gpu_xid_or_driver",
     .weight = 0.25},
    // A rank died: what killed it (the GPU, a full /dev/shm) stays open.
    {.of = "rule:oom_or_crash_other_rank.rank_died",
     .category = "gpu_xid_or_driver",
     .weight = 0.15},
    {.of = "rule:oom_or_crash_other_rank.rank_died",
     .category = "straggler_or_slow_rank",
     .weight = 0.1},
    // A bootstrap message of the wrong size: versions, else a stranger on the port.
    {.of = "rule:version_mismatch.bootstrap_mismatch",
     .category = "firewall_or_port",
     .weight = 0.15},
    // Different SeqNums at the timeout: a desync, else one rank far behind.
    {.of = "rule:desync_collective_mismatch.timeouts_at_different_seqs",
     .category = "straggler_or_slow_rank",
     .weight = 0.2},
    // Peer access unsupported: the PCIe path (ACS/IOMMU), else the GPU or driver.
    {.of = "rule:acs_iommu_p2p.peer_access_unsupported",
     .category = "gpu_xid_or_driver",
     .weight = 0.2},
};

// An alternative's pseudo-observation weighs this much of its table weight: 0.3 gave the
// lowest grouped-CV log loss on the train split (1.079, against 1.098 without alternatives and
// 1.112 at full weight), and a better top-3 (0.860 against 0.847).
constexpr double kAlternativeScale = 0.3;

// Appends each alternative as a pseudo-observation of its own: the features of the example
// (or of each row of the symptom category) it names, labelled with its category.
void AddAlternatives(std::vector<PriorExample>* out) {
  std::vector<PriorExample> alt;
  for (const Alternative& a : kAlternatives) {
    const double weight = a.weight * kAlternativeScale;
    // A row's own features, whether its category is a cause (it has an example above) or a
    // symptom (it has none).
    auto of_row = [&](const Signature& s) {
      alt.push_back({.id = "row:" + std::string(s.id),
                     .category = std::string(a.category),
                     .features = RowAloneFeatures(s),
                     .weight = weight});
    };
    constexpr std::string_view kSymptom = "symptom:", kRow = "row:";
    if (a.of.starts_with(kSymptom) || a.of.starts_with(kRow)) {
      const bool symptom = a.of.starts_with(kSymptom);
      const std::string_view name = a.of.substr(symptom ? kSymptom.size() : kRow.size());
      for (const Signature& s : Catalog()) {
        if (symptom ? s.kind != EvidenceKind::kFact && s.category == name : s.id == name) {
          of_row(s);
        }
      }
      continue;
    }
    for (const PriorExample& e : *out) {
      if (e.id != a.of) continue;
      PriorExample copy = e;
      copy.category = std::string(a.category);
      copy.weight = weight;
      alt.push_back(std::move(copy));
    }
  }
  for (PriorExample& e : alt) out->push_back(std::move(e));
}

}  // namespace

std::vector<PriorExample> PriorExamples() {
  std::vector<PriorExample> out;
  for (const Rule& r : kRules) {
    PriorExample e{.id = "rule:" + std::string(r.id),
                   .category = std::string(r.category),
                   .features = {},
                   .weight = -1};
    e.features.emplace_back(e.id, 1);
    for (std::string_view w : r.when) {
      if (!w.empty()) e.features.emplace_back("cond:" + std::string(w), 1);
    }
    e.features.emplace_back("engine:" + std::string(r.category), r.confidence);
    out.push_back(std::move(e));
  }
  for (const Signature& s : Catalog()) {
    if (s.kind == EvidenceKind::kFact || FindCategory(s.category) == nullptr) continue;
    out.push_back({.id = "row:" + std::string(s.id),
                   .category = std::string(s.category),
                   .features = RowAloneFeatures(s),
                   .weight = -1});
  }
  // Other sources' claim codes: the corpus holds logs only, so without these a preflight finding
  // or a Flight Recorder verdict would weigh nothing.
  const std::pair<const char*, std::span<const FactCategory>> sources[] = {
      {"preflight", PreflightCategories()},
      {"warmup", WarmupCategories()},
      {"ib_counters", CounterCategories()},
      {"flight_recorder", FlightRecorderCategories()},
      {"stacks", StacksCategories()}};
  for (const auto& [source, table] : sources) {
    for (const FactCategory& f : table) {
      PriorExample e{.id = std::string(source) + ":" + std::string(f.key),
                     .category = std::string(f.category),
                     .features = {},
                     .weight = -1};
      e.features.emplace_back(e.id, f.confidence);
      e.features.emplace_back("claim:" + std::string(f.category), f.confidence);
      e.features.emplace_back("engine:" + std::string(f.category), f.confidence);
      out.push_back(std::move(e));
    }
  }
  AddAlternatives(&out);
  return out;
}

std::span<const Alternative> Alternatives() { return kAlternatives; }

}  // namespace sl::diagnose
