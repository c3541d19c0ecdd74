#include "common/parse/nvidia_proc.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"

namespace sl {
Result<NvidiaDriverVersion> ParseNvidiaVersion(std::string_view text) {
  auto lines = SplitLines(text);
  std::string_view first = lines.empty() ? std::string_view{} : Trim(lines[0]);
  if (!StartsWith(first, "NVRM version:")) {
    return MakeError("first line is not \"NVRM version: ...\"");
  }
  NvidiaDriverVersion v;
  v.open_kernel = first.find("Open Kernel Module") != std::string_view::npos;
  // The version is the first field shaped like N.N[.N] after "Kernel Module".
  std::size_t km = first.find("Kernel Module");
  std::string_view rest = km == std::string_view::npos ? first.substr(13) : first.substr(km);
  for (auto f : Fields(rest)) {
    if (f.empty() || !std::isdigit(static_cast<unsigned char>(f[0]))) continue;
    if (f.find('.') == std::string_view::npos) continue;
    if (!std::all_of(f.begin(), f.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
        })) {
      continue;
    }
    v.version = std::string(f);
    auto major = ParseInt(f.substr(0, f.find('.')));
    v.major = major.ok() ? static_cast<int>(*major) : 0;
    return v;
  }
  return MakeError("no driver version number in \"" + Printable(first) + "\"");
}

std::string ParseGpuInformationModel(std::string_view text) {
  for (const auto& line : SplitLines(text)) {
    std::string_view t = Trim(line);
    if (StartsWith(t, "Model:")) return std::string(Trim(t.substr(6)));
  }
  return {};
}

}  // namespace sl
