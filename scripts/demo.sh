#!/usr/bin/env bash
# The main job, as a demo on a fresh Debian 12 machine: installs packages, builds, then shows
# what safe-launch does today on this machine and on a fixture tree of a broken RoCE node.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
SL=build/bin/safe-launch
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "preflight of this machine"
$SL preflight || true

step "hang detection: replay of a real torch 2.11 watchdog timeout -> bundle, job stopped (exit 124)"
DEMO_RUN=$(mktemp -d)/run
$SL --no-preflight --no-warmup --run-dir "$DEMO_RUN" -- build/bin/sl-test-child replay \
  tests/fixtures/logs/watchdog_timeout.torchrun.txt 100 hang || echo "safe-launch exited $?"
ls -l "$DEMO_RUN"
sed -n 1,20p "$DEMO_RUN"/hang-*/summary.md
