#!/usr/bin/env bash
# Prints the catalog's provenance figures: size, rows per kind and project, rows per source file,
# and per NCCL / torch release how many rows carry a format read from it. The figures come from
# the compiled table itself (the catalog_test case "catalog provenance report").
# With --table: the markdown table of every row (id, kind, substrings, category, severity,
# priority, provenance) that doc/manual.md's "Signature catalog" section holds.
# usage: diagnose/catalog/report.sh [--table] [BUILD_DIR]   (default build; needs catalog_test)
set -euo pipefail
cd "$(dirname "$0")/../.."
TABLE=0
if [ "${1:-}" = --table ]; then TABLE=1; shift; fi
B=${1:-build}
T=$B/bin/catalog_test
[ -x "$T" ] || { echo "build the catalog_test target first ($T)" >&2; exit 2; }
if [ "$TABLE" = 1 ]; then
  "$T" "[.table]" -s 2>/dev/null | grep '^|'
  exit 0
fi
"$T" "catalog provenance report" -s 2>/dev/null |
  grep -E '^catalog: |^rows per |^ +[0-9]+  |^[a-z]+ rows per release:'
