#!/usr/bin/env bash
# Supervisor overhead, each figure a ratio measured in this same run:
#   1. wall time of `safe-launch --no-preflight -- true` against `true` (startup + teardown cost)
#   2. throughput of 1 GiB of job output (80-byte lines, `cat F`) through safe-launch into a pipe
#      and into /dev/null against the same without it (target >= 0.9 of cat's rate, CPU <= 1.5x)
#   3. CPU seconds safe-launch uses while supervising an idle job of IDLE_S seconds (default 60;
#      target <= 0.1 s)
# usage: bench/supervise.sh [path/to/safe-launch]
#        (env: RUNS=20 BYTES=1073741824 ROUNDS=3 IDLE_S=60; SKIP_IDLE=1 skips 3)
set -euo pipefail
SL=${1:-build/bin/safe-launch}
RUNS=${RUNS:-20}
BYTES=${BYTES:-1073741824}
IDLE_S=${IDLE_S:-60}
PY=/usr/bin/python3
. "$(dirname "$0")/progress.sh"
tmp=$(mktemp -d /tmp/sl-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[ -x "$SL" ] || { echo "no safe-launch binary at $SL (build first or pass its path)" >&2; exit 2; }

now() { date +%s.%N; }
bench_phase "start-up: $RUNS runs of /bin/true, bare and supervised"
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

# 2. throughput (issue 26): a file F of BYTES of 80-byte lines (page cache), `safe-launch -- cat F
#    | cat` against `cat F | cat`, ROUNDS alternated; the same with SAFE_LAUNCH_OUTPUT_COPY=1 (the
#    read/write pump: before/after in one run), with SAFE_LAUNCH_SCAN=scalar (the hang
#    scanner's skip scan without its vector kernel, 2026-12-04), and with our stdout on /dev/null (the discard
#    path, read only; the splice path before 2026-12-03) against `cat F > /dev/null`. Figures:
#    the ratio of median wall times (target >= 0.9), the whole pipeline's CPU (every process,
#    from wait4 of a shell running it) against the plain one's (target <= 1.5x), and
#    safe-launch's own CPU per GiB (all threads, from status.json).
"$PY" - "$SL" "$tmp" "$BYTES" "${ROUNDS:-3}" <<'PYEOF'
import json, os, statistics, subprocess, sys, time
sl, tmp, nbytes, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
exec(os.environ["SL_BENCH_PY_PROGRESS"])
src = f"{tmp}/F"
with open(src, "wb") as f:
    line = b"x" * 79 + b"\n"
    chunk = line * (1 << 14)
    left = nbytes
    while left > 0:
        f.write(chunk[:left])
        left -= len(chunk)
subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)  # into the page cache
def pipeline(cmd, env=None):
    """Wall seconds and CPU seconds (all processes) of `bash -c cmd`."""
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", "-c", cmd], env=env)
    _, status, ru = os.wait4(p.pid, 0)
    assert status == 0, cmd
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime
def own_cpu(d):
    st = json.load(open(f"{d}/status.json"))
    assert st["output_bytes"]["stdout"] == nbytes, st["output_bytes"]
    ru = st["supervisor_rusage"]
    return ru["user_s"] + ru["sys_s"]
copy_env = dict(os.environ, SAFE_LAUNCH_OUTPUT_COPY="1")
scalar_env = dict(os.environ, SAFE_LAUNCH_SCAN="scalar")
cases = {
    "cat F | cat": lambda i: (pipeline(f"cat {src} | cat > /dev/null"), None),
    "safe-launch -- cat F | cat": lambda i: (pipeline(
        f"{sl} --no-preflight --run-dir {tmp}/t{i} -- cat {src} 2>/dev/null | cat > /dev/null"),
        own_cpu(f"{tmp}/t{i}")),
    "  the same, read/write pump": lambda i: (pipeline(
        f"{sl} --no-preflight --run-dir {tmp}/c{i} -- cat {src} 2>/dev/null | cat > /dev/null",
        copy_env), own_cpu(f"{tmp}/c{i}")),
    "  the same, scalar skip scan": lambda i: (pipeline(
        f"{sl} --no-preflight --run-dir {tmp}/s{i} -- cat {src} 2>/dev/null | cat > /dev/null",
        scalar_env), own_cpu(f"{tmp}/s{i}")),
    "cat F > /dev/null": lambda i: (pipeline(f"cat {src} > /dev/null"), None),
    "safe-launch -- cat F > /dev/null": lambda i: (pipeline(
        f"{sl} --no-preflight --run-dir {tmp}/n{i} -- cat {src} > /dev/null 2>&1"),
        own_cpu(f"{tmp}/n{i}")),
}
res = {k: [] for k in cases}
load0 = os.getloadavg()[0]
for i in range(rounds):
    progress(f"throughput: round {i + 1} of {rounds}")
    for k, run in cases.items():
        res[k].append(run(i))
gib = nbytes / 2**30
def med(k, what):
    return statistics.median(r[0][what] for r in res[k])
print(f"output path, {nbytes / 2**20:.0f} MiB of 80-byte lines from a cached file, {rounds} rounds"
      f" alternated, medians (load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after):")
for base, ours in (("cat F | cat", "safe-launch -- cat F | cat"),
                   ("cat F | cat", "  the same, read/write pump"),
                   ("cat F | cat", "  the same, scalar skip scan"),
                   ("cat F > /dev/null", "safe-launch -- cat F > /dev/null")):
    bw, ow = med(base, 0), med(ours, 0)
    bc, oc = med(base, 1), med(ours, 1)
    own = statistics.median(r[1] for r in res[ours])
    print(f"  {ours:34s} {nbytes / 2**20 / ow:6.0f} MiB/s vs {base} {nbytes / 2**20 / bw:6.0f}"
          f" MiB/s: ratio {bw / ow:.2f} (>= 0.9)   pipeline CPU {oc / gib:.2f} s/GiB vs"
          f" {bc / gib:.2f}: {oc / bc:.2f}x (<= 1.5x)   safe-launch's own {own / gib:.2f} s/GiB")
PYEOF

[ -n "${SKIP_IDLE:-}" ] && exit 0

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
