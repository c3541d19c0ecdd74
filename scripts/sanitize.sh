#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (with
# -fsanitize=float-cast-overflow, which GCC's `undefined` group leaves out), in build-asan/.
# Any report fails the run: -fno-sanitize-recover=all, halt_on_error. Not part of CI (it doubles
# the build time on a 2-core machine); run it before a release and after touching parsers or the
# supervisor:   bash scripts/sanitize.sh [ctest -R filter]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
B=${ASAN_BUILD_DIR:-build-asan}
SAN="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer"
if [ ! -f "$B/CMakeCache.txt" ]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_C_FLAGS="$SAN" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
fi
cmake --build "$B" -j "$(nproc)"
# detect_leaks: off for the forked helper children that exec or _exit on purpose; on for the
# rest would need a suppression list for libtorch's and CPython's one-time allocations.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=0:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$B"
if [ $# -gt 0 ]; then
  ctest --output-on-failure -j "$(nproc)" --timeout 900 -R "$1"
else
  ctest --output-on-failure -j "$(nproc)" --timeout 900
fi
