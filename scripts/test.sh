#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs packages, builds, runs ctest
# (unit tests and integration tests that drive the real binary). Needs root for apt and for the
# network-namespace tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
