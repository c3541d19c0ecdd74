#!/usr/bin/env bash
# Installs the Debian 12 packages safe-launch needs.
#   install-deps.sh               everything: build, test suite, packaging
#   install-deps.sh --demo        only what the demo builds and runs (--demo-tools + --demo-torch)
#   install-deps.sh --demo-tools  the demo's first half: compiler, CMake/Ninja, the header
#                                 libraries; enough to configure and build the safe-launch binary
#   install-deps.sh --demo-torch  the demo's second half: libtorch and torch (~350 packages with
#                                 their closure); scripts/demo.sh installs it while it builds
#   install-deps.sh --dev         everything, and the development tooling (scikit-learn for the
#                                 diagnosis model's refit, scripts/fit-diagnosis.sh)
# Idempotent: skips apt when everything is already there.
set -euo pipefail
mode=${1:-all}
# Configure and build safe-launch (python3 and catch2: the test tree is configured too, so that
# the demo's build/ is the test suite's, with nothing rebuilt by scripts/test.sh).
TOOLS=(
  build-essential cmake ninja-build pkg-config python3 catch2
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  rdma-core libibverbs-dev ibverbs-utils libarchive-dev
  libncurses-dev  # the `safe-launch watch` screen (launcher/watch_screen.cpp)
  libssl-dev  # libcrypto: HMAC-SHA256 of the warm-up store (warmup/store_auth.cpp)
  iproute2 procps
)
# The warm-up helper (libtorch headers, Gloo) and the demo's torchrun job.
TORCH=(libtorch-dev libgloo-dev python3-torch)
# The test suite, packaging and development.
FULL=(
  git ccache openmpi-bin slurm-wlm
  clang libclang-rt-14-dev
  chromium  # headless DOM check of diagnosis.html (tests/integration/diagnose_fr)
  patchelf  # the relocatable tarball (packaging/make-tarball.sh) and scripts/device-kit.sh
  pandoc    # safe-launch(1) from doc/manual.md (packaging/manpage.cmake)
  lintian man-db bash-completion  # the package test (tests/integration/package)
)
case $mode in
  --demo-tools) PKGS=("${TOOLS[@]}") ;;
  --demo-torch) PKGS=("${TORCH[@]}") ;;
  --demo) PKGS=("${TOOLS[@]}" "${TORCH[@]}") ;;
  all) PKGS=("${TOOLS[@]}" "${TORCH[@]}" "${FULL[@]}") ;;
  --dev) PKGS=("${TOOLS[@]}" "${TORCH[@]}" "${FULL[@]}" python3-sklearn) ;;
  *) echo "usage: install-deps.sh [--demo|--demo-tools|--demo-torch|--dev]" >&2; exit 2 ;;
esac
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! ((${#missing[@]})); then
  echo "  all ${#PKGS[@]} packages installed already"
  exit 0
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp "${TMPDIR:-/tmp}/safe-launch-apt.XXXXXX.log")
echo "  installing ${#missing[@]} package(s) and their dependencies with apt (log: $log)"
# The package lists are fetched once: not again when they are less than an hour old (the demo's
# second half runs minutes after its first).
update=(true)
[ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -60 2>/dev/null)" ] ||
  update=(${SUDO:+"$SUDO"} apt-get update -qq)
# --force-unsafe-io: dpkg does not fsync every file it unpacks (hundreds of packages; a crash
# mid-install is repaired by running this again, as after any interrupted apt).
{ "${update[@]}" && echo "@@ apt-get install" && $SUDO apt-get install -y -qq \
    --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${missing[@]}"; } >"$log" 2>&1 &
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
