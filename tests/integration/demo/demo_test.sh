#!/usr/bin/env bash
# The demo builds only what it runs (issue 22): scripts/build.sh --demo asks for safe-launch and
# safe-launch-warmup and nothing else, the real build graph of those two compiles no test and
# safe-launch needs no libtorch (so it builds while libtorch installs), and scripts/demo.sh builds
# and installs only through the demo's modes.
#   demo_test.sh CASE BUILD_DIR SOURCE_DIR
set -euo pipefail
case_name=$1 build_dir=$2 src=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }

# A PATH whose cmake and ninja only record what build.sh asks of them.
fake_tools() {  # TARGETS_NINJA_LISTS...
  mkdir -p "$T/bin"
  cat >"$T/bin/cmake" <<'SH'
#!/bin/sh
if [ "$1" = --build ]; then echo "build $*" >>"$FAKE_LOG"; echo "ninja: no work to do."
else echo "configure $*" >>"$FAKE_LOG"; fi
SH
  printf '#!/bin/sh\nfor t in %s; do echo "$t: phony"; done\n' "$*" >"$T/bin/ninja"
  chmod +x "$T/bin/cmake" "$T/bin/ninja"
  export FAKE_LOG=$T/log PATH=$T/bin:$PATH
  : >"$FAKE_LOG"
}
built_targets() { sed -n 's/^build .*--target //p' "$FAKE_LOG"; }

case $case_name in
  build-demo)
    fake_tools all safe-launch safe-launch-warmup sl_common_test
    BUILD_DIR=$T/b bash "$src/scripts/build.sh" --demo >"$T/out" 2>&1 || fail "$(cat "$T/out")"
    [ "$(built_targets)" = "safe-launch safe-launch-warmup" ] ||
      fail "build.sh --demo built '$(built_targets)', not 'safe-launch safe-launch-warmup'"
    grep -q "up to date" "$T/out" || fail "no 'up to date' line: $(cat "$T/out")"
    : >"$FAKE_LOG"
    BUILD_DIR=$T/b bash "$src/scripts/build.sh" --demo safe-launch >"$T/out" 2>&1 ||
      fail "$(cat "$T/out")"
    [ "$(built_targets)" = safe-launch ] || fail "--demo safe-launch built '$(built_targets)'"
    ;;
  build-progress-live)
    # The n/N line of a build step reaches the reader while the build still runs (not buffered
    # until ninja exits, as Debian's mawk did): the fake build waits for the reader to see it.
    fake_tools all safe-launch
    cat >"$T/bin/cmake" <<'SH'
#!/bin/sh
[ "$1" = --build ] || exit 0
echo "[1/4] Building CXX object a.o"
i=0; while [ ! -f "$FLAG" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$FLAG" ] || echo stalled >>"$FAKE_LOG"
echo "[4/4] Linking CXX executable bin/safe-launch"
SH
    export FLAG=$T/seen
    BUILD_DIR=$T/b bash "$src/scripts/build.sh" --demo safe-launch >"$T/out" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      grep -q "build safe-launch: 1/4" "$T/out" && { touch "$FLAG"; break; }
      sleep 0.1
    done
    wait "$pid" || fail "build.sh failed: $(cat "$T/out")"
    ! grep -q stalled "$FAKE_LOG" || fail "the 1/4 line came only after the build: $(cat "$T/out")"
    grep -q "build safe-launch: 4/4" "$T/out" || fail "no 4/4 line: $(cat "$T/out")"
    ;;
  build-demo-warmup-half)
    # Before libtorch is there, --demo safe-launch also compiles the warm-up's libtorch-free half.
    fake_tools all safe-launch sl_warmup_main
    BUILD_DIR=$T/b bash "$src/scripts/build.sh" --demo safe-launch >"$T/out" 2>&1 ||
      fail "$(cat "$T/out")"
    [ "$(built_targets)" = "safe-launch sl_warmup_main" ] ||
      fail "--demo safe-launch before libtorch built '$(built_targets)', not 'safe-launch sl_warmup_main'"
    ;;
  build-demo-no-torch)
    fake_tools all safe-launch
    BUILD_DIR=$T/b bash "$src/scripts/build.sh" --demo >"$T/out" 2>&1 || fail "$(cat "$T/out")"
    [ "$(built_targets)" = safe-launch ] || fail "without libtorch, built '$(built_targets)'"
    : >"$FAKE_LOG"
    rc=0
    BUILD_DIR=$T/b bash "$src/scripts/build.sh" --demo safe-launch-warmup >"$T/out" 2>&1 || rc=$?
    [ "$rc" = 3 ] || fail "--demo safe-launch-warmup without libtorch exited $rc, not 3"
    grep -q "did not find libtorch" "$T/out" && grep -q "install-deps.sh --demo-torch" "$T/out" ||
      fail "the message names neither the cause nor the fix: $(cat "$T/out")"
    [ -z "$(built_targets)" ] || fail "built '$(built_targets)' although it refused"
    ;;
  build-demo-refuses-other)
    fake_tools all safe-launch safe-launch-warmup
    rc=0
    BUILD_DIR=$T/b bash "$src/scripts/build.sh" --demo all >"$T/out" 2>&1 || rc=$?
    [ "$rc" = 2 ] && grep -q "all is not one of the demo's targets" "$T/out" ||
      fail "--demo all: exit $rc, $(cat "$T/out")"
    ;;
  graph)
    # The real build graph: what the two targets compile and link.
    [ -f "$build_dir/build.ninja" ] || { echo "not a Ninja build: skipped"; exit 77; }
    cmds=$(ninja -C "$build_dir" -t commands safe-launch)
    [ -n "$cmds" ] || fail "ninja lists no command for safe-launch"
    if grep -E "include/torch|libtorch|libc10|USE_C10D" <<<"$cmds" | head -3 >"$T/torch" &&
       [ -s "$T/torch" ]; then
      fail "safe-launch needs libtorch, so it cannot build while libtorch installs: $(cat "$T/torch")"
    fi
    # The warm-up's CLI half is built before libtorch is installed: no libtorch in it either.
    if ninja -C "$build_dir" -t targets all | grep -c '^sl_warmup_main:' >/dev/null; then
      main_cmds=$(ninja -C "$build_dir" -t commands sl_warmup_main | grep -E 'warmup_main' || true)
      [ -n "$main_cmds" ] || fail "ninja lists no compile of warmup_main.cpp for sl_warmup_main"
      ! grep -qE "include/torch|USE_C10D" <<<"$main_cmds" ||
        fail "sl_warmup_main compiles with libtorch's flags, so it cannot build before libtorch"
    fi
    targets=(safe-launch)
    ninja -C "$build_dir" -t targets all | grep -c '^safe-launch-warmup:' >/dev/null &&
      targets+=(safe-launch-warmup)
    if ninja -C "$build_dir" -t commands "${targets[@]}" | grep -E "_test\.cpp|[Cc]atch2" |
         head -3 >"$T/tests" && [ -s "$T/tests" ]; then
      fail "the demo's targets compile tests: $(cat "$T/tests")"
    fi
    ;;
  demo-script)
    # demo.sh builds only through build.sh --demo and installs only the demo's two halves.
    demo=$src/scripts/demo.sh
    bad=$(grep -nE 'build\.sh' "$demo" | grep -vE 'build\.sh --demo( safe-launch(-warmup)?)?\b' |
          grep -v '^[0-9]*: *#' || true)
    [ -z "$bad" ] || fail "demo.sh calls build.sh outside --demo: $bad"
    bad=$(grep -nE 'cmake --build|ninja( |$)' "$demo" | grep -v '^[0-9]*: *#' || true)
    [ -z "$bad" ] || fail "demo.sh builds without build.sh --demo: $bad"
    bad=$(grep -nE 'install-deps\.sh' "$demo" | grep -vE 'install-deps\.sh --demo-(tools|torch)\b' |
          grep -v '^[0-9]*: *#' || true)
    [ -z "$bad" ] || fail "demo.sh installs more than the demo's packages: $bad"
    # The first half must not pull libtorch in: safe-launch builds while it installs.
    tools=$(sed -n '/^TOOLS=(/,/^)/p' "$src/scripts/install-deps.sh")
    [ -n "$tools" ] || fail "no TOOLS=( ... ) list in install-deps.sh"
    ! grep -qE "torch|gloo" <<<"$tools" || fail "install-deps.sh --demo-tools installs libtorch"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok ($case_name)"
