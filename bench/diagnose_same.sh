#!/usr/bin/env bash
# Proves a change to the diagnose reader/matcher leaves its findings as they were: saves, or
# compares byte for byte with what was saved, `diagnose --features --json`, `diagnose --json
# --no-write` and `diagnose --explain --no-write` of every log in tests/corpus/logs,
# tests/fixtures/corpus/logs and tests/fixtures/logs, plus any extra files named in $EXTRA
# (e.g. bench/diagnose.sh's generated 100 MB log, kept with KEEP_LOG=path).
# Usage: bench/diagnose_same.sh save|compare DIR [SAFE_LAUNCH]
#   save with the tip's binary first, then compare after each change; exit 1 on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:?save or compare}
DIR=${2:?a directory for the outputs}
SL=${3:-build/bin/safe-launch}
[ -x "$SL" ] || { echo "diagnose_same: $SL is not an executable (build it: cmake --build build --target safe-launch)" >&2; exit 2; }
case $MODE in
  save) mkdir -p "$DIR" ;;
  compare) [ -d "$DIR" ] || { echo "diagnose_same: $DIR holds nothing saved (run 'save' with the old binary first)" >&2; exit 2; } ;;
  *) echo "diagnose_same: mode is save or compare, not '$MODE'" >&2; exit 2 ;;
esac
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
logs=()
for d in tests/corpus/logs tests/fixtures/corpus/logs tests/fixtures/logs; do
  for f in "$d"/*; do
    case $f in *.tsv | *.md | *.py) continue ;; esac
    [ -f "$f" ] && logs+=("$f")
  done
done
for f in ${EXTRA:-}; do logs+=("$f"); done
out=$DIR
[ "$MODE" = compare ] && out=$T
n=0 differ=0
for f in "${logs[@]}"; do
  key=$(printf '%s' "$f" | tr '/' '_')
  "$SL" diagnose --features --json "$f" >"$out/$key.features.json" 2>&1 || true
  "$SL" diagnose --json --no-write "$f" >"$out/$key.json" 2>&1 || true
  "$SL" diagnose --explain --no-write "$f" >"$out/$key.txt" 2>&1 || true
  n=$((n + 1))
  if [ "$MODE" = compare ]; then
    for ext in features.json json txt; do
      if ! cmp -s "$DIR/$key.$ext" "$T/$key.$ext"; then
        echo "DIFFERS: $f ($ext)"
        diff "$DIR/$key.$ext" "$T/$key.$ext" | head -10
        differ=$((differ + 1))
      fi
    done
  fi
done
if [ "$MODE" = save ]; then
  echo "diagnose_same: saved 3 outputs of each of $n logs in $DIR"
elif [ "$differ" -eq 0 ]; then
  echo "diagnose_same: all 3 outputs of each of $n logs are byte-identical to $DIR"
else
  echo "diagnose_same: $differ outputs of $n logs differ from $DIR"
  exit 1
fi
