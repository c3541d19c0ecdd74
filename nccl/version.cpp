#include "nccl/version.h"

#include <cctype>

#include "common/strings.h"

namespace sl::nccl {

std::string Version::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

Result<Version> ParseVersion(std::string_view text, std::string_view what) {
  std::string_view s = Trim(text);
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  int parts[3] = {0, 0, 0};
  int count = 0;
  std::size_t i = 0;
  while (count < 3) {
    std::size_t start = i;
    long value = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      value = value * 10 + (s[i] - '0');
      if (value > 100000) break;
      ++i;
    }
    if (i == start) break;
    parts[count++] = static_cast<int>(value);
    if (i < s.size() && s[i] == '.') {
      ++i;
    } else {
      break;
    }
  }
  if (count < 2) {
    return MakeError("'" + std::string(text) + "' is not a version (expected X.Y or X.Y.Z)",
                     std::string(what), "give it like 2.28.9 or 2.11.0");
  }
  return Version{parts[0], parts[1], parts[2]};
}

Version NcclVersionFromCode(int code) {
  // NCCL >= 2.9 encodes X*10000 + Y*100 + Z; older releases used X*1000 + Y*100 + Z.
  if (code >= 10000) return Version{code / 10000, (code % 10000) / 100, code % 100};
  return Version{code / 1000, (code % 1000) / 100, code % 100};
}

}  // namespace sl::nccl
