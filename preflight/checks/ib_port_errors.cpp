// ib.port.errors: non-zero error counters of a port (ports/N/counters, ports/N/hw_counters).
// They count since the driver loaded, so a value alone does not say "now"; it says "this link or
// this fabric has had trouble", which is what to look at first when a job on this node hangs.
#include <algorithm>
#include <string_view>

#include "common/parse/ib_sysfs.h"
#include "preflight/check.h"
#include "preflight/ib_ports.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"ib.port.errors/no_ports", Outcome::kSkip, Outcome::kSkip, "no InfiniBand/RoCE ports", ""},
    {"ib.port.errors/counter_unreadable", Outcome::kError, Outcome::kError,
     "an error counter could not be read", kFixReadSource},
    {"ib.port.errors/no_counters", Outcome::kSkip, Outcome::kSkip,
     "the port exposes no error counters", ""},
    {"ib.port.errors/all_zero", Outcome::kPass, Outcome::kPass, "all error counters are zero", ""},
    {"ib.port.errors/nonzero", Outcome::kWarn, Outcome::kWarn,
     "error counters are non-zero on a port NCCL uses", kFixInFinding},
    {"ib.port.errors/nonzero_not_used", Outcome::kSkip, Outcome::kSkip,
     "error counters are non-zero on a port NCCL will not use", ""},
};

constexpr const char* kId = "ib.port.errors";

// Which counters mean errors, and of which kind, is sysfs knowledge shared with the gatherer
// (common/parse/ib_sysfs.h), so only these files are read.
using Kind = IbCounterKind;
using Counter = IbErrorCounter;
constexpr const auto& kPortCounters = kIbPortErrorCounters;
constexpr const auto& kHwCounters = kIbHwErrorCounters;

struct PortCounts {
  std::vector<std::pair<std::string, std::uint64_t>> nonzero;  // node path -> value
  bool physical = false, discard = false, transport = false;
  int read = 0;
  std::vector<std::string> errors;  // host-path messages
  std::vector<std::string> error_paths;
};

void ReadCounters(const NodeFacts& facts, const IbPort& p, std::string_view dir,
                  const Counter* list, std::size_t n, PortCounts* out) {
  auto files = facts.ib_counters.find(IbPortPath(p, dir));
  if (files == facts.ib_counters.end()) return;  // no such directory (rxe, older kernels)
  // "." is the directory itself, there but not listable: every counter in it is unknown.
  if (auto dir_fact = files->second.find("."); dir_fact != files->second.end()) {
    out->errors.push_back(dir_fact->second.error.where + ": " + dir_fact->second.error.message);
    out->error_paths.push_back(dir_fact->second.path);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Counter& c = list[i];
    auto file = files->second.find(std::string(c.name));
    if (file == files->second.end()) continue;
    const Fact<std::uint64_t>& v = file->second;
    const std::string& path = v.path;
    if (!v.ok()) {
      out->errors.push_back(v.error.where + ": " + v.error.message);
      out->error_paths.push_back(path);
      continue;
    }
    ++out->read;
    if (*v == 0) continue;
    out->nonzero.emplace_back(path, *v);
    out->physical = out->physical || c.kind == Kind::kPhysical;
    out->discard = out->discard || c.kind == Kind::kDiscard;
    out->transport = out->transport || c.kind == Kind::kTransport;
  }
}

std::string Fix(const IbPort& p, const PortCounts& c) {
  std::string fix;
  auto add = [&](const std::string& s) { fix += (fix.empty() ? "" : "; ") + s; };
  if (c.physical) {
    add("link-level errors: check the cable/transceiver with `mlxlink -d " + p.device +
        " -m -e` (BER, FEC), reseat or replace it, and look at the switch side of the link");
  }
  if (c.discard) {
    add("discards/overruns: the link dropped or congestion backed up; check the switch port "
        "and, on RoCE, PFC/ECN settings (`mlnx_qos -i " +
        (p.netdev.empty() ? std::string("<netdev>") : p.netdev) + "`)");
  }
  if (c.transport) {
    add(std::string("retransmissions/timeouts: ") +
        (p.IsRoce() ? "RoCE needs a lossless or ECN-marked fabric: check PFC/ECN on NIC and "
                      "switches"
                    : "check the fabric with `ibdiagnet` and the peers' ports"));
  }
  add("counts are since the driver loaded: run preflight again after a job; if they rise, drain "
      "the node (`watch -d grep . " +
      IbPortPath(p, "counters/*") + "`)");
  return fix;
}

std::vector<Finding> CheckIbPortErrors(const CheckContext& ctx) {
  std::vector<Finding> out;
  if (ctx.facts.ib_ports.empty()) {
    out.push_back(Coded(MakeFinding(kId, "node", Outcome::kSkip,
                                    "no InfiniBand/RoCE ports: no error counters to read"),
                        "ib.port.errors/no_ports"));
    return out;
  }
  nccl::PortSelection sel(ctx.env);
  for (const auto& p : ctx.facts.ib_ports) {
    PortCounts c;
    ReadCounters(ctx.facts, p, "counters", kPortCounters, std::size(kPortCounters), &c);
    ReadCounters(ctx.facts, p, "hw_counters", kHwCounters, std::size(kHwCounters), &c);
    Finding f;
    f.check_id = kId;
    f.entity = p.Name();
    if (!c.errors.empty()) {
      f.outcome = Outcome::kError;
      f.code = "ib.port.errors/counter_unreadable";
      std::string what;
      for (std::size_t i = 0; i < c.errors.size(); ++i) {
        what += (i ? "; " : "") + c.errors[i];
        f.With(c.error_paths[i], "unreadable: " + c.errors[i]);
      }
      f.message = "cannot read error counters: " + what;
      f.next_step = "look at the named counter file(s); `perfquery -x` (IB) or `ethtool -S " +
                    (p.netdev.empty() ? std::string("<netdev>") : p.netdev) +
                    "` (RoCE) read the same counters another way";
      out.push_back(std::move(f));
      continue;
    }
    if (c.read == 0) {
      f.outcome = Outcome::kSkip;
      f.code = "ib.port.errors/no_counters";
      f.message = "the port exposes no error counters (no counters/ or hw_counters/)";
      out.push_back(std::move(f));
      continue;
    }
    if (c.nonzero.empty()) {
      f.outcome = Outcome::kPass;
      f.code = "ib.port.errors/all_zero";
      f.message = "all " + std::to_string(c.read) + " error counters are 0";
      out.push_back(std::move(f));
      continue;
    }
    std::string list;
    for (const auto& [path, v] : c.nonzero) {
      f.With(path, std::to_string(v));
      list +=
          (list.empty() ? "" : ", ") + path.substr(path.rfind('/') + 1) + "=" + std::to_string(v);
    }
    if (sel.Uses(p)) {
      f.outcome = Outcome::kWarn;
      f.code = "ib.port.errors/nonzero";
      f.message = "error counts since the driver loaded: " + list;
      f.next_step = Fix(p, c);
    } else {
      f.outcome = Outcome::kSkip;
      f.code = "ib.port.errors/nonzero_not_used";
      f.message =
          "error counts (" + list + "), but NCCL will not use this port (" + sel.WhyNot(p) + ")";
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

extern const CheckInfo kIbPortErrorsCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kIbPortErrorsCheck = {"ib.port.errors", "port and hw error counters are zero",
                                          CheckIbPortErrors, kCodes};

}  // namespace sl::preflight
