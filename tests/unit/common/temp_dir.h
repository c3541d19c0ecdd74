#pragma once
// Scratch directories for tests that need a real file system (one helper, not one per file).
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace sl::testing {

/// A fresh directory /tmp/sl-<tag>-XXXXXX (mkdtemp); "" when it could not be made.
inline std::string TempDir(const std::string& tag = "test") {
  std::string tmpl = "/tmp/sl-" + tag + "-XXXXXX";
  return ::mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
}

/// Removes `dir` (and all below it) when destroyed. Declared before an object that writes into
/// the directory from its own thread (a monitor's live-status writer), it is destroyed after that
/// object, so nothing writes into the directory once it is gone.
struct DirCleanup {
  std::string dir;
  ~DirCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace sl::testing
