#include "launcher/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "common/strings.h"
#include "launcher/hostlist.h"

namespace sl::launcher {
namespace {

constexpr int kDefaultRendezvousPort = 29500;  // torch.distributed's MASTER_PORT default
constexpr int kC10dRendezvousPort = 29400;     // torchrun's c10d rendezvous default port

Result<int> ParseCount(std::string_view text, const std::string& source, int min_value) {
  auto v = ParseInt(Trim(text), source);
  if (!v.ok() || *v < min_value || *v > 1000000) {
    return MakeError("'" + std::string(text) + "' is not a valid value (expected an integer >= " +
                         std::to_string(min_value) + ")",
                     source);
  }
  return static_cast<int>(*v);
}

Result<int> ParsePort(const std::string& text, const std::string& source) {
  auto n = ParseCount(text, source, 1);
  if (!n.ok() || *n > 65535)
    return MakeError("bad port '" + text + "'", source, "use a port between 1 and 65535");
  return *n;
}

template <typename T>
Hint<T> MakeHint(Result<T> value, std::string source, std::string text = {}) {
  return Hint<T>{std::move(value), std::move(source), std::move(text)};
}

// A raw value and where it came from.
using Sourced = std::pair<std::string, std::string>;

// The first of `names` set to a non-blank value.
std::optional<Sourced> EnvValue(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (auto v = Lookup(env, n); v && !Trim(*v).empty()) return Sourced(*v, std::string(n));
  return std::nullopt;
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

// torchrun reads PET_<NAME> when an argument is absent (torch.distributed.argparse_util.env).
std::optional<Sourced> TorchrunValue(const std::map<std::string, std::string>& args,
                                     const Environment& env, const std::string& name) {
  if (auto it = args.find(name); it != args.end()) return Sourced(it->second, "torchrun --" + name);
  std::string pet = "PET_" + name;
  std::transform(pet.begin(), pet.end(), pet.begin(),
                 [](char c) { return c == '-' ? '_' : static_cast<char>(std::toupper(c)); });
  if (auto v = Lookup(env, pet)) return Sourced(*v, pet);
  return std::nullopt;
}

// torchrun --nnodes=N or MIN:MAX; the warm-up needs the exact count, so only MIN == MAX.
Result<int> TorchrunNnodes(const Sourced& v) {
  std::string text = v.first;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    if (Trim(text.substr(0, colon)) != Trim(text.substr(colon + 1)))
      return MakeError("elastic node range '" + text + "': the warm-up needs a fixed node count",
                       v.second, "pass --nnodes N to safe-launch, or --no-warmup");
    text = text.substr(0, colon);
  }
  return ParseCount(text, v.second, 1);
}

// torchrun --nproc-per-node=N|gpu|auto|cpu.
Result<int> TorchrunNproc(const Sourced& v) {
  std::string text = ToLower(Trim(v.first));
  if (text == "gpu" || text == "auto") return kRanksPerLocalGpu;
  if (text == "cpu")
    return MakeError("'cpu' (one rank per CPU) is not supported by the warm-up", v.second,
                     "pass --nproc-per-node N to safe-launch, or --no-warmup");
  return ParseCount(text, v.second, 1);
}

Result<Endpoint> ParseEndpoint(const std::string& text, const std::string& source,
                               int default_port) {
  auto hp = SplitHostPort(text, source);
  if (!hp.ok()) return hp.error();
  return Endpoint{hp->first, hp->second > 0 ? hp->second : default_port};
}

// The first hint for `field` in priority order, or null.
template <typename T>
const Hint<T>* First(const std::vector<LayoutHints>& hints,
                     std::optional<Hint<T>> LayoutHints::*field) {
  for (const auto& h : hints)
    if (h.*field) return &*(h.*field);
  return nullptr;
}

// Sets `*out` and the field's source from the first hint; the hint's Error when it is one.
Status TakeCount(const std::vector<LayoutHints>& hints,
                 std::optional<Hint<int>> LayoutHints::*field, const char* name, int* out,
                 warmup::Topology* t) {
  const Hint<int>* h = First(hints, field);
  if (!h) {
    t->source[name] = "default";
    return OkStatus();
  }
  if (!h->value.ok()) return h->value.error();
  *out = *h->value;
  t->source[name] = h->source;
  return OkStatus();
}

// Node 0's host and port. Host and port resolve separately, so e.g. Slurm's first host combines
// with torchrun's --master-port.
Status TakeRendezvous(const std::vector<LayoutHints>& hints, warmup::Topology* t) {
  const Hint<Endpoint>* ep = First(hints, &LayoutHints::rendezvous);
  if (ep && !ep->value.ok()) return ep->value.error();
  std::optional<int> port;
  if (ep && ep->value->port > 0) port = ep->value->port;
  if (!port) {
    if (const Hint<int>* p = First(hints, &LayoutHints::port)) {
      if (!p->value.ok()) return p->value.error();
      port = *p->value;
    }
  }
  t->rendezvous_port = port.value_or(kDefaultRendezvousPort);
  if (ep) {
    t->source["rendezvous"] = ep->source;
    if (ep->value->host.empty())
      return MakeError("empty rendezvous host", ep->source, "give HOST:PORT");
    t->rendezvous_host = ep->value->host;
  } else if (t->nnodes > 1) {
    return MakeError("cannot tell where node 0 is for a " + std::to_string(t->nnodes) + "-node job",
                     "rendezvous",
                     "pass --rendezvous HOST:PORT to safe-launch (or torchrun --rdzv-endpoint / "
                     "--master-addr, or run under Slurm)");
  } else {
    t->source["rendezvous"] = "default";
  }
  return OkStatus();
}

Status CheckConsistency(warmup::Topology& t) {
  if (t.nnodes < 1) return MakeError("node count must be at least 1", t.source["nnodes"]);
  if (t.nproc_per_node < 1 && t.nproc_per_node_spec.empty())
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
  return OkStatus();
}

}  // namespace

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

LayoutHints FlagHints(const LayoutFlags& flags) {
  LayoutHints h;
  if (flags.nnodes > 0) h.nnodes = MakeHint<int>(flags.nnodes, "--nnodes");
  if (flags.node_rank >= 0) h.node_rank = MakeHint<int>(flags.node_rank, "--node-rank");
  if (flags.nproc_per_node > 0)
    h.nproc_per_node = MakeHint<int>(flags.nproc_per_node, "--nproc-per-node");
  if (!flags.rendezvous.empty())
    h.rendezvous = MakeHint(ParseEndpoint(flags.rendezvous, "--rendezvous", -1), "--rendezvous",
                            flags.rendezvous);
  if (flags.warmup_port > 0) h.warmup_port = MakeHint<int>(flags.warmup_port, "--warmup-port");
  return h;
}

LayoutHints TorchrunHints(const std::vector<std::string>& command, const Environment& env) {
  LayoutHints h;
  auto args = TorchrunArguments(command);
  if (!args.count("__torchrun__")) return h;
  auto value = [&](const std::string& name) { return TorchrunValue(args, env, name); };
  if (args.count("standalone")) {
    const std::string s = "torchrun --standalone";
    h.nnodes = MakeHint<int>(1, s);
    h.node_rank = MakeHint<int>(0, s);
    h.rendezvous = MakeHint<Endpoint>(Endpoint{"127.0.0.1", kC10dRendezvousPort}, s);
  } else {
    if (auto v = value("nnodes")) h.nnodes = MakeHint(TorchrunNnodes(*v), v->second, v->first);
    if (auto v = value("node-rank"))
      h.node_rank = MakeHint(ParseCount(v->first, v->second, 0), v->second, v->first);
    if (auto v = value("rdzv-endpoint"); v && !Trim(v->first).empty())
      h.rendezvous =
          MakeHint(ParseEndpoint(v->first, v->second, kC10dRendezvousPort), v->second, v->first);
    else if (auto a = value("master-addr"))
      h.rendezvous = MakeHint<Endpoint>(Endpoint{std::string(Trim(a->first)), -1}, a->second);
  }
  if (auto v = value("nproc-per-node"))
    h.nproc_per_node = MakeHint(TorchrunNproc(*v), v->second, v->first);
  else
    h.nproc_per_node = MakeHint<int>(1, "torchrun default");
  if (auto p = value("master-port")) h.port = MakeHint(ParsePort(p->first, p->second), p->second);
  return h;
}

LayoutHints TorchEnvHints(const Environment& env) {
  LayoutHints h;
  if (auto a = EnvValue(env, {"MASTER_ADDR"}))
    h.rendezvous = MakeHint<Endpoint>(Endpoint{std::string(Trim(a->first)), -1}, a->second);
  if (auto p = EnvValue(env, {"MASTER_PORT"}))
    h.port = MakeHint(ParsePort(p->first, p->second), p->second);
  return h;
}

LayoutHints SlurmHints(const Environment& env) {
  LayoutHints h;
  if (auto nl = EnvValue(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"})) {
    auto hosts = ExpandHostlist(nl->first);
    if (!hosts.ok()) {
      Error e = hosts.error();
      e.where = nl->second;
      h.hosts = MakeHint<std::vector<std::string>>(e, nl->second, nl->first);
    } else {
      h.hosts = MakeHint(std::move(hosts), nl->second, nl->first);
      if (!h.hosts->value->empty())
        h.rendezvous = MakeHint<Endpoint>(Endpoint{h.hosts->value->front(), -1},
                                          "first host of SLURM_JOB_NODELIST");
    }
  }
  if (auto s = EnvValue(env, {"SLURM_NNODES", "SLURM_JOB_NUM_NODES"}))
    h.nnodes = MakeHint(ParseCount(s->first, s->second, 1), s->second, s->first);
  if (auto s = EnvValue(env, {"SLURM_NODEID"}))
    h.node_rank = MakeHint(ParseCount(s->first, s->second, 0), s->second, s->first);
  return h;
}

LayoutHints MpiHints(const Environment& env) {
  LayoutHints h;
  const bool ompi = EnvValue(env, {"OMPI_COMM_WORLD_SIZE"}).has_value();
  auto size = EnvValue(env, ompi ? std::initializer_list<const char*>{"OMPI_COMM_WORLD_SIZE"}
                                 : std::initializer_list<const char*>{"PMI_SIZE"});
  auto rank = EnvValue(env, ompi ? std::initializer_list<const char*>{"OMPI_COMM_WORLD_RANK"}
                                 : std::initializer_list<const char*>{"PMI_RANK", "PMIX_RANK"});
  auto local = EnvValue(env, ompi ? std::initializer_list<const char*>{"OMPI_COMM_WORLD_LOCAL_SIZE"}
                                  : std::initializer_list<const char*>{"MPI_LOCALNRANKS"});
  if (!size || !rank || !local) return h;
  auto n = ParseCount(size->first, size->second, 1);
  auto r = ParseCount(rank->first, rank->second, 0);
  auto l = ParseCount(local->first, local->second, 1);
  if (!n.ok() || !r.ok() || !l.ok()) return h;
  if (*n % *l != 0) {
    h.nnodes = MakeHint<int>(
        MakeError(fmt::format("{} ranks do not split into nodes of {} ({})", *n, *l, local->second),
                  local->second, "pass --nnodes and --node-rank"),
        size->second);
    return h;
  }
  const std::string src = ompi ? "Open MPI (OMPI_COMM_WORLD_*)" : "MPI (PMI_*)";
  h.nnodes = MakeHint<int>(*n / *l, src);
  h.node_rank = MakeHint<int>(*r / *l, src);
  h.nproc_per_node = MakeHint<int>(*l, src);
  return h;
}

Result<warmup::Topology> MergeLayout(const std::vector<LayoutHints>& by_priority) {
  warmup::Topology t;
  // A malformed host list is an error even when other sources give the layout: it says the
  // job's environment is not what the user thinks.
  if (const auto* h = First(by_priority, &LayoutHints::hosts)) {
    if (!h->value.ok()) return h->value.error();
    t.hosts = *h->value;
  }
  if (auto s = TakeCount(by_priority, &LayoutHints::nnodes, "nnodes", &t.nnodes, &t); !s.ok())
    return s.error();
  if (auto s = TakeCount(by_priority, &LayoutHints::node_rank, "node_rank", &t.node_rank, &t);
      !s.ok())
    return s.error();
  if (auto s = TakeCount(by_priority, &LayoutHints::nproc_per_node, "nproc_per_node",
                         &t.nproc_per_node, &t);
      !s.ok())
    return s.error();
  if (t.nproc_per_node == kRanksPerLocalGpu)
    t.nproc_per_node_spec = First(by_priority, &LayoutHints::nproc_per_node)->text;
  if (auto s = TakeRendezvous(by_priority, &t); !s.ok()) return s.error();
  if (const auto* w = First(by_priority, &LayoutHints::warmup_port)) {
    if (!w->value.ok()) return w->value.error();
    t.warmup_port = *w->value;
    t.source["warmup_port"] = w->source;
  } else {
    t.warmup_port = t.rendezvous_port + 1;
    t.source["warmup_port"] = "rendezvous port + 1";
  }
  if (auto s = CheckConsistency(t); !s.ok()) return s.error();
  // Slurm's list describes the allocation, which may be larger than the job: keep it only when
  // it matches, else the names would point at the wrong machines.
  if (!t.hosts.empty() && static_cast<int>(t.hosts.size()) != t.nnodes) t.hosts.clear();
  return t;
}

namespace {

// Slurm's compressed per-node counts, "2(x3),1" = 2,2,2,1; empty when malformed.
std::vector<int> ExpandTaskCounts(std::string_view text) {
  std::vector<int> out;
  for (const auto& item : Split(std::string(text), ',')) {
    std::string_view it = Trim(item);
    int times = 1;
    if (auto open = it.find("(x"); open != std::string_view::npos && it.back() == ')') {
      auto r = ParseInt(it.substr(open + 2, it.size() - open - 3), "count");
      if (!r.ok() || *r < 1 || *r > 100000) return {};
      times = static_cast<int>(*r);
      it = it.substr(0, open);
    }
    auto n = ParseInt(it, "count");
    if (!n.ok() || *n < 0) return {};
    out.insert(out.end(), times, static_cast<int>(*n));
  }
  return out;
}

int IntOr(const Environment& env, const char* name, int fallback) {
  auto v = Lookup(env, name);
  if (!v) return fallback;
  auto n = ParseInt(Trim(*v), name);
  return n.ok() && *n >= 0 && *n <= 1000000 ? static_cast<int>(*n) : fallback;
}

}  // namespace

LocalTasks TasksOnThisNode(const Environment& env) {
  LocalTasks t;
  auto mpi = [&](const char* size, const char* local, std::initializer_list<const char*> rank) {
    auto v = Lookup(env, size);
    if (!v) return false;
    t.count = std::max(1, IntOr(env, size, 1));
    t.local_rank = IntOr(env, local, 0);
    if (auto r = EnvValue(env, rank)) t.rank = std::string(Trim(r->first));
    t.source = std::string(size) + "=" + *v;
    return true;
  };
  if (mpi("OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", {"OMPI_COMM_WORLD_RANK"}) ||
      mpi("MPI_LOCALNRANKS", "MPI_LOCALRANKID", {"PMI_RANK", "PMIX_RANK"}))
    return t;
  // The batch script itself (no step) is one process whatever the allocation says.
  if (!Lookup(env, "SLURM_STEP_ID")) return t;
  if (auto r = EnvValue(env, {"SLURM_PROCID"})) t.rank = std::string(Trim(r->first));
  t.local_rank = IntOr(env, "SLURM_LOCALID", 0);
  if (auto v = EnvValue(env, {"SLURM_STEP_TASKS_PER_NODE"})) {
    auto counts = ExpandTaskCounts(v->first);
    const int node = IntOr(env, "SLURM_NODEID", 0);
    if (node < static_cast<int>(counts.size())) {
      t.count = std::max(1, counts[node]);
      t.source = "SLURM_STEP_TASKS_PER_NODE=" + v->first;
    }
  } else if (auto n = EnvValue(env, {"SLURM_NTASKS_PER_NODE"})) {
    t.count = std::max(1, IntOr(env, "SLURM_NTASKS_PER_NODE", 1));
    t.source = "SLURM_NTASKS_PER_NODE=" + n->first;
  }
  // Whatever the counts say, a second local task proves there are two of us.
  if (t.local_rank > 0 && t.count < 2) {
    t.count = t.local_rank + 1;
    t.source = "SLURM_LOCALID=" + std::to_string(t.local_rank);
  }
  return t;
}

Environment RankEnvironment(const Environment& env, const LocalTasks& tasks,
                            const std::string& master_addr, int master_port) {
  Environment out;
  auto first = [&](std::initializer_list<const char*> names) -> std::string {
    auto v = EnvValue(env, names);
    return v ? std::string(Trim(v->first)) : std::string();
  };
  const std::pair<const char*, std::string> wanted[] = {
      {"RANK", first({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})},
      {"WORLD_SIZE", first({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})},
      {"LOCAL_RANK", first({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})},
      {"LOCAL_WORLD_SIZE", tasks.count > 0 ? std::to_string(tasks.count) : std::string()},
      {"MASTER_ADDR", master_addr},
      {"MASTER_PORT", master_port > 0 ? std::to_string(master_port) : std::string()},
  };
  for (const auto& [name, value] : wanted) {
    if (value.empty() || EnvValue(env, {name})) continue;
    out[name] = value;
  }
  return out;
}

std::string JobKey(const Environment& env) { return LaunchId(env); }

void PerTaskLayout(warmup::Topology* topology, const LocalTasks& tasks) {
  if (topology->source["nproc_per_node"] != "default" || tasks.count <= 1) return;
  topology->nproc_per_node = tasks.count;
  topology->source["nproc_per_node"] = tasks.source;
}

Status CheckOncePerNode(const LocalTasks& tasks) {
  if (tasks.count <= 1) return OkStatus();
  const bool mpi = StartsWith(tasks.source, "OMPI_") || StartsWith(tasks.source, "MPI_");
  return MakeError(
      std::to_string(tasks.count) + " safe-launch processes were started on this node (" +
          tasks.source + "): safe-launch runs once per node, and torchrun starts the node's ranks",
      tasks.source.substr(0, tasks.source.find('=')),
      mpi ? "start one per node (mpirun --map-by ppr:1:node, or -npernode 1), or pass "
            "--per-task to supervise each rank on its own"
          : "use srun --ntasks-per-node=1 (#SBATCH --ntasks-per-node=1), or pass --per-task to "
            "supervise each task on its own");
}

Result<warmup::Topology> InferLayout(const LayoutFlags& flags,
                                     const std::vector<std::string>& command,
                                     const Environment& env) {
  return MergeLayout({FlagHints(flags), TorchrunHints(command, env), TorchEnvHints(env),
                      MpiHints(env), SlurmHints(env)});
}

std::optional<JobEndpoint> TorchEndpoint(const std::vector<std::string>& command,
                                         const Environment& env) {
  const std::vector<LayoutHints> hints = {TorchrunHints(command, env), TorchEnvHints(env)};
  const Hint<Endpoint>* ep = First(hints, &LayoutHints::rendezvous);
  if (!ep || !ep->value.ok() || ep->value->host.empty()) return std::nullopt;
  JobEndpoint out{ep->value->host, ep->value->port, ep->source};
  if (out.port <= 0) {
    const Hint<int>* p = First(hints, &LayoutHints::port);
    if (p && p->value.ok()) {
      out.port = *p->value;
      if (p->source != out.source) out.source += " + " + p->source;
    } else {
      out.port = kDefaultRendezvousPort;  // torch.distributed's default when no port is given
    }
  }
  return out;
}

Status ResolveLocalGpus(warmup::Topology* topology, int local_gpus) {
  if (topology->nproc_per_node_spec.empty()) return OkStatus();
  if (local_gpus <= 0)
    return MakeError("'" + topology->nproc_per_node_spec + "' but no GPU was found on this node",
                     topology->source["nproc_per_node"], "pass --nproc-per-node N to safe-launch");
  topology->nproc_per_node = local_gpus;
  topology->nproc_per_node_spec.clear();
  return OkStatus();
}

}  // namespace sl::launcher
