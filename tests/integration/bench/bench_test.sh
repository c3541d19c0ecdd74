#!/bin/bash
# `safe-launch bench` end to end. Usage: bench_test.sh CASE SAFE_LAUNCH FIXTURES_DIR
#   netns-slow-node  4 "nodes" = 4 network namespaces on a bridge (a 5th namespace), node 2's
#                    veth shaped with tc netem in both directions: the pair rounds name node 2
#   netns-auto       the same, without --pairs always: the drop below a baseline starts them
#   run-history      run's warm-up appends to SAFE_LAUNCH_BW_HISTORY, compares with the baseline
#   import           a real all_reduce_perf output imported; a copy with #wrong != 0 fails
#   history          two imports of the same nodes: the second, slower, is a drop vs the median
#   baseline         an import against a baseline (a history line) it falls short of
#   nccl-tests       a fake all_reduce_perf on the PATH (prints a real output) run and imported
set -u
CASE=$1
SL=$2
FX=$3
PY=/usr/bin/python3

WORK=$(mktemp -d /tmp/sl-bench-test.XXXXXX)
NSS=()
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  # Deleting a namespace deletes its veth ends and their qdiscs with it.
  for ns in "${NSS[@]}"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL ($CASE): $*"
  for f in "$WORK"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -40 "$f"; }; done
  exit 1
}
expect_in() { grep -q -- "$2" "$1" || fail "expected '$2' in $1"; }
json() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"; }

NVS=$FX/nccl_tests/all_reduce_perf_4gpu_nvswitch_a100_good_llm-insights.txt
HDR=$FX/nccl_tests/constructed_2node_16gpu_header.txt

# setup_nodes N: namespaces slb<tag>n0..n(N-1) with 10.252.<net>.(i+1), bridged in slb<tag>sw.
setup_nodes() {
  local n=$1 tag=$$ net=$(( $$ % 200 + 20 ))
  SW="slb${tag}sw"
  ip netns add "$SW" || fail "cannot create network namespace (needs root)"
  NSS+=("$SW")
  ip -n "$SW" link add br0 type bridge
  ip -n "$SW" link set br0 up
  for i in $(seq 0 $((n - 1))); do
    local ns="slb${tag}n$i"
    ip netns add "$ns" || fail "cannot create $ns"
    NSS+=("$ns")
    ip link add "slb${tag}a$i" type veth peer name "slb${tag}b$i" || fail "cannot create veth"
    ip link set "slb${tag}a$i" netns "$ns"
    ip link set "slb${tag}b$i" netns "$SW"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.252.$net.$((i + 1))/24" dev "slb${tag}a$i"
    ip -n "$ns" link set "slb${tag}a$i" up
    ip -n "$SW" link set "slb${tag}b$i" master br0
    ip -n "$SW" link set "slb${tag}b$i" up
  done
  HOST="10.252.$net.1"
  TAG=$tag
  for i in $(seq 1 $((n - 1))); do
    ip netns exec "slb${tag}n$i" ip route get "$HOST" > /dev/null || fail "no route from node $i to $HOST"
  done
}
# shape IDX RATE: both directions of node IDX's link (its veth end and the bridge's), with netem
# where the kernel has sch_netem, else with tbf (a token bucket: the same rate limit).
shape() {
  local dev ns
  for dev in "slb${TAG}a$1:slb${TAG}n$1" "slb${TAG}b$1:$SW"; do
    ns=${dev#*:}
    dev=${dev%%:*}
    ip netns exec "$ns" tc qdisc add dev "$dev" root netem rate "$2" 2> /dev/null ||
      ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$2" burst 32kbit latency 400ms ||
      fail "tc: neither netem nor tbf on $dev"
  done
  SHAPER=$(ip netns exec "slb${TAG}n$1" tc qdisc show dev "slb${TAG}a$1" | awk '{print $2; exit}')
}

case "$CASE" in
  netns-slow-node)
    setup_nodes 4
    shape 2 100mbit
    PORT=29611
    start=$(date +%s.%N)
    for i in 0 1 2 3; do
      ip netns exec "slb${TAG}n$i" "$SL" bench --sysroot "$FX/roce-jumbo" --node-name "n$i" \
        --nnodes 4 --node-rank $i --nproc-per-node 1 --rendezvous "$HOST:$PORT" --backend gloo \
        --sizes 256K,1M --iterations 3 --pairs always --timeout 120 --run-dir "$WORK/r$i" \
        --history "$WORK/h$i.jsonl" > "$WORK/n$i.out" 2>&1 &
      PIDS+=($!)
    done
    rcs=()
    for p in "${PIDS[@]}"; do wait "$p"; rcs+=($?); done
    PIDS=()
    elapsed=$($PY -c "import time; print(round(time.time() - $start, 1))")
    echo "4 nodes, node 2 shaped to 100mbit ($SHAPER): ${elapsed}s"
    [ "${rcs[0]}" = 1 ] || fail "node 0 exited ${rcs[0]}, expected 1 (a slow node is a finding)"
    expect_in "$WORK/n0.out" "node 2 (n2) is slow in every pair it is part of"
    grep -q "node [013] (n[013]) is slow in every pair" "$WORK/n0.out" && fail "a healthy node was named"
    [ "$(json "$WORK/r0/warmup.json" 'd["pairs"]["slow_nodes"]')" = "[2]" ] || fail "warmup.json slow_nodes != [2]"
    expect_in "$WORK/r0/bandwidth.svg" "node 2 (n2) (slow)"
    expect_in "$WORK/h0.jsonl" '"pairs"'
    # The other nodes print the verdict, not the analysis.
    expect_in "$WORK/n3.out" "warm-up"
    ;;
  netns-auto)
    # No --pairs always: a healthy run becomes the baseline; with node 2 shaped the sweep falls
    # below it, which by itself starts the pair rounds, and they name node 2.
    setup_nodes 4
    for phase in healthy shaped; do
      [ "$phase" = shaped ] && shape 2 100mbit
      extra=()
      [ "$phase" = shaped ] && extra=(--baseline "$WORK/base.json")
      for i in 0 1 2 3; do
        ip netns exec "slb${TAG}n$i" "$SL" bench --sysroot "$FX/roce-jumbo" --node-name "n$i" \
          --nnodes 4 --node-rank $i --nproc-per-node 1 --rendezvous "$HOST:$((29621 + ${#phase}))" \
          --backend gloo --sizes 256K,1M --iterations 3 --timeout 120 --run-dir "$WORK/$phase$i" \
          --history "$WORK/h.jsonl" "${extra[@]}" > "$WORK/$phase$i.out" 2>&1 &
        PIDS+=($!)
      done
      for p in "${PIDS[@]}"; do wait "$p"; done
      PIDS=()
      [ "$phase" = healthy ] && tail -1 "$WORK/h.jsonl" > "$WORK/base.json"
    done
    grep -q "pair" "$WORK/healthy0/warmup.json" && fail "the healthy run ran pair rounds"
    expect_in "$WORK/shaped0.out" "busbw dropped against the baseline"
    expect_in "$WORK/shaped0.out" "node 2 (n2) is slow in every pair it is part of"
    ;;
  import)
    "$SL" bench --sysroot "$FX/ib-healthy" --import "$NVS" --run-dir "$WORK/r" > "$WORK/a.out" 2>&1
    rc=$?
    [ "$rc" = 0 ] || fail "a clean import exited $rc"
    expect_in "$WORK/a.out" "all_reduce_perf 4 size(s), #wrong 0, avg busbw 222.07 GB/s"
    [ -s "$WORK/r/bandwidth.svg" ] || fail "no picture"
    sed 's/  234.72      0    54890/  234.72      5    54890/' "$NVS" > "$WORK/bad.txt"
    "$SL" bench --sysroot "$FX/ib-healthy" --import "$WORK/bad.txt" --run-dir "$WORK/r2" > "$WORK/b.out" 2>&1
    rc=$?
    [ "$rc" = 1 ] || fail "#wrong 5 exited $rc, expected 1"
    expect_in "$WORK/b.out" "data corruption: 5 wrong at 8192 MiB"
    head -6 "$NVS" > "$WORK/cut.txt"
    "$SL" bench --sysroot "$FX/ib-healthy" --import "$WORK/cut.txt" --run-dir "$WORK/r3" > "$WORK/c.out" 2>&1
    [ $? = 1 ] || fail "a truncated output passed"
    expect_in "$WORK/c.out" "the run did not finish"
    # Across two nodes of 2 x 400 Gb/s: measured against the line, and found short.
    "$SL" bench --sysroot "$FX/ib-healthy" --import "$HDR" --run-dir "$WORK/r5" > "$WORK/e.out" 2>&1
    [ $? = 1 ] || fail "0.44 of the line passed"
    expect_in "$WORK/e.out" "busbw 43.81 GB/s at 512 MiB is 0.44 of the expected 99.4 GB/s (2 x 400 Gb/s InfiniBand"
    "$SL" bench --import /nonexistent --run-dir "$WORK/r4" > "$WORK/d.out" 2>&1
    [ $? = 2 ] || fail "a missing file is not a usage error"
    ;;
  history)
    H="$WORK/h.jsonl"
    for i in 1 2 3; do
      "$SL" bench --sysroot "$FX/socket-only" --import "$HDR" --history "$H" --run-dir "$WORK/r$i" > "$WORK/g$i.out" 2>&1 ||
        fail "import $i failed"
    done
    expect_in "$WORK/g1.out" "no earlier run on these nodes"
    expect_in "$WORK/g3.out" "within 10% of the median of the last 2 run(s)"
    # The same nodes, 25% slower at every size.
    $PY - "$HDR" > "$WORK/slow.txt" <<'PYEOF'
import sys
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0].isdigit():
        for i in (6, 7, 10, 11):
            f[i] = "%.2f" % (float(f[i]) * 0.75)
        line = "  ".join(f) + "\n"
    sys.stdout.write(line)
PYEOF
    "$SL" bench --sysroot "$FX/socket-only" --import "$WORK/slow.txt" --history "$H" --run-dir "$WORK/r4" > "$WORK/s.out" 2>&1
    rc=$?
    [ "$rc" = 1 ] || fail "a 25% drop exited $rc, expected 1"
    expect_in "$WORK/s.out" "busbw dropped against the median of the last 3 run(s): 8 MiB 30.04 -> 22.53 GB/s (-25%)"
    [ "$(wc -l < "$H")" = 4 ] || fail "history has $(wc -l < "$H") lines, expected 4"
    ;;
  baseline)
    "$SL" bench --sysroot "$FX/socket-only" --import "$HDR" --history "$WORK/h.jsonl" --run-dir "$WORK/r1" > "$WORK/a.out" 2>&1 ||
      fail "import failed"
    tail -1 "$WORK/h.jsonl" | sed 's/"busbw_gbps":43.81/"busbw_gbps":60.0/' > "$WORK/base.json"
    "$SL" bench --sysroot "$FX/socket-only" --import "$HDR" --baseline "$WORK/base.json" --run-dir "$WORK/r2" > "$WORK/b.out" 2>&1
    rc=$?
    [ "$rc" = 1 ] || fail "below the baseline exited $rc, expected 1"
    expect_in "$WORK/b.out" "busbw dropped against the baseline: 512 MiB 60.00 -> 43.81 GB/s (-27%)"
    expect_in "$WORK/r2/bandwidth.svg" "baseline"
    echo '{"sweep": []}' > "$WORK/empty.json"
    "$SL" bench --import "$HDR" --baseline "$WORK/empty.json" --run-dir "$WORK/r3" > "$WORK/c.out" 2>&1
    expect_in "$WORK/c.out" "a baseline needs a non-empty"
    ;;
  nccl-tests)
    mkdir -p "$WORK/bin"
    cat > "$WORK/bin/all_reduce_perf" <<SHEOF
#!/bin/bash
echo "\$0 \$*" > "$WORK/argv.txt"
env | grep '^NCCL_' > "$WORK/env.txt"
cat "$HDR"
SHEOF
    chmod +x "$WORK/bin/all_reduce_perf"
    PATH="$WORK/bin:$PATH" "$SL" bench --sysroot "$FX/socket-only" --nccl-tests --run-dir "$WORK/r" > "$WORK/a.out" 2>&1
    rc=$?
    [ "$rc" = 0 ] || fail "bench --nccl-tests exited $rc"
    expect_in "$WORK/argv.txt" "all_reduce_perf -b 8M -e 512M -f 2 -g 1"
    expect_in "$WORK/env.txt" "NCCL_DEBUG=WARN"  # the tuned environment (default recipe)
    expect_in "$WORK/a.out" "all_reduce_perf 7 size(s), #wrong 0"
    cmp -s "$HDR" "$WORK/r/nccl-tests.txt" || fail "the output was not kept in the run directory"
    # Outside Slurm with hosts: under mpirun, every tuned variable passed with -x.
    printf '#!/bin/bash\necho "$0 $*" > "%s/mpi-argv.txt"\nwhile [ "$1" != all_reduce_perf ]; do shift; done\nexec "$@"\n' "$WORK" > "$WORK/bin/mpirun"
    chmod +x "$WORK/bin/mpirun"
    PATH="$WORK/bin:$PATH" "$SL" bench --sysroot "$FX/socket-only" --nccl-tests --mpirun-hosts gpu-01,gpu-02 \
      --nproc-per-node 2 --run-dir "$WORK/r3" > "$WORK/c.out" 2>&1 || fail "bench --nccl-tests under mpirun failed"
    expect_in "$WORK/mpi-argv.txt" "mpirun -np 4 -H gpu-01:2,gpu-02:2 .*-x NCCL_DEBUG .*all_reduce_perf -b 8M"
    env -i PATH=/usr/bin:/bin "$SL" bench --nccl-tests --run-dir "$WORK/r2" > "$WORK/b.out" 2>&1
    [ $? = 2 ] || fail "without all_reduce_perf: not a usage error"
    expect_in "$WORK/b.out" "all_reduce_perf is not on the PATH"
    ;;
  run-history)
    # `run`'s warm-up (2 nodes x 1 rank on loopback) appends to SAFE_LAUNCH_BW_HISTORY and compares
    # with SAFE_LAUNCH_BW_BASELINE; a drop is a warning, the job still starts.
    PORT=$($PY "$(dirname "$0")/../helpers/ports.py") || fail "no free port pair"
    echo '{"sweep": [{"bytes": 65536, "busbw_gbps": 1000}]}' > "$WORK/base.json"
    for i in 0 1; do
      SAFE_LAUNCH_BW_HISTORY="$WORK/h.jsonl" SAFE_LAUNCH_BW_BASELINE="$WORK/base.json" \
        "$SL" run --sysroot "$FX/roce-jumbo" --on-preflight-fail=warn --node-name "r$i" --nnodes 2 \
        --node-rank $i --nproc-per-node 1 --rendezvous "127.0.0.1:$PORT" --warmup-timeout 90 \
        --run-dir "$WORK/n$i" -- true > "$WORK/n$i.out" 2>&1 &
      PIDS+=($!)
    done
    rcs=()
    for p in "${PIDS[@]}"; do wait "$p"; rcs+=($?); done
    PIDS=()
    [ "${rcs[0]}" = 0 ] || fail "node 0 exited ${rcs[0]}"
    [ "${rcs[1]}" = 0 ] || fail "node 1 exited ${rcs[1]}"
    [ "$(wc -l < "$WORK/h.jsonl")" = 1 ] || fail "node 0 did not append exactly one line"
    expect_in "$WORK/h.jsonl" '"source":"warmup"'
    expect_in "$WORK/h.jsonl" '"nodes":\["r0","r1"\]'
    expect_in "$WORK/n0.out" "warm-up bandwidth: warmup.bandwidth.baseline busbw dropped against the baseline: 64 KiB 1000.00 ->"
    expect_in "$WORK/n0.out" "no earlier run on these nodes"
    [ -s "$WORK/n0/bandwidth.svg" ] || fail "no picture in node 0's run directory"
    grep -q "warm-up bandwidth" "$WORK/n1.out" && fail "node 1 compared too"
    ;;
  *)
    echo "unknown case $CASE"
    exit 2
    ;;
esac
echo "ok ($CASE)"
