// libFuzzer target: recipe TOML (ParseRecipe) and the size strings of [thresholds] (ParseSize,
// whose double -> integer conversion UBSan checks: "99999999999 TiB" must be an error, not UB).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recipes/recipe.h"

#ifndef SL_FUZZ_REPLAY
namespace sl::recipes {
// recipe.cpp looks built-in recipes up here (generated in the real build); none when fuzzing.
// The seed replay (tests/fuzz/replay) links the real build's generated table instead.
const std::vector<std::pair<std::string, std::string>>& EmbeddedRecipes() {
  static const std::vector<std::pair<std::string, std::string>> kNone;
  return kNone;
}
}  // namespace sl::recipes
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)sl::recipes::ParseRecipe(text, "fuzz.toml", nullptr);
  // The same bytes as a size string: keep what a TOML basic string can hold as is.
  std::string size_text;
  for (char c : text.substr(0, 128)) {
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
      size_text.push_back(c);
    }
  }
  for (const char* key : {"min_shm", "min_memlock", "min_rmem_max"}) {
    (void)sl::recipes::ParseRecipe(
        "[thresholds]\n" + std::string(key) + " = \"" + size_text + "\"\n", "fuzz.toml", nullptr);
  }
  return 0;
}
