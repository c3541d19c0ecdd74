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
