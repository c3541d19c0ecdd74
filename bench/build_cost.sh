#!/usr/bin/env bash
# Cold build cost of the demo's targets (issue 22): configures a scratch build directory, builds
# with ccache off and prints the CPU seconds (user + sys of every compiler and linker run) and the
# wall time, the ten costliest translation units, and the load average around it. CPU seconds are
# the figure to compare: other builds on the same cores stretch the wall time far more.
# With a commit, builds that commit the same way in the same invocation (a `git worktree` of it)
# and prints the ratio of the two.
# usage: bench/build_cost.sh [BASELINE_COMMIT]
#   env: TARGETS="safe-launch safe-launch-warmup" (or all), JOBS=$(nproc), KEEP=1 keeps the
#        scratch directory, CMAKE_ARGS="..." extra configure options for both builds
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
TARGETS=${TARGETS:-safe-launch safe-launch-warmup}
JOBS=${JOBS:-$(nproc)}
BASELINE=${1:-}
for t in /usr/bin/time cmake ninja git; do
  command -v "$t" >/dev/null || { echo "build_cost.sh: $t is needed (scripts/install-deps.sh)" >&2; exit 2; }
done
if [ -n "$BASELINE" ]; then
  git rev-parse --verify -q "$BASELINE^{commit}" >/dev/null ||
    { echo "build_cost.sh: $BASELINE is not a commit of this repository" >&2; exit 2; }
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sl-build-cost.XXXXXX")
cleanup() {
  [ -z "$BASELINE" ] || git worktree remove --force "$work/baseline-src" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# build NAME SRC: a cold build of $TARGETS from SRC; prints one summary line, leaves
# $work/NAME.cpu (CPU seconds) and $work/NAME.tu (per-TU CPU seconds, costliest first).
build() {
  local name=$1 src=$2 dir=$work/$1-build log=$work/$1.times
  : >"$log"
  # Every compile and link runs under GNU time, appending "user sys command" to the log: the sum
  # is the build's CPU, however many jobs ran at once.
  local launcher="/usr/bin/time;-a;-o;$log;-f;%U %S %C"
  bench_phase "$name: configure $src"
  CCACHE_DISABLE=1 cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher" "-DCMAKE_CXX_LINKER_LAUNCHER=$launcher" \
    ${CMAKE_ARGS:-} >"$work/$name.configure.log" 2>&1 ||
    { tail -20 "$work/$name.configure.log" >&2; exit 1; }
  local targets=()
  for t in $TARGETS; do
    # (grep -c reads all of ninja's list: with -q, ninja's SIGPIPE would fail the pipeline)
    if [ "$t" = all ] || ninja -C "$dir" -t targets all | grep -c "^$t:" >/dev/null; then
      targets+=("$t")
    else echo "  ($name has no target $t: skipped)"; fi
  done
  ((${#targets[@]})) || { echo "build_cost.sh: $name has none of: $TARGETS" >&2; exit 2; }
  bench_phase "$name: build ${targets[*]} (-j$JOBS, ccache off)"
  local load0 t0 t1
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  t0=$(date +%s.%N)
  CCACHE_DISABLE=1 ninja -C "$dir" -j "$JOBS" "${targets[@]}" >"$work/$name.build.log" 2>&1 ||
    { tail -30 "$work/$name.build.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 - "$log" "$work/$name" "$name" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$t0" "$t1" \
    <<'PY'
import re, sys
log, out, name, load0, load1, t0, t1 = sys.argv[1:8]
wall = float(t1) - float(t0)
rows = []
for line in open(log):
    m = re.match(r"([\d.]+) ([\d.]+) (.*)", line.strip())
    if not m:
        continue
    obj = re.search(r" -o (\S+)", m.group(3))
    rows.append((float(m.group(1)) + float(m.group(2)), float(m.group(1)), float(m.group(2)),
                 obj.group(1) if obj else m.group(3)[:60]))
user = sum(r[1] for r in rows)
sys_ = sum(r[2] for r in rows)
open(out + ".cpu", "w").write(f"{user + sys_:.1f}\n")
rows.sort(reverse=True)
with open(out + ".tu", "w") as f:
    for r in rows:
        f.write(f"{r[0]:7.1f}  {r[3]}\n")
print(f"{name}: {user + sys_:.0f} CPU-s ({user:.0f} user + {sys_:.0f} sys) in {len(rows)} "
      f"compiler/linker runs, wall {wall:.0f} s, load {load0} -> {load1}")
print("  costliest (CPU-s):")
for r in rows[:10]:
    print(f"  {r[0]:7.1f}  {r[3]}")
PY
}

echo "== cold build cost of: $TARGETS ($(uname -n), $(nproc) cores, $(date -u +%FT%TZ))"
build current "$PWD"
if [ -n "$BASELINE" ]; then
  git worktree add --detach -q "$work/baseline-src" "$BASELINE"
  build baseline "$work/baseline-src"
  python3 - "$(cat "$work/current.cpu")" "$(cat "$work/baseline.cpu")" "$BASELINE" <<'PY'
import sys
cur, base, commit = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
print(f"== current / {commit}: {cur:.0f} / {base:.0f} CPU-s = {cur / base:.2f} "
      f"({base / cur:.2f}x less CPU)")
PY
fi
