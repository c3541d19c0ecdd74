// libFuzzer target: /proc/mounts and /proc/meminfo text and tmpfs size options (os.shm), plus
// the /proc/net parsers behind interface addresses (fib_trie, route, if_inet6).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/parse/mounts.h"
#include "common/parse/net_proc.h"
#include "common/parse/nvidia_proc.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto mounts = sl::ParseProcMounts(text); mounts.ok()) {
    for (const auto& m : *mounts) {
      if (auto s = sl::MountOption(m.options, "size")) (void)sl::ParseTmpfsSize(*s, 1ull << 40);
    }
  }
  (void)sl::ParseMemTotal(text);
  (void)sl::ParseTmpfsSize(text, 1ull << 40);
  (void)sl::ParseFibTrieLocal(text);
  if (auto routes = sl::ParseProcRoute(text); routes.ok()) {
    (void)sl::InterfaceForIpv4(*routes, "10.0.0.1");
  }
  (void)sl::ParseIfInet6(text);
  (void)sl::ParseNvidiaVersion(text);
  return 0;
}
