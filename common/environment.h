#pragma once
// The process environment as a value, so pure code (resolve, lint) never calls getenv.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace sl {

using Environment = std::map<std::string, std::string, std::less<>>;

/// Snapshot of this process's environ.
Environment ProcessEnvironment();
std::optional<std::string> Lookup(const Environment& env, std::string_view name);

}  // namespace sl
