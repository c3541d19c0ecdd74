#pragma once
// Shared helpers of the host check tests (one test file per check beside this one).
#include <algorithm>
#include <string>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "preflight/check.h"
#include "preflight/runner.h"
#include "tests/unit/test_paths.h"

using namespace sl;
using namespace sl::preflight;

// The checks under test, reached through the registry as the runner reaches them.
inline const CheckFn CheckGpuGdr = FindCheck("gpu.gdr")->run;
inline const CheckFn CheckGpuInventory = FindCheck("gpu.inventory")->run;
inline const CheckFn CheckKernelLog = FindCheck("kernel.log")->run;
inline const CheckFn CheckNetIfname = FindCheck("net.ifname")->run;
inline const CheckFn CheckOsMemlock = FindCheck("os.memlock")->run;
inline const CheckFn CheckOsNofile = FindCheck("os.nofile")->run;
inline const CheckFn CheckOsShm = FindCheck("os.shm")->run;
inline const CheckFn CheckOsSysctl = FindCheck("os.sysctl")->run;
inline const CheckFn CheckPciAcs = FindCheck("pci.acs")->run;

inline std::string Fixture(const char* name) { return SL_FIXTURES_DIR + "/" + name; }

struct Run {
  std::vector<Finding> findings;
  NodeFacts facts;
};

inline Run RunCheck(const FileReader& fs, CheckFn fn, Environment env = {}, Thresholds th = {},
                    std::int64_t since = -1) {
  Run r;
  r.facts = GatherNodeFacts(fs);
  CheckContext ctx{r.facts, env, th, false, since};
  r.findings = fn(ctx);
  return r;
}

inline Run RunOnFixture(const char* scenario, CheckFn fn, Environment env = {}) {
  RootedFileReader fs(Fixture(scenario));
  return RunCheck(fs, fn, std::move(env));
}

inline std::vector<Finding> With(const std::vector<Finding>& fs, Outcome o) {
  std::vector<Finding> out;
  std::copy_if(fs.begin(), fs.end(), std::back_inserter(out),
               [&](const Finding& f) { return f.outcome == o; });
  return out;
}

inline const Finding* ForEntity(const std::vector<Finding>& fs, const std::string& entity) {
  for (const auto& f : fs) {
    if (f.entity == entity) return &f;
  }
  return nullptr;
}

inline bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

inline const char* kLimitsHeader =
    "Limit                     Soft Limit           Hard Limit           Units     \n";

inline std::string LimitsWith(const std::string& memlock, const std::string& nofile) {
  char row[256];
  std::string out = kLimitsHeader;
  std::snprintf(row, sizeof row, "%-25s %-20s %-20s %-10s\n", "Max open files", nofile.c_str(),
                nofile.c_str(), "files");
  out += row;
  std::snprintf(row, sizeof row, "%-25s %-20s %-20s %-10s\n", "Max locked memory", memlock.c_str(),
                memlock.c_str(), "bytes");
  out += row;
  return out;
}
