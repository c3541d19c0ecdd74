#!/usr/bin/env bash
# Prints the catalog's provenance figures: size, rows per kind and project, rows per source file,
# and per NCCL / torch release how many rows carry a format read from it. The figures come from
# the compiled table itself (the catalog_test case "catalog provenance report").
# usage: diagnose/catalog/report.sh [BUILD_DIR]   (default build; needs the catalog_test target)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
T=$B/bin/catalog_test
[ -x "$T" ] || { echo "build the catalog_test target first ($T)" >&2; exit 2; }
"$T" "catalog provenance report" -s 2>/dev/null |
  sed -n '/^catalog: /,/^torch rows per release/p'
