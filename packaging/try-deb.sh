#!/usr/bin/env bash
# By hand, not in CI (it installs into the real system): dpkg -i the .deb(s) on a clean machine,
# then man safe-launch, the completion, a preflight and the demo's supervised steps from the
# installed /usr/bin/safe-launch, then dpkg -r. As root; on a machine where safe-launch is
# not installed yet (it refuses otherwise, so it never removes an installation it did not make).
# usage: bash packaging/try-deb.sh [build-dir]     (cmake --build build --target package first)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
shopt -s nullglob
debs=("$B"/safe-launch_*.deb "$B"/safe-launch-warmup_*.deb)
((${#debs[@]})) || { echo "try-deb: no .deb in $B: cmake --build $B --target package" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "try-deb: run as root (dpkg -i)" >&2; exit 2; }
if dpkg-query -W -f='${Status}' safe-launch 2>/dev/null | grep -q "install ok installed"; then
  echo "try-deb: safe-launch is installed already; this script only tries a clean install" >&2
  exit 2
fi
step() { printf '\n==== %s\n' "$*"; }
T=$(mktemp -d /tmp/sl-try-deb.XXXXXX)
cleanup() {
  step "dpkg -r"
  dpkg -r safe-launch-warmup safe-launch >/dev/null 2>&1 || dpkg -r safe-launch || true
  if [ -e /usr/bin/safe-launch ] || [ -e /usr/libexec/safe-launch ]; then
    echo "try-deb: files left after dpkg -r"
  else
    echo "try-deb: removed (no /usr/bin/safe-launch, no /usr/libexec/safe-launch)"
  fi
  rm -rf "$T"
}
trap cleanup EXIT

step "dpkg -i ${debs[*]}"
# apt resolves the Depends dpkg-shlibdeps computed (dpkg -i alone would stop at a missing one).
apt-get install -y -qq --no-install-recommends "${debs[@]/#/./}" || dpkg -i "${debs[@]}"
dpkg -L safe-launch | grep -E 'bin/|libexec|recipes/|man1|completions|examples/' | head -20

step "man safe-launch"
MANWIDTH=100 man safe-launch | head -30

step "bash completion: safe-launch <TAB>"
bash -c 'source /usr/share/bash-completion/completions/safe-launch
  COMP_WORDS=(safe-launch ""); COMP_CWORD=1; _safe_launch; echo "${COMPREPLY[@]}"'

step "the demo from the installed binary"
FIX=tests/fixtures
safe-launch version
safe-launch preflight --sysroot "$FIX/roce-mtu1500" || echo "(exit $?: the recorded broken node fails, as it should)"
safe-launch env --explain --sysroot "$FIX/ib-healthy" | head -12
# The demo with the installed binary in place of build/bin/safe-launch (it still builds the
# test helper it replays a hang with, and the warm-up helper comes from /usr/libexec/safe-launch).
SAFE_LAUNCH=/usr/bin/safe-launch bash scripts/demo.sh
safe-launch --on-preflight-fail=warn --run-dir "$T/job" -- sh -c 'echo "job sees NCCL_DEBUG=$NCCL_DEBUG"'
echo "try-deb: done"
