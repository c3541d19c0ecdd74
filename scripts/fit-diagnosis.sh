#!/usr/bin/env bash
# Refits the diagnosis model: builds safe-launch if needed, runs its `diagnose --features` over
# the corpus's train split and fits diagnose/model/weights.tsv (tools/fit_diagnosis.py, needs
# python3-sklearn: development tooling, never CI). Then rebuild: the table is embedded.
# usage: bash scripts/fit-diagnosis.sh [fit_diagnosis.py options, e.g. --corpus DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" -j "$(nproc)" --target safe-launch
# Debian's python3-sklearn lives with the system interpreter, which a pyenv shim may hide.
PY=""
for p in ${PYTHON:-} /usr/bin/python3 python3; do
  if "$p" -c 'import sklearn' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "fit-diagnosis: scikit-learn is missing (apt-get install python3-sklearn)" >&2
  exit 1
fi
"$PY" tools/fit_diagnosis.py --binary "$BUILD_DIR/bin/safe-launch" "$@"
# The binary embeds the table: rebuild so that it carries the new one.
cmake --build "$BUILD_DIR" -j "$(nproc)" --target safe-launch
