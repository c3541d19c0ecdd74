#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs packages, builds, runs ctest
# (unit tests and integration tests that drive the real binary). Needs root for apt and for the
# network-namespace tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
# One `cores` slot per CPU: every test takes one, but those labelled `waits` (they mostly sleep)
# take none and run in the 4 places beyond the CPUs (tests/CMakeLists.txt, "Scheduling").
cpus=$(nproc)
printf '{"version": {"major": 1, "minor": 0}, "local": [{"cores": [{"id": "0", "slots": %d}]}]}\n' \
  "$cpus" >ctest-resources.json
ctest --output-on-failure -j "$((cpus + 4))" --resource-spec-file ctest-resources.json --timeout 600
