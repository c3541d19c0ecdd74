#!/usr/bin/env bash
# Flight Recorder analysis figures (printed, not asserted): for 64, 512 and 4096 ranks x 2000
# entries (tests/fixtures/gen/fr_dumps.py, scenario missing-rank: one rank never enters the last all_reduce), the
# wall time and peak RSS of `safe-launch diagnose --flight-recorder` (read + analyse + report)
# and of python3 merely pickle.load-ing the same files one after another (each dropped after its
# load: the cheapest Python can do, no analysis, no cross-rank memory), in the same run, from the
# page cache for both, with the ratio; and whether the planted rank was named.
# Goals (issue 14): time <= 1/4 of Python's bare load at every size, RSS <= 2 GB at 4096;
# (issue 26) at 16384 ranks: time <= 0.05x Python's bare load, RSS <= 4 GB. Python keeping all
# 16384 loaded would not fit a 24 GB box (3.1 GB at 1024), so it loads and drops each file, as at
# every size. CPU seconds (user+sys) are printed beside wall time: on a shared box wall time is
# mostly waiting for a core. Under each row: the time cat takes to read the set once more, as a
# fraction of Python's load, the floor no reader on this box can go below.
# usage: bench/diagnose_fr.sh [BUILD_DIR [SIZES...]]   (default build, 64 512 4096; add 16384)
#   FR_BENCH_DIR: where to generate (default a directory under ${TMPDIR:-/tmp}; 4096 ranks need
#     ~3 GB, 16384 ~19 GB: the free space is checked first; each set is deleted after its row)
#   FR_BENCH_BEFORE: another safe-launch binary (e.g. a copy of the previous build) timed on the
#     same dumps in the same run, interleaved with this one: before/after figures side by side
#   FR_BENCH_REPEAT: runs of each binary per size, the best wall time is printed (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
B=${1:-build}
shift || true
SIZES=("$@")
((${#SIZES[@]})) || SIZES=(64 512 4096)
SL=$PWD/$B/bin/safe-launch
BEFORE=${FR_BENCH_BEFORE:-}
REPEAT=${FR_BENCH_REPEAT:-1}
GEN=$PWD/tests/fixtures/gen/fr_dumps.py
[[ -x $SL ]] || { echo "build safe-launch first ($B)"; exit 2; }
[[ -f $GEN ]] || { echo "no $GEN"; exit 2; }
ROOT=${FR_BENCH_DIR:-${TMPDIR:-/tmp}}/sl-bench-fr-$$
mkdir -p "$ROOT"
trap 'rm -rf "$ROOT"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $($SL version)"
printf '%-6s %-8s | %-9s %-7s %-9s | %-9s %-7s %-9s | %-7s %-7s | %s\n' ranks dumps sl_wall \
  sl_cpu sl_rss py_wall py_cpu py_rss py/sl cpu_py/sl "planted fault named?"
# best_of BIN OUT: the best of REPEAT runs, "seconds KB" (time(1) writes a status line first
# when the exit status is not 0: a fault found is exit 0, a healthy set 1)
best_of() {
  local best="" i
  for ((i = 0; i < REPEAT; i++)); do
    /usr/bin/time -f '%e %M %U %S' -o "$ROOT/t" "$1" diagnose --flight-recorder "$d" --json > "$2" || true
    local now
    now=$(tail -1 "$ROOT/t")
    if [[ -z $best ]] || python3 -c "import sys; sys.exit(not float('${now%% *}') < float('${best%% *}'))"; then
      best=$now
    fi
  done
  echo "$best"
}
# need_disk N: at 2000 entries about 600-850 KB of dumps per rank, plus every rank's copy of
# pg_config, which lists all N ranks (18 bytes a rank: 16384 ranks are 1.15 MB each, 19 GB in
# all); stop before filling the disk
need_disk() {
  local need_kb=$(($1 * (860 + $1 * 18 / 1024))) free_kb
  free_kb=$(df -Pk "$ROOT" | awk 'NR == 2 { print $4 }')
  if ((free_kb < need_kb + 1048576)); then
    echo "$1 ranks need about $((need_kb / 1024)) MB in $ROOT, $((free_kb / 1024)) MB free: skipped (set FR_BENCH_DIR)"
    return 1
  fi
}
for n in "${SIZES[@]}"; do
  bench_phase "$n rank dump(s)"
  d=$ROOT/r$n
  need_disk "$n" || continue
  # one rank in memory at a time, a process per core (the same bytes at any --jobs)
  # (the summary lists every file: at 16384 ranks too long for one argument, so it goes by file)
  python3 "$GEN" "$d" --ranks "$n" --entries 2000 --scenario missing-rank --seed 1 \
    --jobs "$(nproc)" > "$ROOT/summary.json"
  read -r fault seq < <(python3 -c 'import json,sys; j = json.load(open(sys.argv[1]))
print(j["fault_rank"], j["fault_seq"])' "$ROOT/summary.json")
  size=$(du -sh "$d" | cut -f1)
  find "$d" -type f -exec cat {} + > /dev/null  # both read from the page cache (what fits)
  # The floor of any reader on this box: reading the set once more with cat (at 16384 ranks the
  # 18 GiB do not stay in the page cache of a 24 GB box, so part of it comes from the disk).
  /usr/bin/time -f '%e' -o "$ROOT/cat.time" find "$d" -type f -exec cat {} + > /dev/null
  if [[ -n $BEFORE ]]; then
    read -r before_s before_kb before_u before_sys < <(best_of "$BEFORE" "$ROOT/before.json")
  fi
  best_of "$SL" "$ROOT/sl.json" > "$ROOT/sl.time"
  /usr/bin/time -f '%e %M %U %S' -o "$ROOT/py.time" python3 -c '
import glob, pickle, sys
for f in glob.glob(sys.argv[1] + "/fr_rank_*"):
    with open(f, "rb") as fh:
        pickle.load(fh)
' "$d"
  # time(1) puts "Command exited with non-zero status 1" first when a fault was found
  read -r sl_s sl_kb sl_u sl_sys < <(tail -1 "$ROOT/sl.time")
  read -r py_s py_kb py_u py_sys < <(tail -1 "$ROOT/py.time")
  sl_cpu=$(python3 -c "print(f'{$sl_u + $sl_sys:.2f}')")
  py_cpu=$(python3 -c "print(f'{$py_u + $py_sys:.2f}')")
  named=$(python3 - "$ROOT/sl.json" "$fault" "$seq" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c = j["causes"][0] if j["causes"] else {}
ok = c.get("category") == "straggler_or_slow_rank" and c.get("entity") == f"rank {sys.argv[2]}" \
    and f"#{sys.argv[3]}" in c.get("message", "")
print(("yes: " if ok else "NO: ") + c.get("category", "none") + ", " + c.get("entity", "") +
      f" (planted rank {sys.argv[2]}, seq {sys.argv[3]})")
PY
)
  printf '%-6s %-8s | %-9s %-7s %-9s | %-9s %-7s %-9s | %-7s %-7s | %s\n' "$n" "$size" \
    "${sl_s}s" "${sl_cpu}s" "$((sl_kb / 1024))MB" "${py_s}s" "${py_cpu}s" "$((py_kb / 1024))MB" \
    "$(python3 -c "print(f'{$py_s/max($sl_s,0.01):.1f}x')")" \
    "$(python3 -c "print(f'{$py_cpu/max($sl_cpu,0.01):.1f}x')")" "$named"
  cat_s=$(tail -1 "$ROOT/cat.time")
  printf '%-6s %-8s   reading the set alone (cat, after a first pass): %ss = %sx of Python'"'"'s load (the floor of any reader here), safe-launch %sx\n' \
    "" "" "$cat_s" "$(python3 -c "print(f'{$cat_s/max($py_s,0.01):.3f}')")" \
    "$(python3 -c "print(f'{$sl_s/max($py_s,0.01):.3f}')")"
  if [[ -n $BEFORE ]]; then
    printf '%-6s %-8s | %-9s %-7s %-9s | %-9s %-7s %-9s | %-7s %-7s | %s\n' "" "before" \
      "${before_s}s" "$(python3 -c "print(f'{$before_u + $before_sys:.2f}s')")" \
      "$((before_kb / 1024))MB" "" "" "" "$(python3 -c "print(f'{$py_s/max($before_s,0.01):.1f}x')")" \
      "" "$BEFORE"
  fi
  rm -rf "$d"
done
