#pragma once
// NCCL and PyTorch versions: parsing/comparison (pure) and detection of what the job will load
// (version_probe.cpp: the only code in recipes/ that touches the machine).
#include <compare>
#include <optional>
#include <string>
#include <string_view>

#include "common/environment.h"
#include "common/result.h"

namespace sl::recipes {

/// "2.28.9", "2.11.0+cu130", "1.13.0a0": the numeric major.minor.patch prefix.
struct Version {
  int major = 0, minor = 0, patch = 0;
  auto operator<=>(const Version&) const = default;
  std::string ToString() const;
};

/// Parses the leading "X.Y[.Z]" of a version string; error names `what` and the text.
Result<Version> ParseVersion(std::string_view text, std::string_view what = "version");
/// ncclGetVersion() code (22809 for 2.28.9; 2903 for the pre-2.9 encoding 2.9.3 era).
Version NcclVersionFromCode(int code);

/// What the job will run with. A missing version means "unknown": resolution then assumes the
/// newest behaviour and says so in the plan.
struct Versions {
  std::optional<Version> nccl;
  std::optional<Version> torch;
  std::string nccl_source;   ///< "/path/libnccl.so.2", "--nccl-version", or why unknown
  std::string torch_source;  ///< "/path/torch/version.py", "--torch-version", or why unknown
};

struct DetectOptions {
  std::string python = "/usr/bin/python3";    ///< the Python the job uses
  std::optional<std::string> nccl_override;   ///< --nccl-version
  std::optional<std::string> torch_override;  ///< --torch-version
  /// Cache directory; "" = $XDG_CACHE_HOME/safe-launch or ~/.cache/safe-launch. "-" = no cache.
  std::string cache_dir;
  /// System libnccl locations tried when the torch wheel carries none.
  std::string system_nccl = "/usr/local/cuda/lib64/libnccl.so.2";
};

/// Finds the NCCL the job will load (the torch wheel's nvidia/nccl/lib/libnccl.so.2 under the
/// Python's site-packages, else the system one; version via dlopen + ncclGetVersion, no GPU
/// needed) and torch's version (torch/version.py). Results are cached by file path + mtime, so
/// repeated calls cost a few stat()s. Never fails: what cannot be found is left unknown with the
/// reason in *_source. Bad override strings are errors.
Result<Versions> DetectVersions(const DetectOptions& options, const Environment& env);

}  // namespace sl::recipes
