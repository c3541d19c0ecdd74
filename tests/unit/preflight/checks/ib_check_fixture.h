#pragma once
// Shared helpers of the ib.* check tests (one test file per check beside this one).
#include <memory>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "preflight/check.h"
#include "tests/unit/test_paths.h"

using namespace sl;
using namespace sl::preflight;

// The checks under test, reached through the registry as the runner reaches them.
inline const CheckFn CheckIbGid = FindCheck("ib.gid")->run;
inline const CheckFn CheckIbMtu = FindCheck("ib.mtu")->run;
inline const CheckFn CheckIbPortErrors = FindCheck("ib.port.errors")->run;
inline const CheckFn CheckIbPortState = FindCheck("ib.port.state")->run;

struct Node {
  std::shared_ptr<FileReader> fs;
  Environment env;
  Thresholds th;
  bool verbose = false;
  NodeFacts facts;

  std::vector<Finding> Run(CheckFn fn) {
    facts = GatherNodeFacts(*fs);
    return RunOnFacts(fn);
  }
  // For facts the fixture cannot express (verbs' active MTU on a live node).
  std::vector<Finding> RunOnFacts(CheckFn fn) {
    CheckContext ctx{facts, env, th, verbose};
    return fn(ctx);
  }
};

inline Node Fixture(const std::string& name) {
  Node n;
  n.fs = std::make_shared<RootedFileReader>(SL_FIXTURES_DIR + "/" + name);
  return n;
}

inline const Finding* For(const std::vector<Finding>& fs, const std::string& entity) {
  for (const auto& f : fs) {
    if (f.entity == entity) return &f;
  }
  return nullptr;
}

inline int Count(const std::vector<Finding>& fs, Outcome o) {
  int n = 0;
  for (const auto& f : fs) n += f.outcome == o;
  return n;
}

inline bool HasEvidence(const Finding& f, const std::string& source, const std::string& value) {
  for (const auto& e : f.evidence) {
    if (e.source == source && e.value == value) return true;
  }
  return false;
}

inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A one-port RoCE device in memory: GID rows (index, gid, type, ndev) and the netdev MTU.
inline void AddRocePort(MemFileReader& fs, const std::string& dev, const std::string& ifname,
                        int mtu, const std::vector<std::tuple<int, std::string, std::string>>& rows,
                        int table_len = 8) {
  const std::string p = "/sys/class/infiniband/" + dev + "/ports/1";
  fs.AddFile(p + "/state", "4: ACTIVE\n")
      .AddFile(p + "/phys_state", "5: LinkUp\n")
      .AddFile(p + "/rate", "200 Gb/sec (4X HDR)\n")
      .AddFile(p + "/link_layer", "Ethernet\n");
  for (int i = 0; i < table_len; ++i) {
    fs.AddFile(p + "/gids/" + std::to_string(i), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  }
  for (const auto& [i, gid, type] : rows) {
    fs.AddFile(p + "/gids/" + std::to_string(i), gid + "\n")
        .AddFile(p + "/gid_attrs/types/" + std::to_string(i), type + "\n")
        .AddFile(p + "/gid_attrs/ndevs/" + std::to_string(i), ifname + "\n");
  }
  fs.AddFile("/sys/class/net/" + ifname + "/mtu", std::to_string(mtu) + "\n");
}
