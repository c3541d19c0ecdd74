#pragma once
// Which NCCL and torch the job will load (the only code in recipes/ that touches the machine).
#include <optional>
#include <string>

#include "common/environment.h"
#include "common/result.h"
#include "nccl/version.h"

namespace sl::recipes {

using nccl::Version;
using nccl::Versions;

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
