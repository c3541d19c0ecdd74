#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <unistd.h>

namespace sl::log {
namespace {
std::string g_prefix = "safe-launch";
}

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  std::string h(buf);
  if (auto dot = h.find('.'); dot != std::string::npos) h.resize(dot);
  return h;
}

void Init(const std::string& host, const std::string& node_rank, bool verbose) {
  g_prefix = "safe-launch[" + host + (node_rank.empty() ? "" : ":" + node_rank) + "]";
  // Unsynchronised stderr sink: lines are written whole; no colour so logs stay greppable.
  static int generation = 0;
  auto logger = spdlog::stderr_logger_st("safe-launch-" + std::to_string(++generation));
  std::string pattern = g_prefix;
  // spdlog treats '%' as a flag; host names never contain it, but be safe.
  for (std::size_t i = 0; (i = pattern.find('%', i)) != std::string::npos; i += 2) {
    pattern.insert(i, "%");
  }
  logger->set_pattern(pattern + " %l: %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace sl::log
