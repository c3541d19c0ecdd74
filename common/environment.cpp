#include "common/environment.h"

#include <cstring>

extern char** environ;

namespace sl {

Environment ProcessEnvironment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    env.emplace(std::string(static_cast<const char*>(*e), eq), std::string(eq + 1));
  }
  return env;
}

std::optional<std::string> Lookup(const Environment& env, std::string_view name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

}  // namespace sl
