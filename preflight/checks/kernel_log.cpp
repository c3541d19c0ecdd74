// kernel.log: the kernel's own record of faults that make NCCL hang or crawl, read from
// /dev/kmsg (since boot, or since --since): mlx5 firmware command failures and resets, memory
// registration failures, IB port / netdev link flaps, NVIDIA Xid events (known-fatal ones
// flagged), GPUs fallen off the bus and PCIe AER errors. The live /dev/kmsg is read record by
// record without blocking (FileReader); a kernel.dmesg_restrict=1 node refuses non-root readers,
// which is an `error` with the fix, never a pass.
#include <cstdio>
#include <map>
#include <tuple>

#include "common/parse/kmsg.h"
#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"kernel.log/unreadable", Outcome::kError, Outcome::kError, "the source file could not be read",
     kFixReadSource},
    {"kernel.log/bad_lines", Outcome::kError, Outcome::kError,
     "lines of the kernel log are not kmsg records", kFixReadSource},
    {"kernel.log/truncated", Outcome::kError, Outcome::kError,
     "the kernel log is larger than safe-launch reads: its newest records were not checked",
     "read the newest kernel messages yourself (dmesg, journalctl -k); see the finding's "
     "next_step"},
    {"kernel.log/mlx5_cmd_failure", Outcome::kWarn, Outcome::kWarn,
     "mlx5 firmware command failures", kFixInFinding},
    {"kernel.log/mlx5_mr_failure", Outcome::kWarn, Outcome::kWarn,
     "RDMA memory registration failures", kFixInFinding},
    {"kernel.log/link_flap", Outcome::kWarn, Outcome::kWarn, "a link went down (flapped)",
     kFixInFinding},
    {"kernel.log/xid", Outcome::kFail, Outcome::kWarn,
     "an NVIDIA Xid (fail when in the fatal list of the Xid table)", kFixInFinding},
    {"kernel.log/gpu_fell_off_bus", Outcome::kFail, Outcome::kFail, "a GPU fell off the bus",
     kFixInFinding},
    {"kernel.log/aer_corrected", Outcome::kWarn, Outcome::kWarn, "PCIe AER corrected errors",
     kFixInFinding},
    {"kernel.log/aer_uncorrected", Outcome::kFail, Outcome::kWarn,
     "PCIe AER uncorrected errors (fail when fatal)", kFixInFinding},
    {"kernel.log/clean", Outcome::kPass, Outcome::kPass, "no fault events in the kernel log", ""},
};

constexpr const char* kId = "kernel.log";
constexpr const char* kKmsg = "/dev/kmsg";

struct Group {
  KernelEventKind kind = KernelEventKind::kMlx5CommandFailure;
  std::string entity;
  int xid = 0;
  bool fatal = false;
  std::uint64_t count = 0;
  std::uint64_t suppressed = 0;  // ratelimited lines attributed to this group
  int downs = 0, ups = 0;
  bool last_down = false;
  std::vector<const KmsgRecord*> samples;  // first and last records
  std::string first_what;
};

void AddSample(Group& g, const KmsgRecord* r) {
  if (g.samples.size() < 2) {
    g.samples.push_back(r);
  } else {
    g.samples[1] = r;
  }
}

std::string Seconds(std::int64_t usec) {
  char b[48];
  std::snprintf(b, sizeof b, "%lld.%06lld s", static_cast<long long>(usec / 1000000),
                static_cast<long long>(usec % 1000000));
  return b;
}

// "gpu3 (0000:18:00.0)" when the PCI address is one of this node's GPUs.
std::string GpuEntity(const NodeFacts& facts, const std::string& bdf) {
  for (std::size_t i = 0; i < facts.gpus.size(); ++i) {
    if (facts.gpus[i].pci_address == bdf) return "gpu" + std::to_string(i);
  }
  return bdf.empty() ? "gpu" : bdf;
}

// The kernel log could not be read: an error, with the dmesg_restrict fix when it was refused.
Finding ReadErrorFinding(const Fact<KmsgParse>& kmsg, const HostEvidence& h) {
  const Error& error = kmsg.error;
  Finding f;
  f.check_id = kId;
  f.entity = "node";
  f.outcome = Outcome::kError;
  f.code = "kernel.log/unreadable";
  f.message = "cannot read the kernel log: " + error.Describe();
  const bool denied = error.message.find("ermission") != std::string::npos ||
                      error.message.find("not permitted") != std::string::npos;
  if (denied) {
    std::string restrict_value;
    if (const auto& r = h.dmesg_restrict; r.ok()) {
      restrict_value = *r;
      f.With(r.path, restrict_value);
    }
    f.next_step = "kernel.dmesg_restrict" +
                  (restrict_value.empty() ? std::string() : "=" + restrict_value) +
                  " keeps the log from non-root users: run preflight as root (or with "
                  "CAP_SYSLOG), or `sysctl -w kernel.dmesg_restrict=0`";
  } else {
    f.next_step = error.fix.empty() ? "check that /dev/kmsg exists (devtmpfs on /dev)" : error.fix;
  }
  return f;
}

// Lines that are not kmsg records: an error naming the first, the rest is still checked.
void AddBadLines(const CheckContext& ctx, const Fact<KmsgParse>& kmsg, std::vector<Finding>* out) {
  const KmsgParse& parsed = *kmsg;
  if (!parsed.bad_lines.empty()) {
    Finding f;
    f.check_id = kId;
    f.entity = "node";
    f.outcome = Outcome::kError;
    f.code = "kernel.log/bad_lines";
    f.message = std::to_string(parsed.bad_lines.size()) + " line(s) of " +
                ctx.facts.HostPath(kKmsg) + " are not kmsg records (first: line " +
                std::to_string(parsed.bad_lines.front()) + "); the other " +
                std::to_string(parsed.records.size()) + " records were checked";
    f.With(kmsg.path, kmsg.raw);
    f.next_step = "the file must hold /dev/kmsg records (\"prio,seq,usec,flags;message\")";
    out->push_back(std::move(f));
  }
}

// /dev/kmsg is read from its oldest record on, up to a limit: past it, the newest records (the
// ones that matter most before a job) were not looked at. Say so, with how much was read.
void AddTruncation(const CheckContext& ctx, const Fact<KmsgParse>& kmsg,
                   std::vector<Finding>* out) {
  const HostEvidence& h = ctx.facts.host;
  if (!h.kmsg_truncated) return;
  const std::string upto = kmsg->records.empty()
                               ? std::string()
                               : " (up to " + Seconds(kmsg->records.back().usec) + " after boot)";
  Finding f;
  f.check_id = kId;
  f.entity = "node";
  f.outcome = Outcome::kError;
  f.code = "kernel.log/truncated";
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(h.kmsg_bytes) / (1 << 20));
  f.message = std::string("the kernel log holds more than safe-launch reads (") + mib +
              " read): only its oldest " + std::to_string(kmsg->records.size()) + " records" +
              upto + " were checked, later records were not read";
  f.With(kmsg.path, "read " + std::to_string(h.kmsg_bytes) + " bytes, " +
                        std::to_string(kmsg->records.size()) + " records; the log went on");
  f.next_step =
      "read the newest kernel messages yourself (`dmesg -T | tail -n 2000`, `journalctl -k -n "
      "2000`); a log this large is usually one message flooding it: find it with `dmesg | cut "
      "-c16- | sort | uniq -c | sort -rn | head` and fix its source";
  out->push_back(std::move(f));
}

// Events grouped by what happened where, in log order; `checked` counts the records looked at.
std::vector<Group> GroupEvents(const CheckContext& ctx, const KmsgParse& parsed,
                               std::size_t* checked_out) {
  // Group events by what happened where, in log order.
  std::vector<Group> groups;
  std::map<std::tuple<int, std::string, int>, std::size_t> index;
  std::uint64_t pending_suppressed = 0;
  std::size_t& checked = *checked_out;
  checked = 0;
  for (const auto& r : parsed.records) {
    if (ctx.kernel_log_since_us >= 0 && r.usec < ctx.kernel_log_since_us) continue;
    ++checked;
    auto ev = ClassifyKernelRecord(r);
    if (!ev) continue;
    if (ev->kind == KernelEventKind::kSuppressed) {
      // The ratelimit reports lines dropped since the last printed one of that function.
      if (ev->suppressed_func.find("mlx5") != std::string::npos) pending_suppressed += ev->count;
      continue;
    }
    KernelEventKind kind = ev->kind;
    std::string entity = ev->entity;
    if (kind == KernelEventKind::kXid || kind == KernelEventKind::kGpuFellOffBus) {
      entity = GpuEntity(ctx.facts, entity);
    }
    // Link up/down of one port form one group.
    int kind_key = kind == KernelEventKind::kLinkUp ? static_cast<int>(KernelEventKind::kLinkDown)
                                                    : static_cast<int>(kind);
    auto key = std::make_tuple(kind_key, entity, ev->xid);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      Group g;
      g.kind = kind == KernelEventKind::kLinkUp ? KernelEventKind::kLinkDown : kind;
      g.entity = entity;
      g.xid = ev->xid;
      g.first_what = ev->what;
      groups.push_back(std::move(g));
    }
    Group& g = groups[it->second];
    g.count++;
    g.fatal |= ev->fatal;
    if (kind == KernelEventKind::kLinkDown) {
      g.downs++;
      g.last_down = true;
    } else if (kind == KernelEventKind::kLinkUp) {
      g.ups++;
      g.last_down = false;
    }
    if (kind == KernelEventKind::kMlx5CommandFailure && pending_suppressed) {
      g.suppressed += pending_suppressed;
      pending_suppressed = 0;
    }
    AddSample(g, &r);
  }
  // Lines dropped after the last mlx5 failure belong to the last mlx5 group.
  if (pending_suppressed) {
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
      if (it->kind == KernelEventKind::kMlx5CommandFailure) {
        it->suppressed += pending_suppressed;
        break;
      }
    }
  }
  return groups;
}

std::string Times(const Group& g) {
  return g.count == 1 ? "once" : std::to_string(g.count) + " times";
}

void DescribeMlx5Command(const Group& g, const std::string& since, Finding& f) {
  f.outcome = Outcome::kWarn;
  f.code = "kernel.log/mlx5_cmd_failure";
  f.message = "mlx5 firmware command failures on " + g.entity + " " + since + ": " +
              std::to_string(g.count) + " logged" +
              (g.suppressed ? " + " + std::to_string(g.suppressed) + " ratelimited" : "") +
              ", e.g. " + g.first_what;
  f.next_step = g.first_what.find("CREATE_MKEY") != std::string::npos
                    ? "the HCA ran out of memory keys (too many/too large registrations, status "
                      "\"limits exceeded\"): check memlock, reduce registered memory (fewer "
                      "NCCL_NCHANNELS/buffers, UCX/NCCL registration caches), update firmware; "
                      "reboot or `mlxfwreset` to recover"
                    : "check `dmesg | grep mlx5_core` around these lines and the firmware "
                      "(`mlxfwmanager`); a SW reset or command timeout needs the HCA reset "
                      "(`mlxfwreset -d <dev> reset`) or a reboot before the node runs jobs";
}

void DescribeMlx5Mr(const Group& g, const std::string& since, Finding& f) {
  const std::string times = Times(g);
  f.outcome = Outcome::kWarn;
  f.code = "kernel.log/mlx5_mr_failure";
  f.message = "RDMA memory registration failed on " + g.entity + " " + times + " " + since + ": " +
              g.first_what;
  f.next_step =
      "registration failures precede NCCL/UCX \"ibv_reg_mr failed\" errors: "
      "check memlock (os.memlock) and the HCA's memory-key limits";
}

void DescribeLinkFlap(const Group& g, const std::string& since, Finding& f) {
  f.outcome = Outcome::kWarn;
  f.code = "kernel.log/link_flap";
  f.message = "link of " + g.entity + " went down " +
              (g.downs == 1 ? std::string("once") : std::to_string(g.downs) + " times") + " " +
              since + (g.last_down ? " and the log shows no recovery" : " (up again afterwards)") +
              ": a flapping link stalls NCCL collectives until they time out";
  f.next_step =
      "check cable/transceiver and the switch port (`mlxlink -d <dev> -m -c`, "
      "port counters link_downed/symbol_error), reseat or replace";
}

void DescribeXid(const Group& g, const std::string& since, Finding& f) {
  const std::string times = Times(g);
  f.entity = g.entity;
  f.outcome = g.fatal ? Outcome::kFail : Outcome::kWarn;
  f.code = "kernel.log/xid";
  f.message = "NVIDIA " + g.first_what + " on " + g.entity + " " + times + " " + since +
              (g.fatal ? ": a known-fatal Xid, the GPU needs a reset before it runs jobs"
                       : ": usually an application fault; repeated Xids point at the GPU");
  f.next_step = g.fatal ? "drain the node, run `nvidia-bug-report.sh`, reset the GPU "
                          "(`nvidia-smi -r`) or reboot; replace the GPU if it recurs"
                        : "check the job that ran at that time; if it repeats across "
                          "jobs, run `dcgmi diag -r 2` on this GPU";
}

void DescribeFellOffBus(const Group& g, const std::string& since, Finding& f) {
  f.outcome = Outcome::kFail;
  f.code = "kernel.log/gpu_fell_off_bus";
  f.message = "NVIDIA GPU " + g.entity + " fell off the bus " + since;
  f.next_step =
      "drain the node and reboot; check power, PCIe riser/cable and "
      "`lspci -vvv` link status; replace the GPU/baseboard if it recurs";
}

void DescribeAerCorrected(const Group& g, const std::string& since, Finding& f) {
  const std::string times = Times(g);
  f.outcome = Outcome::kWarn;
  f.code = "kernel.log/aer_corrected";
  f.message = "PCIe corrected errors on " + g.entity + " " + times + " " + since +
              ": the link retrains/replays, bandwidth to devices below it drops";
  f.next_step = "check `lspci -vvv -s " + g.entity +
                "` (LnkSta speed/width, error "
                "status); reseat the riser/cable; a steady rate means failing hardware";
}

void DescribeAerUncorrected(const Group& g, const std::string& since, Finding& f) {
  const std::string times = Times(g);
  f.outcome = g.fatal ? Outcome::kFail : Outcome::kWarn;
  f.code = "kernel.log/aer_uncorrected";
  f.message = std::string(g.fatal ? "fatal" : "non-fatal") + " uncorrected PCIe errors on " +
              g.entity + " " + times + " " + since;
  f.next_step = "drain the node; check the device and slot below " + g.entity +
                " (`lspci -vvv`), reseat or replace";
}

// The finding for one group; false for groups that report nothing.
bool Describe(const Group& g, const std::string& since, Finding* out) {
  switch (g.kind) {
    case KernelEventKind::kMlx5CommandFailure:
      DescribeMlx5Command(g, since, *out);
      return true;
    case KernelEventKind::kMlx5MrFailure:
      DescribeMlx5Mr(g, since, *out);
      return true;
    case KernelEventKind::kLinkDown:
      DescribeLinkFlap(g, since, *out);
      return true;
    case KernelEventKind::kXid:
      DescribeXid(g, since, *out);
      return true;
    case KernelEventKind::kGpuFellOffBus:
      DescribeFellOffBus(g, since, *out);
      return true;
    case KernelEventKind::kPcieAerCorrected:
      DescribeAerCorrected(g, since, *out);
      return true;
    case KernelEventKind::kPcieAerUncorrected:
      DescribeAerUncorrected(g, since, *out);
      return true;
    case KernelEventKind::kLinkUp:
    case KernelEventKind::kSuppressed:
      return false;
  }
  return false;
}

std::vector<Finding> CheckKernelLog(const CheckContext& ctx) {
  std::vector<Finding> out;
  const Fact<KmsgParse>& kmsg = ctx.facts.host.kmsg;
  if (!kmsg.ok()) return {ReadErrorFinding(kmsg, ctx.facts.host)};
  AddBadLines(ctx, kmsg, &out);
  AddTruncation(ctx, kmsg, &out);
  std::size_t checked = 0;
  std::vector<Group> groups = GroupEvents(ctx, *kmsg, &checked);
  // A GPU with an Xid 79 also logs "fallen off the bus": report it once, as the Xid.
  std::map<std::string, bool> xid79;
  for (const auto& g : groups) {
    if (g.kind == KernelEventKind::kXid && g.xid == 79) xid79[g.entity] = true;
  }
  const std::string since = ctx.kernel_log_since_us >= 0
                                ? "since " + Seconds(ctx.kernel_log_since_us) + " after boot"
                                : "since boot";
  for (const auto& g : groups) {
    if (g.kind == KernelEventKind::kGpuFellOffBus && xid79.count(g.entity)) continue;
    if (g.kind == KernelEventKind::kLinkDown && g.downs == 0) continue;  // only "up" records
    Finding f;
    f.check_id = kId;
    f.entity = g.entity;
    for (const KmsgRecord* r : g.samples) f.With(kKmsg, KmsgDmesgLine(*r));
    if (!Describe(g, since, &f)) continue;
    out.push_back(std::move(f));
  }
  bool any_event = false;
  for (const auto& f : out) any_event |= f.outcome != Outcome::kError;
  if (!any_event) {
    Finding f;
    f.check_id = kId;
    f.entity = "node";
    f.outcome = Outcome::kPass;
    f.code = "kernel.log/clean";
    f.message = "no mlx5 failures, link flaps, Xid or PCIe AER events in " +
                std::to_string(checked) + " kernel log records " + since;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

extern const CheckInfo kKernelLogCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kKernelLogCheck = {"kernel.log",
                                       "no mlx5/link-flap/Xid events in the kernel log",
                                       CheckKernelLog, kCodes, CheckWhen::kBoth};

}  // namespace sl::preflight
