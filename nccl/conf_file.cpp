#include "nccl/conf_file.h"

#include <set>

#include "common/strings.h"

namespace sl::nccl {
namespace {

constexpr std::size_t kNcclConfField = 1023;   // setEnvFile's envVar/envValue buffers, less NUL
constexpr Version kNcclConfFileVar{2, 23, 4};  // first NCCL that honours NCCL_CONF_FILE

}  // namespace

std::vector<ConfValue> ParseConfFile(std::string_view text, std::string_view path,
                                     std::vector<Error>* problems) {
  std::vector<ConfValue> out;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line[0] == '#') continue;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    ConfValue v;
    v.name = std::string(line.substr(0, std::min(eq, kNcclConfField)));
    v.value = std::string(line.substr(eq + 1, kNcclConfField));
    v.origin = std::string(path) + ":" + std::to_string(line_no);
    if (problems && (v.name != Trim(v.name) || (!v.value.empty() && v.value.back() == '\r'))) {
      problems->push_back(
          MakeError("NCCL reads this line as variable '" + Printable(v.name) + "' = '" +
                        Printable(v.value) + "' (spaces or a CR are kept), so it has no effect",
                    v.origin, "write NAME=VALUE with no spaces around '=' and Unix line ends"));
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::string> ConfFilePaths(const Environment& env, const std::optional<Version>& nccl) {
  std::vector<std::string> out;
  auto conf = Lookup(env, "NCCL_CONF_FILE");
  if (conf && !conf->empty() && (!nccl || *nccl >= kNcclConfFileVar)) {
    out.push_back(*conf);
  } else if (auto home = Lookup(env, "HOME"); home && !home->empty()) {
    out.push_back(*home + "/.nccl.conf");
  }
  out.push_back("/etc/nccl.conf");
  return out;
}

ConfFiles ReadConfFiles(const FileReader& fs, const Environment& env,
                        const std::optional<Version>& nccl) {
  ConfFiles out;
  std::set<std::string> seen;
  for (const std::string& path : ConfFilePaths(env, nccl)) {
    if (!fs.Exists(path)) continue;
    auto text = fs.ReadFile(path, 1u << 20);
    if (!text.ok()) {
      Error e = text.error();
      e.message = "NCCL configuration file exists but cannot be read (" + e.message +
                  "); NCCL skips it silently";
      e.fix = "make it readable by the job's user, or remove it";
      out.problems.push_back(std::move(e));
      continue;
    }
    out.read.push_back(path);
    for (ConfValue& v : ParseConfFile(*text, path, &out.problems)) {
      if (seen.insert(v.name).second) out.values.push_back(std::move(v));
    }
  }
  return out;
}

Environment EffectiveEnvironment(const ConfFiles& conf, Environment env) {
  for (const ConfValue& v : conf.values) env.emplace(v.name, v.value);  // never overwrites
  return env;
}

}  // namespace sl::nccl
