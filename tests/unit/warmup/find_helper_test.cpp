#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/install_layout.h"
#include "warmup/warmup_phase.h"

namespace fs = std::filesystem;

namespace {

// A fresh prefix P with P/bin/ and, on request, an executable helper in `dir` (relative to P).
struct Prefix {
  fs::path root = fs::temp_directory_path() / ("sl-prefix-" + std::to_string(::getpid()));
  Prefix() {
    fs::remove_all(root);
    fs::create_directories(root / "bin");
  }
  ~Prefix() { fs::remove_all(root); }
  std::string AddHelper(const std::string& dir, bool executable = true) {
    fs::create_directories(root / dir);
    const fs::path p = root / dir / "safe-launch-warmup";
    std::ofstream(p) << "#!/bin/sh\n";
    ::chmod(p.c_str(), executable ? 0755 : 0644);
    return p.string();
  }
  sl::InstallLayout Layout() const {
    return sl::LayoutForBinary((root / "bin" / "safe-launch").string());
  }
};

}  // namespace

TEST_CASE("the installed helper is found in P/libexec/safe-launch, before one next to the binary") {
  Prefix p;
  const std::string libexec = p.AddHelper("libexec/safe-launch");
  p.AddHelper("bin");
  CHECK(sl::warmup::FindWarmupBinary(p.Layout()) == libexec);
}

TEST_CASE("a helper next to the binary is found (build tree, device kit)") {
  Prefix p;
  const std::string beside = p.AddHelper("bin");
  CHECK(sl::warmup::FindWarmupBinary(p.Layout()) == beside);
}

TEST_CASE("no executable helper, or no layout, finds nothing") {
  Prefix p;
  p.AddHelper("libexec/safe-launch", /*executable=*/false);
  CHECK(sl::warmup::FindWarmupBinary(p.Layout()).empty());  // root too: no x bit at all
  CHECK(sl::warmup::FindWarmupBinary(sl::InstallLayout{}).empty());
}
