#pragma once
// The one way safe-launch turns JSON into text. nlohmann::json::dump() throws on invalid UTF-8,
// and the values safe-launch writes come from places nobody controls: the job's argv and output,
// environment values, host and device names, file paths. Here invalid bytes become U+FFFD, so a
// Latin-1 byte costs one character, never the file or the process.
#include <nlohmann/json.hpp>
#include <string>

namespace sl {

/// `j` as text: `indent` < 0 for one line, else pretty-printed with that many spaces. Never
/// throws; invalid UTF-8 in strings is replaced by U+FFFD.
std::string JsonText(const nlohmann::json& j, int indent = 2);

}  // namespace sl
