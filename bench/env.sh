#!/usr/bin/env bash
# Wall time of `safe-launch env` (whole process), min/median/max over N runs:
#   1. live node, versions detected (first run fills the cache; the N timed runs use it)
#   2. live node, versions stated with flags (no detection at all)
#   3. 8-HCA fixture tree (ib-healthy), versions stated
# Usage: bench/env.sh [SAFE_LAUNCH] [N]   (default build/bin/safe-launch, 20)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
SL=${1:-build/bin/safe-launch}
N=${2:-20}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
measure() {  # label cmd...
  local label=$1
  shift
  bench_phase "$label: $N runs"
  local times=()
  for _ in $(seq "$N"); do
    local s=$(date +%s%N)
    "$@" >/dev/null 2>&1
    times+=($(( ($(date +%s%N) - s) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v label="$label" -v n="$N" '
    { t[NR] = $1 }
    END { printf "%-55s min %7.1f ms  median %7.1f ms  max %7.1f ms  (n=%d)\n", label,
          t[1] / 1000, (n % 2 ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2) / 1000, t[n] / 1000, n }'
}
s=$(date +%s%N)
"$SL" env --format json --run-dir "$T/run" >/dev/null
echo "first run (empty cache: python sys.path + dlopen libnccl): $(( ($(date +%s%N) - s) / 1000000 )) ms"
measure "env --format json (detected, cached)" "$SL" env --format json --run-dir "$T/run"
measure "env --explain (versions given)" "$SL" env --explain --nccl-version 2.28.9 \
  --torch-version 2.11.0 --run-dir "$T/run"
if [ -d tests/fixtures/ib-healthy ]; then
  measure "env --sysroot ib-healthy (versions given)" "$SL" env --sysroot tests/fixtures/ib-healthy \
    --nccl-version 2.28.9 --torch-version 2.11.0 --run-dir "$T/run"
fi
