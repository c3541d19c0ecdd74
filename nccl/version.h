#pragma once
// NCCL and PyTorch versions: parsing and comparison (pure). Finding what the job will load is
// recipes/version_probe.h.
#include <compare>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace sl::nccl {

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

}  // namespace sl::nccl
