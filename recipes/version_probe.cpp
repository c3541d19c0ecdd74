// Version detection: the only code in recipes/ that touches the machine (stat, read, dlopen, one
// python run). Everything it finds is cached by file path + mtime, so `env` stays fast.
#include "recipes/version_probe.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/file_writer.h"
#include "common/json_text.h"
#include "common/spawn.h"
#include "common/strings.h"

namespace sl::recipes {

using nccl::NcclVersionFromCode;
using nccl::ParseVersion;
namespace {

struct FileStamp {
  bool exists = false;
  long long mtime_ns = 0;
  long long size = 0;
  std::string Key() const { return std::to_string(mtime_ns) + ":" + std::to_string(size); }
};

FileStamp Stamp(const std::string& path) {
  struct stat st {};
  FileStamp s;
  if (::stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  s.size = static_cast<long long>(st.st_size);
  return s;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cache {
 public:
  explicit Cache(std::string dir) : dir_(std::move(dir)) {
    if (dir_.empty()) return;
    path_ = dir_ + "/versions.json";
    // The cache is ours but anything may have been left there (an old format, a hand edit, a
    // directory): what does not have the expected shape is ignored and rewritten, never fatal.
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::rmdir(path_.c_str()) != 0) {
      path_.clear();  // a non-empty directory in the way: run without a cache
      return;
    }
    std::ifstream in(path_);
    if (in) {
      data_ = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (!data_.is_object()) data_ = nlohmann::json::object();
    }
  }
  /// The cached value for `key` when it was stored for `stamp`; nullopt for a miss or an entry of
  /// any other shape (the caller checks the value's own shape).
  std::optional<nlohmann::json> Get(const std::string& key, const std::string& stamp) const {
    if (path_.empty()) return std::nullopt;
    auto e = data_.find(key);
    if (e == data_.end() || !e->is_object()) return std::nullopt;
    auto s = e->find("stamp");
    auto v = e->find("value");
    if (s == e->end() || !s->is_string() || s->get_ref<const std::string&>() != stamp ||
        v == e->end()) {
      return std::nullopt;
    }
    return *v;
  }
  void Put(const std::string& key, const std::string& stamp, nlohmann::json value) {
    if (path_.empty()) return;
    data_[key] = {{"stamp", stamp}, {"value", std::move(value)}};
    dirty_ = true;
  }
  void Save() {
    if (!dirty_ || path_.empty()) return;
    // mkdir -p; a cache we cannot write is only slower, never an error.
    std::string partial;
    for (const auto& part : Split(dir_, '/')) {
      partial += "/" + part;
      ::mkdir(partial.c_str(), 0700);
    }
    // The one writer: an O_EXCL|O_NOFOLLOW temp name (the old "<path>.<pid>" was predictable and
    // followed a planted link), renamed relative to the directory's fd, 0600.
    (void)WriteFileAtomic(path_, JsonText(data_, -1), kPrivateFile);
  }

 private:
  std::string dir_, path_;
  nlohmann::json data_ = nlohmann::json::object();
  bool dirty_ = false;
};

std::string DefaultCacheDir(const Environment& env) {
  if (auto x = Lookup(env, "XDG_CACHE_HOME"); x && !x->empty()) return *x + "/safe-launch";
  if (auto h = Lookup(env, "HOME"); h && !h->empty()) return *h + "/.cache/safe-launch";
  return "";
}

// How long the interpreter may take to print its sys.path: it imports only sys and json, so
// seconds mean a hung file system or a sitecustomize that blocks.
constexpr std::chrono::seconds kPythonDeadline{20};

// Runs `python -c ...` without a shell through the one Spawn; stdout only, bounded, killed at
// the deadline, and ended within a tick by a SIGTERM/SIGINT (the launcher then stops the phase).
std::optional<std::string> RunPython(const std::string& python, const std::string& code) {
  SpawnSpec spec;
  spec.argv = {python, "-c", code};
  spec.env = ProcessEnvironment();
  auto r = RunChild(std::move(spec), kPythonDeadline);
  if (!r.ok() || r->exec_errno != 0 || r->exit_status != 0) return std::nullopt;
  return r->output;
}

// The Python's sys.path (where site-packages are), cached by the interpreter's stamp.
std::vector<std::string> PythonPaths(const std::string& python, Cache& cache,
                                     std::string* problem) {
  FileStamp st = Stamp(python);
  if (!st.exists) {
    *problem = python + " not found";
    return {};
  }
  std::string key = "syspath:" + python;
  if (auto v = cache.Get(key, st.Key()); v && v->is_array()) {
    std::vector<std::string> cached;
    for (const auto& p : *v) {
      if (!p.is_string()) break;
      cached.push_back(p.get<std::string>());
    }
    if (cached.size() == v->size()) return cached;  // else: not ours, probe again
  }
  auto out = RunPython(python, "import sys, json; print(json.dumps(sys.path))");
  if (!out) {
    *problem = python + " could not be run";
    return {};
  }
  auto j = nlohmann::json::parse(*out, nullptr, false);
  if (!j.is_array()) {
    *problem = python + " printed no sys.path";
    return {};
  }
  std::vector<std::string> paths;
  for (const auto& p : j) {
    if (p.is_string() && !p.get<std::string>().empty()) paths.push_back(p.get<std::string>());
  }
  cache.Put(key, st.Key(), paths);
  return paths;
}

std::optional<Version> TorchVersionFile(const std::string& path, std::string* raw) {
  // torch/version.py: "__version__ = '2.11.0+cu130'"
  for (const auto& line : SplitLines(ReadSmallFile(path))) {
    auto t = Trim(line);
    if (!StartsWith(t, "__version__")) continue;
    auto q = t.find_first_of("'\"");
    if (q == std::string_view::npos) continue;
    auto end = t.find(t[q], q + 1);
    if (end == std::string_view::npos) continue;
    *raw = std::string(t.substr(q + 1, end - q - 1));
    auto v = ParseVersion(*raw);
    if (v.ok()) return *v;
  }
  return std::nullopt;
}

std::optional<Version> NcclLibVersion(const std::string& path, Cache& cache) {
  FileStamp st = Stamp(path);
  if (!st.exists) return std::nullopt;
  std::string key = "nccl:" + path;
  if (auto v = cache.Get(key, st.Key());
      v && v->is_number_integer() && *v > 0 && *v <= std::numeric_limits<int>::max()) {
    return NcclVersionFromCode(v->get<int>());
  }
  // ncclGetVersion only reports the compiled-in NCCL_VERSION_CODE: no GPU or driver needed.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::nullopt;
  using GetVersionFn = int (*)(int*);
  auto fn = reinterpret_cast<GetVersionFn>(::dlsym(handle, "ncclGetVersion"));
  int code = 0;
  bool ok = fn != nullptr && fn(&code) == 0 && code > 0;
  // Deliberately not dlclose()d: NCCL registers atexit handlers in some versions.
  if (!ok) return std::nullopt;
  cache.Put(key, st.Key(), code);
  return NcclVersionFromCode(code);
}

}  // namespace

Result<Versions> DetectVersions(const DetectOptions& options, const Environment& env) {
  Versions out;
  if (options.nccl_override) {
    auto v = ParseVersion(*options.nccl_override, "--nccl-version");
    if (!v.ok()) return v.error();
    out.nccl = *v;
    out.nccl_source = "--nccl-version";
  }
  if (options.torch_override) {
    auto v = ParseVersion(*options.torch_override, "--torch-version");
    if (!v.ok()) return v.error();
    out.torch = *v;
    out.torch_source = "--torch-version";
  }
  if (out.nccl && out.torch) return out;

  std::string cache_dir = options.cache_dir == "-"    ? std::string()
                          : options.cache_dir.empty() ? DefaultCacheDir(env)
                                                      : options.cache_dir;
  Cache cache(cache_dir);
  std::string problem;
  std::vector<std::string> paths = PythonPaths(options.python, cache, &problem);

  if (!out.torch) {
    out.torch_source =
        problem.empty() ? "no torch/version.py on " + options.python + "'s sys.path" : problem;
    for (const auto& dir : paths) {
      std::string f = dir + "/torch/version.py";
      std::string raw;
      if (auto v = TorchVersionFile(f, &raw)) {
        out.torch = *v;
        out.torch_source = f + " (" + raw + ")";
        break;
      }
    }
  }
  if (!out.nccl) {
    std::vector<std::string> candidates;
    for (const auto& dir : paths) candidates.push_back(dir + "/nvidia/nccl/lib/libnccl.so.2");
    if (!options.system_nccl.empty()) candidates.push_back(options.system_nccl);
    out.nccl_source = "no libnccl.so.2 in the torch wheel or at " + options.system_nccl;
    for (const auto& c : candidates) {
      if (auto v = NcclLibVersion(c, cache)) {
        out.nccl = *v;
        out.nccl_source = c;
        break;
      }
    }
  }
  cache.Save();
  return out;
}

}  // namespace sl::recipes
