#!/usr/bin/env bash
# The fitted diagnosis on the labelled corpus (doc/manual.md, "The differential and its model"):
# on the TEST split top-1, top-3, confirmed top-1 (labels of confidence high), expected
# calibration error (10 bins of the top-1 probability), per category and a confusion table;
# then the same on the TRAIN split, to show the gap. Figures, not a timed test; the test split
# is read here only, never by the fit.
# Usage: bench/diagnose_corpus.sh [SAFE_LAUNCH] [CORPUS_DIR]
#        (default build/bin/safe-launch, tests/corpus)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
SL=${1:-build/bin/safe-launch}
CORPUS=${2:-tests/corpus}
[ -x "$SL" ] || { echo "no $SL: build safe-launch first"; exit 2; }
[ -f "$CORPUS/LABELS.tsv" ] || [ -f "$CORPUS/logs/LABELS.tsv" ] || { echo "no $CORPUS/LABELS.tsv"; exit 2; }
grep -E '^meta' diagnose/model/weights.tsv | cut -f2,3 | tr '\t' '=' | tr '\n' ' '
echo
for split in test train; do
  bench_phase "scoring the $split split"
  /usr/bin/python3 tools/score_diagnosis.py --split "$split" --binary "$SL" --corpus "$CORPUS"
  echo
done
