#!/usr/bin/env bash
# Whole-process wall time of `safe-launch preflight --sysroot <fixture>` (8 HCA ports, 8 GPUs by
# default): exec, gathering facts, all checks, rendering, exit. Prints min/median/max over RUNS
# runs after WARMUP unmeasured runs, plus the CPU time (user+sys) per run, which a loaded shared
# machine inflates far less than wall time. Target: median wall <= 20 ms on the 2-core dev box.
# usage: bench/preflight.sh [path/to/safe-launch] [fixture dir]   (env: RUNS=30 WARMUP=3)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
SL=${1:-build/bin/safe-launch}
FIXTURE=${2:-tests/fixtures/ib-healthy}
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
[ -x "$SL" ] || { echo "no safe-launch binary at $SL (build first or pass its path)" >&2; exit 2; }
[ -d "$FIXTURE" ] || { echo "no fixture tree at $FIXTURE" >&2; exit 2; }
[ "$RUNS" -ge 20 ] || { echo "RUNS must be >= 20" >&2; exit 2; }

echo "== safe-launch preflight benchmark ($(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
echo "command: $SL preflight --sysroot $FIXTURE   ($RUNS runs, $WARMUP warm-up)"

/usr/bin/python3 - "$SL" "$FIXTURE" "$RUNS" "$WARMUP" <<'EOF'
import resource, statistics, subprocess, sys, time

sl, fixture, runs, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
cmd = [sl, "preflight", "--sysroot", fixture]
import os
exec(os.environ["SL_BENCH_PY_PROGRESS"])
progress(f"{warmup} warm-up run(s), then {runs} timed")
# Exit status 1/2 means findings (the fixture may fail a check), not a benchmark error.
for _ in range(warmup):
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall, cpu = [], []
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc not in (0, 1, 2):
        sys.exit(f"safe-launch exited {rc}: not a preflight result")
    wall.append((t1 - t0) * 1000)
    cpu.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
med = statistics.median(wall)
print(f"wall time per run: min {min(wall):.2f} ms   median {med:.2f} ms   max {max(wall):.2f} ms   (n={runs})")
print(f"cpu time per run:  min {min(cpu):.2f} ms   median {statistics.median(cpu):.2f} ms   max {max(cpu):.2f} ms")
print(f"target: median wall <= 20 ms: {'met' if med <= 20 else 'NOT met'}")
EOF
