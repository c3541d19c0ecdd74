#!/usr/bin/env bash
# Scale bench (issue 26): N simulated nodes on this one host, for N = 2 16 128 512 1024 (or the
# list given). Per N it prints
#   1. warm-up facts exchange: the time from the last node's arrival at the store to every node's
#      verdict (and report), node 0's CPU time and peak RSS, the store's peak connections -- N
#      safe-launch-warmup-sim processes (the real protocol of warmup/torch/warmup_main.cpp and
#      the real comparisons, over the simulator's store, no libtorch, no collectives);
#      plus two failure runs: one node with MTU 1500 (named by the comparison) and one node that
#      never starts (named at the warm-up deadline, --deadline seconds);
#   2. coordinated capture: N sl-scale-peer processes on one shared .events/ (the real
#      PeerChannel); the time from node 0's detection to every node's bundle started, and each
#      node's polling CPU per second (should not grow with N);
#   3. `safe-launch diagnose RUN_ROOT` over N node run directories, each a copy of one real run
#      directory with a real hang bundle (captured by `safe-launch run` at the start of the
#      bench, node name rewritten), one of them without a bundle: wall time, peak RSS, files and
#      bytes in the run root;
# and writes the curves to an SVG (default $TMPDIR/sl-scale.svg).
# usage: bench/scale.sh [BUILD_DIR] [N ...]         (default build, 2 16 128 512 1024)
# env:   SCALE_SVG=path  SCALE_DEADLINE=seconds (warm-up deadline, default 20)
#        SCALE_SKIP=warmup,capture,diagnose  SCALE_JSON=path (figures as JSON, for tests)
#        SCALE_CAPTURE_S=seconds each capture node runs after the detection (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
shift || true
NS=${*:-2 16 128 512 1024}
for bin in safe-launch safe-launch-warmup-sim sl-scale-peer sl-test-child; do
  [[ -x $B/bin/$bin ]] || { echo "build $bin first ($B/bin/$bin missing)"; exit 2; }
done
# node 0's store holds one socket per node; each node process a few descriptors.
ulimit -n "$(ulimit -Hn)"
exec /usr/bin/python3 bench/scale_sim.py "$B" $NS
