#pragma once
// Shared helpers of the ib.* check tests (one test file per check beside this one).
#include <catch2/catch.hpp>
#include <memory>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "preflight/check.h"
#include "tests/unit/preflight/ib_sysroot.h"
#include "tests/unit/test_paths.h"

using namespace sl;
using namespace sl::preflight;
using sl::test::IbSysroot;

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

  std::vector<Finding> findings;  ///< of the last FindingFor

  std::vector<Finding> Run(CheckFn fn) {
    facts = GatherNodeFacts(*fs);
    return RunOnFacts(fn);
  }
  // Runs `fn` and returns its finding for `entity` (kept in `findings`); the test fails at once
  // when the check made none.
  const Finding* FindingFor(CheckFn fn, const std::string& entity) {
    findings = Run(fn);
    for (const auto& f : findings) {
      if (f.entity == entity) return &f;
    }
    FAIL("no finding for " << entity);
    return nullptr;
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

// A node on an in-memory tree (ib_sysroot.h).
inline Node OnTree(const IbSysroot& tree) {
  Node n;
  n.fs = tree.shared();
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
