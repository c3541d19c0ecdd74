#!/usr/bin/env bash
# Supervisor overhead, each figure a ratio measured in this same run:
#   1. wall time of `safe-launch --no-preflight -- true` against `true` (startup + teardown cost)
#   2. throughput of 1 GiB of job output (80-byte lines) through safe-launch against the same
#      generator piped to `cat` (target >= 0.9)
#   3. CPU seconds safe-launch uses while supervising an idle job of IDLE_S seconds (default 60;
#      target <= 0.1 s)
# usage: bench/supervise.sh [path/to/safe-launch]   (env: RUNS=20 BYTES=1073741824 IDLE_S=60)
set -euo pipefail
SL=${1:-build/bin/safe-launch}
RUNS=${RUNS:-20}
BYTES=${BYTES:-1073741824}
IDLE_S=${IDLE_S:-60}
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/sl-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[ -x "$SL" ] || { echo "no safe-launch binary at $SL (build first or pass its path)" >&2; exit 2; }

now() { date +%s.%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

echo "== safe-launch supervisor benchmark ($(uname -n), $(nproc) cores, $(date -u +%FT%TZ))"

# 1. startup/teardown
t0=$(now); for _ in $(seq "$RUNS"); do /bin/true; done; t1=$(now)
for i in $(seq "$RUNS"); do "$SL" --no-preflight --run-dir "$tmp/r$i" -- /bin/true 2>/dev/null; done
t2=$(now)
plain=$(awk -v a="$t0" -v b="$t1" -v n="$RUNS" 'BEGIN { printf "%.6f", (b - a) / n }')
sl=$(awk -v a="$t1" -v b="$t2" -v n="$RUNS" 'BEGIN { printf "%.6f", (b - a) / n }')
printf 'wall time of one run:     true %.2f ms   safe-launch -- true %.2f ms   ratio %s\n' \
  "$(awk -v s="$plain" 'BEGIN{print s*1000}')" "$(awk -v s="$sl" 'BEGIN{print s*1000}')" \
  "$(ratio "$sl" "$plain")"

# 2. throughput: the generator writes BYTES of 80-byte lines; both sides discard at /dev/null.
line=$(printf '%079d' 0 | tr 0 x)
gen="yes '$line' | head -c $BYTES"
t0=$(now); bash -c "$gen" | cat > /dev/null; t1=$(now)
"$SL" --no-preflight --run-dir "$tmp/tp" -- bash -c "$gen" > /dev/null 2>"$tmp/tp.err"; t2=$(now)
cat_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
sl_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN { print b - a }')
mib=$(awk -v b="$BYTES" 'BEGIN { print b / 1048576 }')
printf 'throughput of %s MiB:     pipe to cat %.0f MiB/s   through safe-launch %.0f MiB/s   ratio %s (target >= 0.9)\n' \
  "$mib" "$(awk -v m="$mib" -v s="$cat_s" 'BEGIN{print m/s}')" \
  "$(awk -v m="$mib" -v s="$sl_s" 'BEGIN{print m/s}')" "$(ratio "$cat_s" "$sl_s")"

# 3. CPU used while the job idles (rusage of safe-launch and its reaped children; sleep itself
#    uses ~1 ms).
cpu=$("$PY" - "$SL" "$tmp/idle" "$IDLE_S" <<'PYEOF'
import os, sys, subprocess
sl, run_dir, secs = sys.argv[1], sys.argv[2], sys.argv[3]
def cpu(cmd, d):
    p = subprocess.Popen([sl, "--no-preflight", "--run-dir", d, "--"] + cmd,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime
base = cpu(["true"], run_dir + "-true")     # start-up + teardown (plan, run dir, status.json)
idle = cpu(["sleep", secs], run_dir)
print(f"{idle:.3f} {base:.3f} {max(0.0, idle - base):.3f}")
PYEOF
)
read -r total startup supervising <<<"$cpu"
printf 'CPU while supervising a %ss idle job: %s s (whole run %s s, of which start-up/teardown %s s; target <= 0.1 s)\n' \
  "$IDLE_S" "$supervising" "$total" "$startup"
