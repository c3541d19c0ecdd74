#pragma once
// The Flight Recorder tests' inputs: the real dumps in the source tree and the generated ones in
// the build tree (tests/unit/diagnose/flight_recorder/CMakeLists.txt), found at run time.
#include "tests/unit/test_paths.h"

#define FR_FIXTURES (::sl::test::SourceDir() + "/" FR_FIXTURES_REL)
#define FR_GEN_DIR (::sl::test::BuildDir() + "/" FR_GEN_REL)
