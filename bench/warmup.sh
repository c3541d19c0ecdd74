#!/bin/bash
# End-to-end warm-up time for 2 nodes x 2 ranks on loopback (CPU, libtorch Gloo), split into
# process start (fork to main() of a warm-up rank: mostly loading libtorch), rendezvous (store
# up until every rank and node's facts arrived), comparison (rank 0 compares the nodes and
# publishes the verdict) and collectives (process group, verified all_reduce, 3-size sweep).
# Usage: bench/warmup.sh [BUILD_DIR=build] [RUNS=3]
set -eu
BUILD=${1:-build}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SL=$(cd "$BUILD" && pwd)/bin/safe-launch
FX=$ROOT/tests/fixtures/roce-jumbo
PY=/usr/bin/python3
. "$ROOT/bench/progress.sh"
[ -x "$SL" ] || { echo "no $SL: build safe-launch and safe-launch-warmup first"; exit 2; }
[ -x "$(dirname "$SL")/safe-launch-warmup" ] || { echo "no safe-launch-warmup next to $SL (libtorch not found at configure time?)"; exit 2; }
WORK=$(mktemp -d /tmp/sl-bench-warmup.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

echo "warm-up, 2 nodes x 2 ranks, loopback, Gloo (libtorch $( $PY -c 'import torch;print(torch.__version__)' 2>/dev/null || echo '?')), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
printf "%-4s %10s %14s %11s %11s %12s %9s %14s\n" run wall_ms process_start rendezvous comparison collectives total busbw_GB/s
for i in $(seq 1 "$RUNS"); do
  bench_phase "round $i of $RUNS"
  PORT=$($PY -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  start=$(date +%s%N)
  for n in 0 1; do
    "$SL" run --no-preflight --sysroot "$FX" --node-name "bench-$n" --nnodes 2 --node-rank $n \
      --nproc-per-node 2 --rendezvous 127.0.0.1:1 --warmup-port "$PORT" --warmup-timeout 120 \
      --run-dir "$WORK/r$i-n$n" -- true > "$WORK/r$i-n$n.out" 2>&1 &
  done
  wait
  end=$(date +%s%N)
  $PY - "$WORK/r$i-n0/warmup.json" "$i" "$(( (end - start) / 1000000 ))" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); t = d.get("timings_ms", {})
bw = d["sweep"][-1]["busbw_gbps"] if d.get("sweep") else 0
print("%-4s %10s %14.0f %11.0f %11.1f %12.0f %9.0f %14.3f  (%s)" % (sys.argv[2], sys.argv[3],
      t.get("process_start", 0), t.get("rendezvous", 0), t.get("comparison", 0),
      t.get("collectives", 0), t.get("total", 0), bw, d.get("verdict")))
PYEOF
done
echo "wall_ms: both safe-launch processes, start to exit (includes fact gathering and the job 'true')"
