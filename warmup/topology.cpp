#include "warmup/topology.h"

#include <algorithm>
#include <set>

#include "common/strings.h"

namespace sl::warmup {
namespace {

// A job of more hosts than this is a typo (a range like [1-1000000]), not a cluster.
constexpr std::size_t kMaxHosts = 65536;

// Expands the inside of one bracket group, "01-04,07", into its numbers as text.
Result<std::vector<std::string>> ExpandRanges(std::string_view ranges, std::string_view item) {
  std::vector<std::string> out;
  for (const auto& part : Split(ranges, ',', /*skip_empty=*/false)) {
    std::string_view p = Trim(part);
    auto bad = [&](const std::string& why) {
      return MakeError(
          "bad range '" + std::string(p) + "' in hostlist item '" + std::string(item) + "': " + why,
          "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
    };
    if (p.empty()) return bad("empty range");
    auto dash = p.find('-');
    std::string lo_text(p.substr(0, dash));
    std::string hi_text(dash == std::string_view::npos ? lo_text : std::string(p.substr(dash + 1)));
    for (const std::string& t : {lo_text, hi_text}) {
      if (t.empty() ||
          !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return bad("'" + t + "' is not a number");
      if (t.size() > 18) return bad("number too long");
    }
    std::uint64_t lo = std::stoull(lo_text), hi = std::stoull(hi_text);
    if (lo > hi) return bad("start is above end");
    if (hi - lo + 1 > kMaxHosts || out.size() + (hi - lo + 1) > kMaxHosts)
      return bad("more than " + std::to_string(kMaxHosts) + " hosts");
    // Slurm pads every number to the width of the range's first bound ("01-10" -> 01..10).
    std::size_t width = lo_text.size();
    for (std::uint64_t n = lo; n <= hi; ++n) {
      std::string s = std::to_string(n);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      out.push_back(std::move(s));
    }
  }
  return out;
}

// Expands one comma-free (at top level) item such as "a[1-2]-ib[3,5]".
Result<std::vector<std::string>> ExpandItem(std::string_view item) {
  std::vector<std::string> names{""};
  std::size_t i = 0;
  while (i < item.size()) {
    if (item[i] == '[') {
      auto close = item.find(']', i);
      if (close == std::string_view::npos)
        return MakeError("unclosed '[' in hostlist item '" + std::string(item) + "'",
                         "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
      auto numbers = ExpandRanges(item.substr(i + 1, close - i - 1), item);
      if (!numbers.ok()) return numbers.error();
      if (names.size() * numbers->size() > kMaxHosts)
        return MakeError("hostlist item '" + std::string(item) + "' expands to more than " +
                             std::to_string(kMaxHosts) + " hosts",
                         "SLURM_JOB_NODELIST");
      std::vector<std::string> next;
      for (const auto& prefix : names)
        for (const auto& n : *numbers) next.push_back(prefix + n);
      names = std::move(next);
      i = close + 1;
    } else if (item[i] == ']') {
      return MakeError("unmatched ']' in hostlist item '" + std::string(item) + "'",
                       "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
    } else {
      auto next = item.find_first_of("[]", i);
      if (next == std::string_view::npos) next = item.size();
      for (auto& n : names) n += std::string(item.substr(i, next - i));
      i = next;
    }
  }
  return names;
}

Result<int> ParseCount(std::string_view text, const std::string& source, int min_value) {
  auto v = ParseInt(Trim(text), source);
  if (!v.ok() || *v < min_value || *v > 1000000) {
    return MakeError("'" + std::string(text) + "' is not a valid value (expected an integer >= " +
                         std::to_string(min_value) + ")",
                     source);
  }
  return static_cast<int>(*v);
}

// torchrun options that take no value; every other --option takes one.
const std::set<std::string>& TorchrunFlags() {
  static const std::set<std::string> kFlags = {"standalone", "no-python", "run-path",
                                               "module",     "m",         "virtual-local-rank",
                                               "use-env",    "h",         "help"};
  return kFlags;
}

std::string Canonical(std::string_view opt) {
  std::string s(opt);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// Index just past the torchrun launcher in `command`, or npos when it is not a torchrun job.
std::size_t TorchrunStart(const std::vector<std::string>& command) {
  for (std::size_t i = 0; i < command.size(); ++i) {
    std::string base = command[i].substr(command[i].rfind('/') + 1);
    if (base == "torchrun") return i + 1;
    if (command[i] == "-m" && i + 1 < command.size() &&
        (command[i + 1] == "torch.distributed.run" || command[i + 1] == "torch.distributed.launch"))
      return i + 2;
    // Stop at the first thing that is neither a wrapper nor the interpreter's options.
    if (i > 0 && !StartsWith(command[i], "-") && base.rfind("python", 0) != 0) break;
  }
  return std::string::npos;
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist) {
  std::vector<std::string> hosts;
  std::string_view s = Trim(hostlist);
  if (s.empty()) return MakeError("empty hostlist", "SLURM_JOB_NODELIST");
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == '[') ++depth;
    if (i < s.size() && s[i] == ']') --depth;
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      std::string_view item = Trim(s.substr(start, i - start));
      if (item.empty())
        return MakeError("empty item in hostlist '" + std::string(s) + "'", "SLURM_JOB_NODELIST",
                         "remove the doubled or trailing comma");
      auto names = ExpandItem(item);
      if (!names.ok()) return names.error();
      if (hosts.size() + names->size() > kMaxHosts)
        return MakeError("hostlist expands to more than " + std::to_string(kMaxHosts) + " hosts",
                         "SLURM_JOB_NODELIST");
      hosts.insert(hosts.end(), names->begin(), names->end());
      start = i + 1;
    }
  }
  if (depth != 0)
    return MakeError("unbalanced brackets in hostlist '" + std::string(s) + "'",
                     "SLURM_JOB_NODELIST", "use Slurm syntax such as gpu[01-04,07]");
  return hosts;
}

Result<std::pair<std::string, int>> SplitHostPort(std::string_view endpoint,
                                                  std::string_view what) {
  std::string_view e = Trim(endpoint);
  std::string host;
  std::string_view rest;
  if (StartsWith(e, "[")) {
    auto close = e.find(']');
    if (close == std::string_view::npos)
      return MakeError("unclosed '[' in '" + std::string(e) + "'", std::string(what),
                       "write IPv6 endpoints as [ADDR]:PORT");
    host = std::string(e.substr(1, close - 1));
    rest = e.substr(close + 1);
    if (!rest.empty() && rest[0] != ':')
      return MakeError("unexpected text after ']' in '" + std::string(e) + "'", std::string(what));
    if (!rest.empty())
      rest.remove_prefix(1);
    else
      rest = {};
  } else {
    auto colon = e.rfind(':');
    if (colon != std::string_view::npos && e.find(':') != colon)
      return MakeError("'" + std::string(e) + "' looks like a bare IPv6 address", std::string(what),
                       "write IPv6 endpoints as [ADDR]:PORT");
    host = std::string(e.substr(0, colon));
    if (colon != std::string_view::npos) rest = e.substr(colon + 1);
  }
  if (host.empty())
    return MakeError("no host in '" + std::string(e) + "'", std::string(what),
                     "give HOST:PORT, e.g. gpu01:29500");
  int port = -1;
  if (!rest.empty() || (e.size() && e.back() == ':')) {
    auto p = ParseInt(rest, what);
    if (!p.ok() || *p < 1 || *p > 65535)
      return MakeError("bad port '" + std::string(rest) + "' in '" + std::string(e) + "'",
                       std::string(what), "use a port between 1 and 65535");
    port = static_cast<int>(*p);
  }
  return std::make_pair(host, port);
}

std::map<std::string, std::string> TorchrunArguments(const std::vector<std::string>& command) {
  std::map<std::string, std::string> out;
  std::size_t i = TorchrunStart(command);
  if (i == std::string::npos) return out;
  out["__torchrun__"] = "1";
  while (i < command.size()) {
    const std::string& arg = command[i];
    if (arg == "--") break;
    if (!StartsWith(arg, "-") || arg == "-") break;  // the training script: the rest is its own
    std::string opt = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    auto eq = opt.find('=');
    if (eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
      ++i;
    } else if (TorchrunFlags().count(Canonical(opt))) {
      value = "1";
      ++i;
    } else if (i + 1 < command.size()) {
      value = command[i + 1];
      i += 2;
    } else {
      ++i;
    }
    out[Canonical(opt)] = value;
    if (Canonical(opt) == "m" || Canonical(opt) == "module") {
      // "-m pkg.mod" style: torchrun's -m is a flag and the next token is the module to run.
      break;
    }
  }
  return out;
}

std::string Topology::NodeLabel(int node) const {
  std::string label = "node " + std::to_string(node);
  if (node >= 0 && static_cast<std::size_t>(node) < hosts.size())
    label += " (" + hosts[static_cast<std::size_t>(node)] + ")";
  return label;
}

Result<Topology> InferTopology(const TopologyFlags& flags, const std::vector<std::string>& command,
                               const Environment& env, int local_gpus) {
  Topology t;
  auto tr = TorchrunArguments(command);
  bool torchrun = tr.count("__torchrun__") > 0;
  // torchrun reads PET_<NAME> when an argument is absent (torch.distributed.argparse_util.env).
  auto torchrun_value =
      [&](const std::string& name) -> std::optional<std::pair<std::string, std::string>> {
    if (!torchrun) return std::nullopt;
    if (auto it = tr.find(name); it != tr.end())
      return std::make_pair(it->second, "torchrun --" + name);
    std::string pet = "PET_" + name;
    std::transform(pet.begin(), pet.end(), pet.begin(),
                   [](char c) { return c == '-' ? '_' : static_cast<char>(std::toupper(c)); });
    if (auto v = Lookup(env, pet)) return std::make_pair(*v, pet);
    return std::nullopt;
  };
  auto env_value = [&](std::initializer_list<const char*> names)
      -> std::optional<std::pair<std::string, std::string>> {
    for (const char* n : names)
      if (auto v = Lookup(env, n); v && !Trim(*v).empty())
        return std::make_pair(*v, std::string(n));
    return std::nullopt;
  };

  bool standalone = torchrun && tr.count("standalone");
  if (standalone) {
    t.source["nnodes"] = t.source["node_rank"] = t.source["rendezvous"] = "torchrun --standalone";
  }

  // Slurm's node list: expected host of every node rank, and node 0's address.
  if (auto nl = env_value({"SLURM_JOB_NODELIST", "SLURM_NODELIST"})) {
    auto hosts = ExpandHostlist(nl->first);
    if (!hosts.ok()) {
      Error e = hosts.error();
      e.where = nl->second;
      return e;
    }
    t.hosts = *hosts;
  }

  // nnodes
  if (flags.nnodes) {
    t.nnodes = *flags.nnodes;
    t.source["nnodes"] = "--nnodes";
  } else if (standalone) {
    t.nnodes = 1;
  } else if (auto v = torchrun_value("nnodes")) {
    std::string text = v->first;
    auto colon = text.find(':');
    if (colon != std::string::npos) {
      // Elastic MIN:MAX: the warm-up needs the exact count, which only agrees when MIN == MAX.
      if (Trim(text.substr(0, colon)) != Trim(text.substr(colon + 1)))
        return MakeError("elastic node range '" + text + "': the warm-up needs a fixed node count",
                         v->second, "pass --nnodes N to safe-launch, or --no-warmup");
      text = text.substr(0, colon);
    }
    auto n = ParseCount(text, v->second, 1);
    if (!n.ok()) return n.error();
    t.nnodes = *n;
    t.source["nnodes"] = v->second;
  } else if (auto s = env_value({"SLURM_NNODES", "SLURM_JOB_NUM_NODES"})) {
    auto n = ParseCount(s->first, s->second, 1);
    if (!n.ok()) return n.error();
    t.nnodes = *n;
    t.source["nnodes"] = s->second;
  } else {
    t.source["nnodes"] = "default";
  }

  // node rank
  if (flags.node_rank) {
    t.node_rank = *flags.node_rank;
    t.source["node_rank"] = "--node-rank";
  } else if (standalone) {
    t.node_rank = 0;
  } else if (auto v = torchrun_value("node-rank")) {
    auto n = ParseCount(v->first, v->second, 0);
    if (!n.ok()) return n.error();
    t.node_rank = *n;
    t.source["node_rank"] = v->second;
  } else if (auto s = env_value({"SLURM_NODEID"})) {
    auto n = ParseCount(s->first, s->second, 0);
    if (!n.ok()) return n.error();
    t.node_rank = *n;
    t.source["node_rank"] = s->second;
  } else {
    t.source["node_rank"] = "default";
  }

  // processes per node
  if (flags.nproc_per_node) {
    t.nproc_per_node = *flags.nproc_per_node;
    t.source["nproc_per_node"] = "--nproc-per-node";
  } else if (auto v = torchrun_value("nproc-per-node")) {
    std::string text = ToLower(Trim(v->first));
    if (text == "gpu" || text == "auto") {
      if (local_gpus <= 0)
        return MakeError("'" + v->first + "' but no GPU was found on this node", v->second,
                         "pass --nproc-per-node N to safe-launch");
      t.nproc_per_node = local_gpus;
    } else if (text == "cpu") {
      return MakeError("'cpu' (one rank per CPU) is not supported by the warm-up", v->second,
                       "pass --nproc-per-node N to safe-launch, or --no-warmup");
    } else {
      auto n = ParseCount(text, v->second, 1);
      if (!n.ok()) return n.error();
      t.nproc_per_node = *n;
    }
    t.source["nproc_per_node"] = v->second;
  } else {
    t.source["nproc_per_node"] = torchrun ? "torchrun default" : "default";
  }

  // Rendezvous endpoint (node 0's address). The host and the port are resolved separately, so
  // e.g. Slurm's first host combines with torchrun's --master-port.
  std::optional<std::string> host;
  std::optional<int> port;
  std::string port_source;
  auto parse_port = [](const std::pair<std::string, std::string>& v) -> Result<int> {
    auto n = ParseCount(v.first, v.second, 1);
    if (!n.ok() || *n > 65535)
      return MakeError("bad port '" + v.first + "'", v.second, "use a port between 1 and 65535");
    return *n;
  };
  if (flags.rendezvous) {
    auto hp = SplitHostPort(*flags.rendezvous, "--rendezvous");
    if (!hp.ok()) return hp.error();
    host = hp->first;
    if (hp->second > 0) port = hp->second, port_source = "--rendezvous";
    t.source["rendezvous"] = "--rendezvous";
  } else if (standalone) {
    host = "127.0.0.1";
    port = 29400;
  } else if (auto v = torchrun_value("rdzv-endpoint"); v && !Trim(v->first).empty()) {
    auto hp = SplitHostPort(v->first, v->second);
    if (!hp.ok()) return hp.error();
    host = hp->first;
    port = hp->second > 0 ? hp->second : 29400;  // torchrun's c10d rendezvous default port
    port_source = v->second;
    t.source["rendezvous"] = v->second;
  } else if (auto a = torchrun_value("master-addr")) {
    host = std::string(Trim(a->first));
    t.source["rendezvous"] = a->second;
  } else if (auto ma = env_value({"MASTER_ADDR"})) {
    host = std::string(Trim(ma->first));
    t.source["rendezvous"] = ma->second;
  } else if (!t.hosts.empty()) {
    host = t.hosts.front();
    t.source["rendezvous"] = "first host of SLURM_JOB_NODELIST";
  }
  if (!port) {
    if (auto p = torchrun_value("master-port")) {
      auto n = parse_port(*p);
      if (!n.ok()) return n.error();
      port = *n;
    } else if (auto mp = env_value({"MASTER_PORT"})) {
      auto n = parse_port(*mp);
      if (!n.ok()) return n.error();
      port = *n;
    }
  }
  if (host) {
    if (host->empty())
      return MakeError("empty rendezvous host", t.source["rendezvous"], "give HOST:PORT");
    t.rendezvous_host = *host;
    t.rendezvous_port = port.value_or(29500);
  } else if (t.nnodes > 1) {
    return MakeError("cannot tell where node 0 is for a " + std::to_string(t.nnodes) + "-node job",
                     "rendezvous",
                     "pass --rendezvous HOST:PORT to safe-launch (or torchrun --rdzv-endpoint / "
                     "--master-addr, or run under Slurm)");
  } else {
    t.rendezvous_port = port.value_or(29500);
    t.source["rendezvous"] = "default";
  }

  if (flags.warmup_port) {
    t.warmup_port = *flags.warmup_port;
    t.source["warmup_port"] = "--warmup-port";
  } else {
    t.warmup_port = t.rendezvous_port + 1;
    t.source["warmup_port"] = "rendezvous port + 1";
  }

  // Consistency.
  if (t.nnodes < 1) return MakeError("node count must be at least 1", t.source["nnodes"]);
  if (t.nproc_per_node < 1)
    return MakeError("processes per node must be at least 1", t.source["nproc_per_node"]);
  if (t.node_rank < 0 || t.node_rank >= t.nnodes)
    return MakeError("node rank " + std::to_string(t.node_rank) + " is outside 0.." +
                         std::to_string(t.nnodes - 1) + " (node rank from " +
                         t.source["node_rank"] + ", node count from " + t.source["nnodes"] + ")",
                     t.source["node_rank"],
                     "make --node-rank/--nnodes (or torchrun's, or Slurm's) agree");
  if (t.warmup_port < 1 || t.warmup_port > 65535)
    return MakeError("warm-up port " + std::to_string(t.warmup_port) + " is out of range",
                     t.source["warmup_port"], "pass --warmup-port between 1 and 65535");
  if (!t.hosts.empty() && static_cast<int>(t.hosts.size()) != t.nnodes) {
    // Slurm's list describes the allocation, which may be larger than the job: keep it only
    // when it matches, else the names would point at the wrong machines.
    t.hosts.clear();
  }
  return t;
}

}  // namespace sl::warmup
