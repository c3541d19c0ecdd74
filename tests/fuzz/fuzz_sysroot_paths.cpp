// libFuzzer target: node paths under a --sysroot. A fixed tree beside a file marked OUTSIDE links
// out in every way (absolute, ../ past the root, through directory links, loops); whatever path
// the input names, neither openat2(RESOLVE_IN_ROOT) nor the user-space walk may read the marker.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "common/file_reader.h"

namespace {

const std::string& Root() {
  static const std::string root = [] {
    char tmpl[] = "/tmp/sl-fuzz-sysroot-XXXXXX";
    std::string host = ::mkdtemp(tmpl);
    std::ofstream(host + "/outside") << "OUTSIDE";
    std::string r = host + "/root";
    ::mkdir(r.c_str(), 0755);
    ::mkdir((r + "/a").c_str(), 0755);
    ::mkdir((r + "/a/b").c_str(), 0755);
    std::ofstream(r + "/a/b/f") << "inside";
    ::symlink((host + "/outside").c_str(), (r + "/a/hostabs").c_str());
    ::symlink(host.c_str(), (r + "/a/hostdir").c_str());
    ::symlink("../../../../../outside", (r + "/a/b/up").c_str());
    ::symlink("..", (r + "/a/b/parent").c_str());
    ::symlink("/a/b", (r + "/abs").c_str());
    ::symlink("loop", (r + "/loop").c_str());
    return r;
  }();
  // The scratch tree goes when the process exits (the seed replay runs it in CI).
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(std::filesystem::path(root).parent_path(), ec);
    }
  } cleanup;
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path(reinterpret_cast<const char*>(data), size);
  if (path.find('\0') != std::string::npos) return 0;
  for (auto mode : {sl::ResolveMode::kAuto, sl::ResolveMode::kWalk}) {
    sl::RootedFileReader fs(Root(), mode);
    auto text = fs.ReadFile(path, 64);
    if (text.ok() && *text == "OUTSIDE") std::abort();  // read the host through the sysroot
    auto names = fs.ListDir(path);
    if (names.ok()) {
      for (const auto& n : *names) {
        if (n == "root" || n == "outside") std::abort();  // listed the host directory
      }
    }
    (void)fs.ReadLink(path);
    (void)fs.Exists(path);
    (void)fs.IsDir(path);
  }
  return 0;
}
