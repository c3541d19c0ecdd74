#pragma once
// Every launcher log line goes to stderr as "safe-launch[host:node-rank] level: message", since
// logs of many nodes interleave in one Slurm output file.
#include <spdlog/spdlog.h>

#include <string>

namespace sl::log {

/// Sets the prefix; node_rank "" prints "safe-launch[host]". Safe to call again later
/// (e.g. once the node rank is known).
void Init(const std::string& host, const std::string& node_rank = {}, bool verbose = false);
/// This machine's host name (gethostname), short form.
std::string HostName();

template <typename... Args>
void Info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void Warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::warn(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void Error(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::error(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void Debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::debug(fmt, std::forward<Args>(args)...);
}

}  // namespace sl::log
