#!/usr/bin/env bash
# Start-up cost of `safe-launch --no-preflight -- true`: what every job pays before its own first
# instruction (loading, CLI, facts, env plan, run directory, supervisor, hang monitor). Prints
# the instructions safe-launch itself executes (valgrind callgrind, the job not traced: the same
# count however loaded the machine is), the CPU time per run (user+sys, job included) and the
# peak RSS. Pass a second binary (e.g. a build of an older commit) to compare in the same run.
# usage: bench/startup.sh [path/to/safe-launch [path/to/other/safe-launch]]   (env: RUNS=30)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
RUNS=${RUNS:-30}
BINS=("${@:-build/bin/safe-launch}")
for sl in "${BINS[@]}"; do
  [ -x "$sl" ] || { echo "no safe-launch binary at $sl (build first or pass its path)" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "valgrind is needed (scripts/install-deps.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== safe-launch start-up benchmark ($(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
for sl in "${BINS[@]}"; do
  bench_phase "$sl: callgrind, then $RUNS timed runs"
  (cd "$work" && valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
     "$(realpath "$OLDPWD/$sl" 2>/dev/null || realpath "$sl")" --no-preflight -- true \
     >/dev/null 2>"$work/cg.log") || { cat "$work/cg.log" >&2; exit 1; }
  ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/cg.log")
  /usr/bin/python3 - "$(realpath "$sl")" "$RUNS" "$ir" "$work" <<'PY'
import resource, statistics, subprocess, sys

sl, runs, ir, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
cmd = [sl, "--no-preflight", "--", "true"]
subprocess.run(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
cpu = []
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc = subprocess.run(cmd, cwd=work, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        sys.exit(f"{sl} exited {rc}")
    cpu.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
# Peak RSS through /usr/bin/time: a child forked from this interpreter would count its pages.
rss_runs = []
for _ in range(5):
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], cwd=work, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    rss_runs.append(int(r.stderr.strip().splitlines()[-1]))
rss = statistics.median(rss_runs) / 1024
print(f"{sl}\n  instructions (callgrind, safe-launch only): {ir / 1e6:.1f} M"
      f"\n  CPU per run (user+sys): median {statistics.median(cpu):.2f} ms"
      f"   min {min(cpu):.2f} ms   (n={runs})\n  peak RSS: {rss:.1f} MiB")
PY
done
