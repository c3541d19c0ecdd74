// IB/RoCE part of NodeFacts: ports, states, rates, GID tables and the netdev behind RoCE ports,
// read from /sys/class/infiniband through the FileReader; plus NCCL's GID-index selection.
#include "common/node_facts.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "common/parse/ib_sysfs.h"
#include "common/strings.h"

#ifdef SAFE_LAUNCH_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace sl {

namespace {

constexpr const char* kIbClass = "/sys/class/infiniband";

// Entries of a directory named by numbers ("1", "2", "10"), ascending by value.
std::vector<int> NumericEntries(const std::vector<std::string>& names) {
  std::vector<int> out;
  out.reserve(names.size());
  for (const auto& n : names) {
    int v = 0;
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (ec == std::errc() && p == n.data() + n.size() && v >= 0) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class IbGatherer {
 public:
  IbGatherer(const FileReader& fs, NodeFacts* facts) : fs_(fs), facts_(facts) {}

  void Run() {
    // No RDMA devices at all: a socket-only node. A dangling link or a file there is not "none":
    // it is a fabric we could not read, and the plan must not guess socket-only from it.
    if (PathAbsent(fs_, kIbClass)) {
      facts_->ib_class = Fact<std::vector<std::string>>::Absent(
          kIbClass, MakeError("no RDMA devices", fs_.HostPath(kIbClass)));
      return;
    }
    auto devices = fs_.ListDir(kIbClass);
    if (!devices.ok()) {
      facts_->ib_class =
          Fact<std::vector<std::string>>::Unreadable(kIbClass, Problem(devices.error(), kIbClass));
      return;
    }
    facts_->ib_class = Fact<std::vector<std::string>>::Of(*devices, kIbClass, Join(*devices, " "));
    for (const auto& dev : *devices) GatherDevice(dev);
  }

 private:
  // A read error that is a gather problem: listed in NodeFacts::problems (the node's log of
  // unread files) and returned located, for the fact that keeps it (IbProblems reads those).
  Error Problem(const Error& err, const std::string& path) {
    Error located = Located(err, path);
    facts_->problems.push_back(located);
    return located;
  }

  // A read error as a fact keeps it: where it happened is the host path when the reader left none.
  Error Located(Error e, const std::string& path) const {
    if (e.where.empty()) e.where = fs_.HostPath(path);
    return e;
  }

  // Reads one port file into a fact: the value `parse` makes of its text, or the read/parse
  // error (where = host path), which is also a gather problem.
  template <typename T, typename Parse>
  Fact<T> ReadFact(const std::string& path, Parse parse) {
    auto text = fs_.ReadFile(path, 4096);
    if (!text.ok()) return Fact<T>::Unreadable(path, Problem(text.error(), path));
    std::string raw(Trim(*text));
    auto v = parse(*text);
    if (!v.ok()) {
      Error e = WithWhere(v.error(), path);
      facts_->problems.push_back(e);
      return Fact<T>::Malformed(path, std::move(raw), std::move(e));
    }
    return Fact<T>::Of(std::move(v).value(), path, std::move(raw));
  }

  // A GID attribute file (types/I, ndevs/I): its trimmed text, or why not; never a problem.
  Fact<std::string> ReadAttr(const std::string& path) {
    auto text = fs_.ReadFile(path, 256);
    if (!text.ok()) return Fact<std::string>::Unreadable(path, Located(text.error(), path));
    std::string raw(Trim(*text));
    return Fact<std::string>::Of(raw, path, raw);
  }

  // A device-level descriptive file (fw_ver, hca_type, board_id): absent on some providers (rxe
  // has no board_id), so a failed read is kept in the fact but is never a gather problem.
  Fact<std::string> ReadDescriptive(const std::string& path) {
    auto text = fs_.ReadFile(path, 4096);
    if (!text.ok()) {
      Error e = Located(text.error(), path);
      return PathAbsent(fs_, path) ? Fact<std::string>::Absent(path, std::move(e))
                                   : Fact<std::string>::Unreadable(path, std::move(e));
    }
    std::string raw(Trim(*text));
    return Fact<std::string>::Of(raw, path, raw);
  }

  static std::string ValueOr(const Fact<std::string>& f) { return f.ok() ? *f : std::string(); }

  void GatherDevice(const std::string& dev) {
    const std::string dir = JoinPath(kIbClass, dev);
    IbDeviceFacts& d = facts_->ib_devices.emplace_back();
    d.name = dev;
    d.fw_ver = ReadDescriptive(dir + "/fw_ver");
    d.hca_type = ReadDescriptive(dir + "/hca_type");
    d.board_id = ReadDescriptive(dir + "/board_id");
    const std::string pdir = dir + "/ports";
    auto ports = fs_.ListDir(pdir);
    if (!ports.ok()) {
      d.ports = Fact<std::vector<int>>::Unreadable(pdir, Problem(ports.error(), pdir));
      return;
    }
    d.ports = Fact<std::vector<int>>::Of(NumericEntries(*ports), pdir, Join(*ports, " "));
    for (int n : *d.ports) {
      IbPort p;
      p.device = dev;
      p.port = n;
      p.fw_ver = ValueOr(d.fw_ver);
      p.hca_type = ValueOr(d.hca_type);
      p.board_id = ValueOr(d.board_id);
      GatherPort(pdir + "/" + std::to_string(n), &p);
      facts_->ib_ports.push_back(std::move(p));
    }
  }

  void GatherPort(const std::string& pdir, IbPort* p) {
    IbPortFacts& f = p->sysfs;
    f.state = ReadFact<SysfsCodeName>(pdir + "/state",
                                      [](auto t) { return ParseSysfsCodeName(t, "state"); });
    f.phys_state = ReadFact<SysfsCodeName>(
        pdir + "/phys_state", [](auto t) { return ParseSysfsCodeName(t, "phys_state"); });
    f.rate = ReadFact<double>(pdir + "/rate", ParseIbRate);
    f.link_layer = ReadFact<std::string>(pdir + "/link_layer", ParseLinkLayer);
    if (f.state.ok()) {
      p->state_code = f.state->code;
      p->state = f.state->name;
    }
    if (f.phys_state.ok()) {
      p->phys_state_code = f.phys_state->code;
      p->phys_state = f.phys_state->name;
    }
    if (f.rate.ok()) {
      p->rate_gbps = *f.rate;
      p->rate_text = f.rate.raw;
    }
    if (f.link_layer.ok()) p->link_layer = *f.link_layer;
    GatherGids(pdir, p);
    if (p->IsRoce()) GatherNetdev(pdir, p);
  }

  Error WithWhere(Error e, const std::string& path) {
    e.where = fs_.HostPath(path);
    return e;
  }

  void GatherGids(const std::string& pdir, IbPort* p) {
    const std::string gdir = pdir + "/gids";
    auto names = fs_.ListDir(gdir);
    if (!names.ok()) {
      // InfiniBand ports always have gids/; only RoCE needs the table for a decision.
      Error e = p->IsRoce() ? Problem(names.error(), gdir) : Located(names.error(), gdir);
      p->sysfs.gid_indices = Fact<std::vector<int>>::Unreadable(gdir, std::move(e));
      return;
    }
    std::vector<int> indices = NumericEntries(*names);
    p->sysfs.gid_indices = Fact<std::vector<int>>::Of(indices, gdir, Join(*names, " "));
    p->gid_table_len = indices.empty() ? 0 : indices.back() + 1;
    // InfiniBand: NCCL uses index 0 (the port GID); reading 128 empty entries would cost time.
    if (!p->IsRoce() && !indices.empty()) indices.resize(1);
    for (int i : indices) {
      const std::string idx = std::to_string(i);
      const std::string gid_path = pdir + "/gids/" + idx;
      auto bytes = ReadFact<GidBytes>(gid_path, ParseGid);
      Fact<std::string> text = bytes.ok()
                                   ? Fact<std::string>::Of(bytes.raw, gid_path, bytes.raw)
                                   : Fact<std::string>::Malformed(gid_path, bytes.raw, bytes.error);
      text.unreadable = bytes.unreadable;
      p->sysfs.gids[i] = std::move(text);
      if (!bytes.ok()) continue;
      bool zero = std::all_of(bytes->begin(), bytes->end(), [](auto b) { return b == 0; });
      if (zero) continue;  // empty slot; its types/ndevs files fail with EINVAL on a real kernel
      GidEntry e;
      e.index = i;
      e.gid = bytes.raw;
      e.ipv4 = GidIpv4(*bytes);
      // types/ndevs of a slot in use can still fail (EINVAL while the kernel updates the table,
      // or in a container); NCCL then treats the version as unknown, and so do we.
      Fact<std::string>& type = p->sysfs.gid_types[i] = ReadAttr(pdir + "/gid_attrs/types/" + idx);
      if (type.ok()) e.type = *type;
      Fact<std::string>& ndev = p->sysfs.gid_ndevs[i] = ReadAttr(pdir + "/gid_attrs/ndevs/" + idx);
      if (ndev.ok()) e.ndev = *ndev;
      p->gids.push_back(std::move(e));
    }
  }

  void GatherNetdev(const std::string& pdir, IbPort* p) {
    for (const auto& g : p->gids) {
      if (!g.ndev.empty()) {
        p->netdev = g.ndev;
        break;
      }
    }
    if (p->netdev.empty()) {
      // No GID names a netdev (empty table): the PCI function's own netdev, as ibdev2netdev does.
      auto nets = fs_.ListDir(JoinPath(kIbClass, p->device) + "/device/net");
      if (nets.ok() && !nets->empty()) p->netdev = nets->front();
    }
    if (p->netdev.empty()) return;
    p->sysfs.netdev_mtu = ReadFact<int>("/sys/class/net/" + p->netdev + "/mtu", ParseNetdevMtu);
    if (p->sysfs.netdev_mtu.ok()) p->netdev_mtu = *p->sysfs.netdev_mtu;
  }

  const FileReader& fs_;
  NodeFacts* facts_;
};

#ifdef SAFE_LAUNCH_HAVE_IBVERBS
int IbvMtuBytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

// The active MTU is not in sysfs; only the verbs port query has it. Live node only.
void QueryActiveMtus(std::vector<IbPort>* ports) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return;
  for (int i = 0; i < n; ++i) {
    const char* name = ibv_get_device_name(list[i]);
    if (name == nullptr) continue;
    bool wanted = std::any_of(ports->begin(), ports->end(),
                              [&](const IbPort& p) { return p.device == name; });
    if (!wanted) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) continue;  // no permission on /dev/infiniband/uverbs*: not checkable
    for (auto& p : *ports) {
      if (p.device != name) continue;
      ibv_port_attr attr;
      std::memset(&attr, 0, sizeof attr);
      if (ibv_query_port(ctx, static_cast<uint8_t>(p.port), &attr) == 0) {
        p.active_mtu = IbvMtuBytes(attr.active_mtu);
      }
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
}
#endif

}  // namespace

bool GidEntry::IsZero() const { return gid.find_first_not_of("0:") == std::string::npos; }
bool GidEntry::IsLinkLocal() const { return gid.rfind("fe80:0000:0000:0000", 0) == 0; }
int GidEntry::RoceVersion() const { return RoceVersionFromType(type); }
std::string GidEntry::VersionShort() const {
  int v = RoceVersion();
  return v == 0 ? std::string() : "v" + std::to_string(v);
}

namespace {
// One row of IbProblems: the fact's error when it was gathered (has a path), is not "absent"
// and holds no value. The message names the host path, as the error does.
template <typename T>
void AddIbProblem(const Fact<T>& f, const std::string& device, int port, std::string attribute,
                  std::vector<IbProblem>* out) {
  if (f.ok() || f.absent || f.path.empty()) return;
  const Error& e = f.error;
  out->push_back({device, port, std::move(attribute), f.path,
                  e.where.empty() ? e.message : e.where + ": " + e.message});
}
}  // namespace

std::vector<IbProblem> IbProblems(const NodeFacts& facts) {
  std::vector<IbProblem> out;
  AddIbProblem(facts.ib_class, "", 0, "devices", &out);
  for (const IbDeviceFacts& d : facts.ib_devices) {
    AddIbProblem(d.ports, d.name, 0, "ports", &out);
    for (const IbPort& p : facts.ib_ports) {
      if (p.device != d.name) continue;
      const IbPortFacts& f = p.sysfs;
      AddIbProblem(f.state, p.device, p.port, "state", &out);
      AddIbProblem(f.phys_state, p.device, p.port, "phys_state", &out);
      AddIbProblem(f.rate, p.device, p.port, "rate", &out);
      AddIbProblem(f.link_layer, p.device, p.port, "link_layer", &out);
      // InfiniBand ports always have gids/; only RoCE needs the table for a decision.
      if (p.IsRoce()) AddIbProblem(f.gid_indices, p.device, p.port, "gids", &out);
      for (const auto& [i, g] : f.gids) {
        AddIbProblem(g, p.device, p.port, "gids/" + std::to_string(i), &out);
      }
      AddIbProblem(f.netdev_mtu, p.device, p.port, "netdev_mtu", &out);
    }
  }
  return out;
}

bool PathAbsent(const FileReader& fs, std::string_view path) {
  std::string p(path);
  bool self = true;
  while (true) {
    if (fs.Exists(p)) return !self && fs.IsDir(p);  // an ancestor that is a file: wrong type
    if (fs.ReadLink(p).ok()) return false;          // a dangling link is there, not nothing
    if (p.empty() || p == "/") return true;
    const std::size_t slash = p.rfind('/');
    if (slash == std::string::npos) return true;
    p = slash == 0 ? std::string("/") : p.substr(0, slash);
    self = false;
  }
}

NodeFacts GatherNodeFacts(const FileReader& fs, const GatherOptions& options) {
  NodeFacts facts;
  // HostPath("/x") is root + "/x" for every reader: keep the root so facts can name host paths.
  const std::string probe = fs.HostPath("/x");
  facts.root = probe.substr(0, probe.size() - 2);
  GatherHostFacts(fs, &facts);
  GatherHostEvidence(fs, &facts, options);
  IbGatherer(fs, &facts).Run();
  GatherIbCounters(fs, &facts);
#ifdef SAFE_LAUNCH_HAVE_IBVERBS
  if (!fs.IsSysroot() && !facts.ib_ports.empty()) QueryActiveMtus(&facts.ib_ports);
#endif
  return facts;
}

}  // namespace sl
