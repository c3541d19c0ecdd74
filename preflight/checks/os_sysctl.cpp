// os.sysctl: kernel socket limits that NCCL's socket transport, its bootstrap and the c10d
// TCPStore run into at scale: net.core.{r,w}mem_max cap SO_RCVBUF/SO_SNDBUF, the third field of
// net.ipv4.tcp_{r,w}mem caps TCP autotuning, and ip_local_port_range bounds how many outgoing
// connections a node can open (every rank connects to many peers).
#include <string>

#include "common/strings.h"
#include "preflight/check.h"

namespace sl::preflight {
namespace {

// The conditions this check reports, listed by `safe-launch preflight --list --codes`.
constexpr FindingCode kCodes[] = {
    {"os.sysctl/fit", Outcome::kPass, Outcome::kPass, "all socket sysctls fit", ""},
    {"os.sysctl/not_gathered", Outcome::kError, Outcome::kError, "the facts were not gathered",
     kFixReadSource},
    {"os.sysctl/unreadable", Outcome::kError, Outcome::kError, "the source file could not be read",
     kFixReadSource},
    {"os.sysctl/malformed", Outcome::kError, Outcome::kError,
     "the value is not what the kernel writes", kFixReadSource},
    {"os.sysctl/mem_max_below_min", Outcome::kWarn, Outcome::kWarn,
     "net.core.{r,w}mem_max is below the minimum", kFixInFinding},
    {"os.sysctl/tcp_mem_max_below_min", Outcome::kWarn, Outcome::kWarn,
     "the maximum of net.ipv4.tcp_{r,w}mem is below the minimum", kFixInFinding},
    {"os.sysctl/port_range_invalid", Outcome::kFail, Outcome::kFail,
     "ip_local_port_range is not a range", kFixInFinding},
    {"os.sysctl/port_range_small", Outcome::kWarn, Outcome::kWarn,
     "ip_local_port_range has too few ports", kFixInFinding},
};

constexpr const char* kId = "os.sysctl";

std::string Persist(const std::string& setting) {
  return "`sysctl -w " + setting + "` now, and persist it in /etc/sysctl.d/90-nccl.conf (`" +
         setting + "`, then `sysctl --system`)";
}

// Decides one sysctl's values against the thresholds; `f` stays a pass when they fit.
void JudgeSysctl(const std::string& name, const std::vector<std::uint64_t>& v,
                 const std::string& raw, const Thresholds& th, Finding* out) {
  Finding& f = *out;
  if (name == "net.core.rmem_max" || name == "net.core.wmem_max") {
    std::uint64_t min = name == "net.core.rmem_max" ? th.min_rmem_max : th.min_wmem_max;
    if (v[0] < min) {
      f.outcome = Outcome::kWarn;
      f.code = "os.sysctl/mem_max_below_min";
      f.message = name + " is " + std::to_string(v[0]) + " (" + HumanBytes(v[0]) + "), below " +
                  std::to_string(min) +
                  ": socket buffers are capped, NCCL's socket transport and bootstrap slow "
                  "down";
      f.next_step = Persist(name + "=" + std::to_string(std::max<std::uint64_t>(min, 134217728)));
    }
  } else if (name == "net.ipv4.tcp_rmem" || name == "net.ipv4.tcp_wmem") {
    std::uint64_t min = name == "net.ipv4.tcp_rmem" ? th.min_tcp_rmem_max : th.min_tcp_wmem_max;
    if (v[2] < min) {
      f.outcome = Outcome::kWarn;
      f.code = "os.sysctl/tcp_mem_max_below_min";
      f.message = name + " maximum (third field) is " + std::to_string(v[2]) + " (" +
                  HumanBytes(v[2]) + "), below " + std::to_string(min) +
                  ": TCP autotuning cannot grow windows for inter-node socket traffic";
      f.next_step = Persist(name + "=\"" + std::to_string(v[0]) + " " + std::to_string(v[1]) + " " +
                            std::to_string(std::max<std::uint64_t>(min, 134217728)) + "\"");
    }
  } else {  // ip_local_port_range
    if (v[0] >= v[1] || v[1] > 65535) {
      f.outcome = Outcome::kFail;
      f.code = "os.sysctl/port_range_invalid";
      f.message = "net.ipv4.ip_local_port_range \"" + raw +
                  "\" is not a range (low must be below high, high at most 65535): outgoing "
                  "connections (NCCL bootstrap, TCPStore) cannot get a port";
      f.next_step = Persist("net.ipv4.ip_local_port_range=\"32768 60999\"");
    } else if (v[1] - v[0] + 1 < static_cast<std::uint64_t>(th.min_local_ports)) {
      f.outcome = Outcome::kWarn;
      f.code = "os.sysctl/port_range_small";
      f.message = "net.ipv4.ip_local_port_range " + std::to_string(v[0]) + "-" +
                  std::to_string(v[1]) + " has only " + std::to_string(v[1] - v[0] + 1) +
                  " ports (want >= " + std::to_string(th.min_local_ports) +
                  "): many ranks x peers can run out of ephemeral ports";
      f.next_step = Persist("net.ipv4.ip_local_port_range=\"32768 60999\"");
    }
  }
}

std::vector<Finding> CheckOsSysctl(const CheckContext& ctx) {
  std::vector<Finding> out;
  Finding pass;
  pass.check_id = kId;
  pass.entity = "node";
  pass.outcome = Outcome::kPass;
  pass.code = "os.sysctl/fit";
  const Thresholds& th = ctx.thresholds;
  if (ctx.facts.host.sysctls.empty()) {  // nothing gathered is not "all sysctls fit"
    return {Coded(MakeFinding(kId, "node", Outcome::kError, "the socket sysctls were not read",
                              "gather the node facts (GatherNodeFacts) before running the checks"),
                  "os.sysctl/not_gathered")};
  }
  for (const SysctlFact& s : ctx.facts.host.sysctls) {
    Finding f;
    f.check_id = kId;
    f.entity = s.name;
    const auto& values = s.values;
    if (values.unreadable) {
      f.outcome = Outcome::kError;
      f.code = "os.sysctl/unreadable";
      f.message = "cannot read " + s.name + ": " + values.error.Describe();
      f.next_step = values.error.fix.empty() ? "check that /proc/sys is mounted" : values.error.fix;
      out.push_back(std::move(f));
      continue;
    }
    const std::string& raw = values.raw;
    f.With(values.path, raw);
    if (!values.ok()) {
      f.outcome = Outcome::kError;
      f.code = "os.sysctl/malformed";
      f.message = "malformed " + s.name + " in " + values.error.where + ": " + values.error.message;
      f.next_step = "check the file is the kernel's sysctl (procfs on /proc)";
      out.push_back(std::move(f));
      continue;
    }
    JudgeSysctl(s.name, *values, raw, th, &f);
    if (f.outcome == Outcome::kPass) {
      pass.With(values.path, raw);
    } else {
      out.push_back(std::move(f));
    }
  }
  if (!pass.evidence.empty()) {
    std::string names;
    for (const auto& e : pass.evidence) {
      std::string n = e.source.substr(std::string("/proc/sys/").size());
      for (char& c : n) {
        if (c == '/') c = '.';
      }
      names += (names.empty() ? "" : ", ") + n + " " + e.value;
    }
    pass.message = (out.empty() ? "socket sysctls fit: " : "other socket sysctls fit: ") + names;
    for (char& c : pass.message) {
      if (c == '\t') c = ' ';
    }
    out.insert(out.begin(), std::move(pass));
  }
  return out;
}

}  // namespace

extern const CheckInfo kOsSysctlCheck;  // listed in preflight/registry.cpp
constexpr CheckInfo kOsSysctlCheck = {"os.sysctl", "socket buffer sysctls and local port range",
                                      CheckOsSysctl, kCodes};

}  // namespace sl::preflight
