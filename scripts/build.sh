#!/usr/bin/env bash
# Configures and builds safe-launch into build/ (executables in build/bin/).
#   build.sh                  everything: the binary, the warm-up helper, tests, man page
#   build.sh --demo           only what the demo runs: safe-launch and safe-launch-warmup
#   build.sh --demo TARGET... only those of the two (scripts/demo.sh builds safe-launch while
#                             libtorch installs, then safe-launch-warmup)
#   build.sh --configure-only
# Exit status 3: --demo safe-launch-warmup asked for, but CMake did not find libtorch.
# Configuring again is cheap and picks up packages installed since (pandoc, libtorch). Under CI
# (CI=true) warnings are errors; users' builds only print them.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mode=${1:-all}
werror=OFF
[ "${CI:-}" = true ] && werror=ON
# ccache (CMakeLists.txt uses it when installed) keys on paths relative to the repository, and not
# on the build directory: a fresh clone in another folder (a CI run, a second worktree) reuses what
# an earlier build of the same sources compiled. The cost: a reused object's debug line tables name
# the build directory that first compiled it (file:line stay right, relative to the repository).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSAFE_LAUNCH_WERROR=$werror >"$BUILD_DIR/configure.log" 2>&1 ||
  { cat "$BUILD_DIR/configure.log"; exit 1; }
grep -E "^CMake (Warning|Error)" -A3 "$BUILD_DIR/configure.log" || true
case $mode in
  --configure-only) exit 0 ;;
  --demo)
    shift
    targets=("${@:-safe-launch}")
    for t in "${targets[@]}"; do
      case $t in safe-launch | safe-launch-warmup) ;;
        *) echo "build.sh --demo: $t is not one of the demo's targets (safe-launch," \
             "safe-launch-warmup)" >&2; exit 2 ;;
      esac
    done
    has_warmup=0 has_main=0
    ninja_targets=$(ninja -C "$BUILD_DIR" -t targets all)
    grep -q '^safe-launch-warmup:' <<<"$ninja_targets" && has_warmup=1
    grep -q '^sl_warmup_main:' <<<"$ninja_targets" && has_main=1
    if ! (($#)); then
      ((has_warmup)) && targets+=(safe-launch-warmup)
    elif [[ " ${targets[*]} " == *" safe-launch-warmup "* ]] && ! ((has_warmup)); then
      echo "build.sh: no safe-launch-warmup target: CMake did not find libtorch (see" \
        "$BUILD_DIR/configure.log; bash scripts/install-deps.sh --demo-torch installs it)" >&2
      exit 3
    fi
    # The warm-up's libtorch-free half (its CLI and protocol) compiles with safe-launch, while the
    # demo's libtorch install runs: only torch_backend.cpp is left for after it.
    if ((has_main)) && [[ " ${targets[*]} " != *" safe-launch-warmup "* ]]; then
      targets+=(sl_warmup_main)
    fi
    ;;
  all) targets=(all) ;;
  *) echo "usage: build.sh [--demo [TARGET...]|--configure-only]" >&2; exit 2 ;;
esac
# ninja's [n/N] lines become one progress line: rewritten in place on a terminal, every 10% else.
# A bash loop, not awk: Debian's awk is mawk, which reads a pipe in blocks, so the lines would
# come out minutes late, all at once at the end of the build.
progress() {  # WHAT: ninja's output on stdin
  local tty=0 line done=0 total pct next_pct=0 what=$1
  [ -t 1 ] && tty=1
  while IFS= read -r line; do
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\  ]]; then
      done=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
      ((done == 0)) && continue  # [0/2] re-checking the globbed directories: not a build step
      pct=$((100 * done / total))
      if ((tty)); then
        printf '\r  build %s: %d/%d' "$what" "$done" "$total"
      elif ((pct >= next_pct || done == total)); then
        printf '  build %s: %d/%d\n' "$what" "$done" "$total"
        next_pct=$((pct - pct % 10 + 10))
      fi
    elif [[ $line == "ninja: no work to do"* ]]; then
      printf '  build %s: up to date\n' "$what"
    else
      ((tty && done)) && printf '\n'
      printf '%s\n' "$line"
    fi
  done
  ((tty && done)) && printf '\n'
  return 0
}
set -o pipefail
NINJA_STATUS='[%f/%t] ' cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}" 2>&1 |
  progress "${targets[*]}"
