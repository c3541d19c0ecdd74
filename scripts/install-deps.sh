#!/usr/bin/env bash
# Installs the Debian 12 packages safe-launch needs.
#   install-deps.sh          everything: build, test suite, packaging
#   install-deps.sh --demo   only what the demo builds and runs
#   install-deps.sh --dev    everything, and the development tooling (scikit-learn for the
#                            diagnosis model's refit, scripts/fit-diagnosis.sh)
# Idempotent: skips apt when everything is already there.
set -euo pipefail
# Build and run (the demo).
PKGS=(
  build-essential cmake ninja-build pkg-config git
  libtorch-dev libgloo-dev python3-torch
  libboost1.74-dev libboost-filesystem1.74-dev
  libtomlplusplus-dev catch2 libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  rdma-core libibverbs-dev ibverbs-utils libarchive-dev
  libncurses-dev  # the `safe-launch watch` screen (launcher/watch_screen.cpp)
  libssl-dev  # libcrypto: HMAC-SHA256 of the warm-up store (warmup/store_auth.cpp)
  iproute2 procps ccache
)
[ "${1:-}" = --demo ] || PKGS+=(
  openmpi-bin slurm-wlm
  clang libclang-rt-14-dev
  chromium  # headless DOM check of diagnosis.html (tests/integration/diagnose_fr)
  patchelf  # the relocatable tarball (packaging/make-tarball.sh) and scripts/device-kit.sh
  pandoc    # safe-launch(1) from doc/manual.md (packaging/manpage.cmake)
  lintian man-db bash-completion  # the package test (tests/integration/package)
)
[ "${1:-}" = --dev ] && PKGS+=(python3-sklearn)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp "${TMPDIR:-/tmp}/safe-launch-apt.XXXXXX.log")
  echo "  installing ${#missing[@]} package(s) and their dependencies with apt (log: $log)"
  { $SUDO apt-get update -qq && echo "@@ apt-get install" &&
      $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1 &
  apt_pid=$!
  if [ -t 1 ]; then
    # On a terminal one line, rewritten each second: the phase and the packages set up so far
    # (apt's own progress needs a terminal it is not given here). Nothing extra otherwise.
    while kill -0 "$apt_pid" 2>/dev/null; do
      if grep -q '^@@ apt-get install' "$log"; then
        last=$(grep '^Setting up ' "$log" | tail -1 | awk '{print $3}')
        printf '\r\033[K  apt-get install: %d package(s) set up%s' \
          "$(grep -c '^Setting up ' "$log" || true)" "${last:+ (last: $last)}"
      else
        printf '\r\033[K  apt-get update: reading the package lists'
      fi
      sleep 1
    done
    printf '\r\033[K'
  fi
  if ! wait "$apt_pid"; then
    tail -20 "$log"
    echo "install-deps: apt-get failed; the whole log is $log" >&2
    exit 1
  fi
  echo "  installed: $(grep -c '^Setting up ' "$log") package(s)"
else
  echo "  all ${#PKGS[@]} packages installed already"
fi
