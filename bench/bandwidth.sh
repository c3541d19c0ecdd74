#!/bin/bash
# Figures for issue 16 (doc/manual.md "Bandwidth"):
#  1. the pair rounds on 4 network namespaces (one shaped link, node 2 at 100 Mbit/s with netem,
#     or tbf where the kernel has no sch_netem): wall time of `safe-launch bench --pairs always`
#     until node 0 names node 2, and the pair-round time rank 0 reports. Needs root.
#  2. the nccl-tests parser's throughput on a ~10 MB all_reduce_perf log (the corpus table
#     repeated), through `safe-launch bench --import`, with the parse-only time bench logs.
# Usage: bench/bandwidth.sh [BUILD_DIR=build] [RUNS=3]
set -u
BUILD=${1:-build}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SL=$(cd "$BUILD" && pwd)/bin/safe-launch
PY=/usr/bin/python3
. "$(dirname "$0")/progress.sh"
[ -x "$SL" ] || { echo "no $SL: build safe-launch first"; exit 2; }
WORK=$(mktemp -d /tmp/sl-bench-bw.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "bandwidth bench: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), kernel $(uname -r)"

echo "== pair rounds, 4 namespaces, node 2 shaped"
if [ "$(id -u)" = 0 ] && [ -x "$(dirname "$SL")/safe-launch-warmup" ]; then
  for i in $(seq 1 "$RUNS"); do
    bench_phase "pair rounds: run $i of $RUNS"
    out=$(bash "$ROOT/tests/integration/bench/bench_test.sh" netns-slow-node "$SL" "$ROOT/tests/fixtures" 2>&1)
    echo "run $i: $(echo "$out" | grep -E '^4 nodes|^ok|^FAIL' | tr '\n' ' ')"
  done
else
  echo "skipped: needs root and safe-launch-warmup"
fi

echo "== nccl-tests parser on a ~10 MB log"
SRC=$ROOT/tests/fixtures/nccl_tests/constructed_2node_16gpu_header.txt
$PY - "$SRC" "$WORK/big.txt" <<'PYEOF'
import sys
src = open(sys.argv[1]).read().splitlines(keepends=True)
head = [l for l in src if l.startswith("#") and "Out of" not in l and "Avg" not in l and "concluded" not in l]
rows = [l for l in src if l.strip() and l.strip()[0].isdigit()]
tail = [l for l in src if "Out of" in l or "Avg" in l]
with open(sys.argv[2], "w") as f:
    f.writelines(head)
    n = 0
    while f.tell() < 10 * 1000 * 1000:
        f.writelines(rows)
        n += len(rows)
    f.writelines(tail)
print("rows:", n)
PYEOF
size=$(stat -c %s "$WORK/big.txt")
for i in $(seq 1 "$RUNS"); do
  start=$(date +%s%N)
  "$SL" bench --import "$WORK/big.txt" --run-dir "$WORK/r$i" > "$WORK/o$i.txt" 2>&1
  end=$(date +%s%N)
  ms=$(( (end - start) / 1000000 ))
  echo "run $i: bench --import of $size bytes: ${ms} ms wall ($(( size / 1000 / (ms > 0 ? ms : 1) )) MB/s end to end, facts + plan + parse + picture)"
done
for i in $(seq 1 "$RUNS"); do grep -m1 -o "[0-9]* bytes, [0-9]* row(s) parsed in [0-9.]* ms" "$WORK/o$i.txt"; done
grep -m1 "bench.nccl_tests" "$WORK/o1.txt"
