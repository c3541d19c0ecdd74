#pragma once
// Where a unit test finds the source tree (fixtures, doc/) and its build tree (helpers, generated
// dumps): worked out at run time from the test executable's own path, not compiled in. An object
// file is then the same in every clone, so ccache reuses it across clones and worktrees
// (scripts/build.sh sets CCACHE_BASEDIR); a path compiled into a -D string would differ in each.
#include <string>

namespace sl::test {
/// The CMake build directory above the running test executable (the first with a CMakeCache.txt).
/// SL_TEST_BUILD_DIR overrides it.
const std::string& BuildDir();
/// The source tree that build directory was configured from (CMAKE_HOME_DIRECTORY in its
/// CMakeCache.txt). SL_TEST_SOURCE_DIR overrides it.
const std::string& SourceDir();
}  // namespace sl::test

/// tests/fixtures of the source tree, as a std::string.
#define SL_FIXTURES_DIR (::sl::test::SourceDir() + "/tests/fixtures")
/// The source tree, as a std::string.
#define SL_SOURCE_DIR (::sl::test::SourceDir())
