#!/usr/bin/env bash
# Whole-process wall time of `safe-launch preflight --sysroot <fixture>` (8 HCA ports, 8 GPUs by
# default): fork+exec, gathering facts, all checks, rendering. Prints min/median/max over RUNS
# runs after WARMUP unmeasured runs (page cache, ccache-cold binaries). Target: median <= 20 ms
# on the 2-core dev box.
# usage: bench/preflight.sh [path/to/safe-launch] [fixture dir]   (env: RUNS=30 WARMUP=3)
set -euo pipefail
cd "$(dirname "$0")/.."
SL=${1:-build/bin/safe-launch}
FIXTURE=${2:-tests/fixtures/ib-healthy}
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
[ -x "$SL" ] || { echo "no safe-launch binary at $SL (build first or pass its path)" >&2; exit 2; }
[ -d "$FIXTURE" ] || { echo "no fixture tree at $FIXTURE" >&2; exit 2; }
[ "$RUNS" -ge 20 ] || { echo "RUNS must be >= 20" >&2; exit 2; }

echo "== safe-launch preflight benchmark ($(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
echo "command: $SL preflight --sysroot $FIXTURE   ($RUNS runs, $WARMUP warm-up)"

for _ in $(seq "$WARMUP"); do "$SL" preflight --sysroot "$FIXTURE" >/dev/null 2>&1 || true; done
times=()
for _ in $(seq "$RUNS"); do
  t0=$(date +%s%N)
  "$SL" preflight --sysroot "$FIXTURE" >/dev/null 2>&1 || true  # exit 1/2 = findings, not errors
  t1=$(date +%s%N)
  times+=("$(( (t1 - t0) / 1000 ))")  # microseconds
done
printf '%s\n' "${times[@]}" | sort -n | awk -v runs="$RUNS" '
  { v[NR] = $1 }
  END {
    med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "wall time per run: min %.2f ms   median %.2f ms   max %.2f ms   (n=%d)\n",
           v[1] / 1000, med / 1000, v[NR] / 1000, NR
    printf "target: median <= 20 ms: %s\n", (med <= 20000) ? "met" : "NOT met"
  }'
