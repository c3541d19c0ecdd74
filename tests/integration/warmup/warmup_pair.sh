#!/bin/bash
# Two "nodes" = two real safe-launch processes, each with its own --sysroot fixture and 2 local
# warm-up ranks (real libtorch Gloo), on loopback or in two network namespaces joined by a veth
# pair. Usage: warmup_pair.sh CASE SAFE_LAUNCH FIXTURES_DIR
#   healthy | mtu | mtu-waived | mtu-waived-recipe | hca | missing | no-node0 | usage | no-binary | torchrun | netns-healthy |
#   netns-mtu | netns-rdzv-elsewhere | secret-healthy | impostor | duplicate | late-duplicate | preset-verdict | nproc-mismatch | rdzv-differs | rdzv-same
set -u
CASE=$1
SL=$2
FX=$3
PY=/usr/bin/python3  # the pyenv python on PATH has no torch

WORK=$(mktemp -d /tmp/sl-warmup-test.XXXXXX)
NS_A="" NS_B=""
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -n "$NS_A" ] && ip netns del "$NS_A" 2>/dev/null
  [ -n "$NS_B" ] && ip netns del "$NS_B" 2>/dev/null
  [ -n "$NS_A" ] && { rm -rf "/etc/netns/$NS_A" "/etc/netns/$NS_B"; rmdir /etc/netns 2>/dev/null; }
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL ($CASE): $*"
  for f in "$WORK"/n*.out; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
  for f in "$WORK"/n*/warmup/rank*.log; do [ -s "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
  exit 1
}
expect_in() {  # FILE PATTERN
  grep -q -- "$2" "$1" || fail "expected '$2' in $1"
}

# A port P with P and P+1 free (rendezvous and warm-up store), below the ephemeral range.
PORT=$($PY "$(dirname "$0")/../helpers/ports.py")
[ -n "$PORT" ] || fail "no free port pair"

HOST=127.0.0.1
PREFIX=()   # command prefix per node (ip netns exec ...)

# run_node IDX FIXTURE NAME [extra args...]: starts one "node" in the background.
run_node() {
  local idx=$1 fixture=$2 name=$3
  shift 3
  local prefix=()
  [ -n "${NS_A}" ] && { if [ "$idx" = 0 ]; then prefix=(ip netns exec "$NS_A"); else prefix=(ip netns exec "$NS_B"); fi; }
  "${prefix[@]}" "$SL" run --sysroot "$fixture" --on-preflight-fail=warn --node-name "$name" \
    --run-dir "$WORK/n$idx" "$@" > "$WORK/n$idx.out" 2>&1 &
  PIDS+=($!)
}
pair_args() {  # IDX [TIMEOUT_S]
  echo --nnodes 2 --node-rank "$1" --nproc-per-node 2 --rendezvous "$HOST:$PORT" --warmup-timeout "${2:-90}"
}

setup_netns() {
  local tag=$$
  NS_A="slwa$tag" NS_B="slwb$tag"
  local va="slva$tag" vb="slvb$tag"
  local net=$((tag % 200 + 20))
  ip netns add "$NS_A" || fail "cannot create network namespace (needs root)"
  ip netns add "$NS_B" || fail "cannot create network namespace"
  ip link add "$va" type veth peer name "$vb" || fail "cannot create veth pair"
  ip link set "$va" netns "$NS_A"
  ip link set "$vb" netns "$NS_B"
  ip -n "$NS_A" addr add "10.251.$net.1/24" dev "$va"
  ip -n "$NS_B" addr add "10.251.$net.2/24" dev "$vb"
  for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
  ip -n "$NS_A" link set "$va" up
  ip -n "$NS_B" link set "$vb" up
  HOST="10.251.$net.1"
  ip netns exec "$NS_B" ip route get "$HOST" > /dev/null || fail "no route from $NS_B to $HOST"
}

wait_all() {
  local rc=()
  for p in "${PIDS[@]}"; do wait "$p"; rc+=($?); done
  PIDS=()
  RCS=("${rc[@]}")
}

json() {  # FILE FILTER
  $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"
}

check_pass_pair() {
  [ "${RCS[0]}" = 0 ] || fail "node 0 exited ${RCS[0]}, expected 0"
  [ "${RCS[1]}" = 0 ] || fail "node 1 exited ${RCS[1]}, expected 0"
  expect_in "$WORK/n0.out" "warm-up passed"
  expect_in "$WORK/n1.out" "warm-up passed"
  expect_in "$WORK/n0.out" "busbw"
  expect_in "$WORK/n0.out" "all_reduce sweep"
  [ "$(json "$WORK/n0/warmup.json" 'd["verdict"]')" = pass ] || fail "node 0 warmup.json not pass"
  [ "$(json "$WORK/n1/warmup.json" 'd["verdict"]')" = pass ] || fail "node 1 warmup.json not pass"
  [ "$(json "$WORK/n0/warmup.json" 'len(d["ranks"])')" = 4 ] || fail "expected 4 rank results"
  [ "$(json "$WORK/n0/warmup.json" 'd["sweep"][-1]["busbw_gbps"] > 0')" = True ] ||
    fail "no bus bandwidth measured"
}

check_mtu_fail() {
  [ "${RCS[0]}" = 69 ] || fail "node 0 exited ${RCS[0]}, expected 69"
  [ "${RCS[1]}" = 69 ] || fail "node 1 exited ${RCS[1]}, expected 69"
  for n in 0 1; do
    expect_in "$WORK/n$n.out" "warm-up FAILED"
    expect_in "$WORK/n$n.out" "MTU of mlx5_.:1 is 1500 on node 1 (roce-b) but 9000"
  done
  [ "$(json "$WORK/n0/warmup.json" '[f["entity"] for f in d["findings"] if f["check"]=="warmup.consistency.mtu"][0]')" = "node 1 (roce-b)" ] ||
    fail "warmup.json does not name node 1 for the MTU"
}

case "$CASE" in
  healthy)
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- true
    wait_all
    check_pass_pair
    ;;
  mtu)
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    run_node 1 "$FX/roce-mtu1500" roce-b $(pair_args 1) -- true
    wait_all
    check_mtu_fail
    ;;
  mtu-waived)
    # The same mismatch, waived on the command line: reported as waived, the job starts.
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) --waive warmup.consistency.mtu -- true
    run_node 1 "$FX/roce-mtu1500" roce-b $(pair_args 1) --waive warmup.consistency.mtu -- true
    wait_all
    [ "${RCS[0]}" = 0 ] || fail "node 0 exited ${RCS[0]}, expected 0"
    [ "${RCS[1]}" = 0 ] || fail "node 1 exited ${RCS[1]}, expected 0"
    for n in 0 1; do expect_in "$WORK/n$n.out" "warm-up passed"; done
    expect_in "$WORK/n0.out" "waived warmup.consistency.mtu"
    [ "$(json "$WORK/n0/warmup.json" '[f["waived"] for f in d["findings"] if f["check"]=="warmup.consistency.mtu"][0]')" = True ] ||
      fail "warmup.json does not mark the MTU finding waived"
    ;;
  mtu-waived-recipe)
    # The waiver from a recipe file instead of the command line.
    printf 'description = "waives the MTU comparison"\nwaive = ["warmup.consistency.mtu"]\n' > "$WORK/waive.toml"
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) --recipe "$WORK/waive.toml" -- true
    run_node 1 "$FX/roce-mtu1500" roce-b $(pair_args 1) --recipe "$WORK/waive.toml" -- true
    wait_all
    [ "${RCS[0]}" = 0 ] || fail "node 0 exited ${RCS[0]}, expected 0"
    [ "${RCS[1]}" = 0 ] || fail "node 1 exited ${RCS[1]}, expected 0"
    expect_in "$WORK/n0.out" "waived warmup.consistency.mtu"
    ;;
  hca)
    # Node 1 lost an HCA: a copy of the fixture without mlx5_1.
    cp -a "$FX/roce-jumbo" "$WORK/one-hca"
    rm -rf "$WORK/one-hca/sys/class/infiniband/mlx5_1"
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    run_node 1 "$WORK/one-hca" roce-b $(pair_args 1) -- true
    wait_all
    [ "${RCS[0]}" = 69 ] || fail "node 0 exited ${RCS[0]}, expected 69"
    [ "${RCS[1]}" = 69 ] || fail "node 1 exited ${RCS[1]}, expected 69"
    expect_in "$WORK/n0.out" "HCA count is 1 on node 1 (roce-b) but 2"
    ;;
  missing)
    # Node 1 never starts: node 0 must give up within its timeout and name node 1 by host.
    start=$(date +%s)
    SLURM_JOB_NODELIST="roce-a,lost-node" run_node 0 "$FX/roce-jumbo" roce-a \
      --nnodes 2 --node-rank 0 --nproc-per-node 2 --rendezvous "$HOST:$PORT" --warmup-timeout 15 -- true
    wait_all
    elapsed=$(( $(date +%s) - start ))
    [ "${RCS[0]}" = 69 ] || fail "node 0 exited ${RCS[0]}, expected 69"
    [ "$elapsed" -le 40 ] || fail "node 0 took ${elapsed}s with a 15 s warm-up timeout"
    expect_in "$WORK/n0.out" "node 1 (lost-node) (all its ranks) did not arrive at the rendezvous"
    expect_in "$WORK/n0.out" "ranks 2,3"
    [ "$(json "$WORK/n0/warmup.json" 'd["verdict"]')" = fail ] || fail "warmup.json not fail"
    ;;
  no-node0)
    # Only node 1 starts: it cannot reach node 0's store and says so, within its timeout.
    start=$(date +%s)
    run_node 1 "$FX/roce-jumbo" roce-b --nnodes 2 --node-rank 1 --nproc-per-node 2 \
      --rendezvous "$HOST:$PORT" --warmup-timeout 10 -- true
    wait_all
    elapsed=$(( $(date +%s) - start ))
    [ "${RCS[0]}" = 69 ] || fail "node 1 exited ${RCS[0]}, expected 69"
    [ "$elapsed" -le 35 ] || fail "node 1 took ${elapsed}s with a 10 s warm-up timeout"
    expect_in "$WORK/n1.out" "could not reach the warm-up store at $HOST:$((PORT + 1)) (hosted by node 0, rank 0)"
    ;;
  usage)
    # Layout errors are usage errors (exit 2) that name the source and the fix; nothing starts.
    "$SL" run --no-preflight --nnodes 2 --run-dir "$WORK/u1" -- true > "$WORK/n0.out" 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "no rendezvous: exit $rc, expected 2"
    expect_in "$WORK/n0.out" "cannot tell where node 0 is"
    expect_in "$WORK/n0.out" "--rendezvous HOST:PORT"
    SLURM_NNODES=2 SLURM_NODEID=0 SLURM_JOB_NODELIST="gpu[01-" "$SL" run --no-preflight \
      --run-dir "$WORK/u2" -- true > "$WORK/n0.out" 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "bad nodelist: exit $rc, expected 2"
    expect_in "$WORK/n0.out" "SLURM_JOB_NODELIST"
    "$SL" run --no-preflight --nnodes 2 --rendezvous h:1 --warmup-timeout 0 --run-dir "$WORK/u3" \
      -- true > "$WORK/n0.out" 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "timeout 0: exit $rc, expected 2"
    expect_in "$WORK/n0.out" "warmup-timeout"
    ;;
  no-binary)
    # A safe-launch without safe-launch-warmup next to it: a multi-node job is refused with the
    # fix; --no-warmup runs it; a single-node job does not need the warm-up.
    mkdir -p "$WORK/bin" && cp "$SL" "$WORK/bin/safe-launch"
    "$WORK/bin/safe-launch" run --no-preflight --nnodes 2 --node-rank 0 --rendezvous "$HOST:$PORT" \
      --run-dir "$WORK/b1" -- true > "$WORK/n0.out" 2>&1
    rc=$?
    [ "$rc" = 69 ] || fail "without the warm-up binary: exit $rc, expected 69"
    expect_in "$WORK/n0.out" "built without libtorch"
    expect_in "$WORK/n0.out" "--no-warmup"
    "$WORK/bin/safe-launch" run --no-preflight --no-warmup --nnodes 2 --node-rank 0 \
      --rendezvous "$HOST:$PORT" --run-dir "$WORK/b2" -- true > "$WORK/n0.out" 2>&1 ||
      fail "--no-warmup did not run the job"
    "$WORK/bin/safe-launch" run --no-preflight --run-dir "$WORK/b3" -- true > "$WORK/n0.out" 2>&1 ||
      fail "a single-node job needed the warm-up"
    ;;
  torchrun)
    # Topology from torchrun's own (torch 1.13 underscore) arguments; the job is real torchrun.
    # (Debian's torchrun 1.13 on Python 3.11 crashes with its default --redirects/--tee: -r/-t.)
    cat > "$WORK/job.py" <<'PYEOF'
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(4) * (dist.get_rank() + 1)
dist.all_reduce(t)
n = dist.get_world_size()
assert t[0].item() == n * (n + 1) / 2, t
if dist.get_rank() == 0:
    print("job all_reduce ok", flush=True)
dist.destroy_process_group()
PYEOF
    for i in 0 1; do
      run_node $i "$FX/roce-jumbo" "roce-$i" --warmup-timeout 90 -- \
        /usr/bin/torchrun --nnodes=2 --node_rank=$i --nproc_per_node=2 -r 1 -t 1 --monitor_interval 0.5 \
        --master_addr=127.0.0.1 --master_port=$PORT "$WORK/job.py"
    done
    wait_all
    check_pass_pair
    expect_in "$WORK/n0.out" "job all_reduce ok"
    expect_in "$WORK/n0.out" "store 127.0.0.1:$((PORT + 1))"
    ;;
  secret-healthy)
    # The same secret on both nodes: the warm-up passes, says it was authenticated, warns about
    # nothing, and every file it wrote is owner-only.
    export SAFE_LAUNCH_WARMUP_SECRET=s3cret-of-this-job
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- true
    wait_all
    check_pass_pair
    for n in 0 1; do
      [ "$(json "$WORK/n$n/warmup.json" 'd["auth"]["authenticated"]')" = True ] ||
        fail "node $n warmup.json does not say the store was authenticated"
      grep -q "unauthenticated" "$WORK/n$n.out" && fail "node $n warned about an unauthenticated store"
      for f in "$WORK/n$n/warmup.json" "$WORK/n$n/warmup/plan.json" "$WORK/n$n"/warmup/rank*.json \
               "$WORK/n$n"/warmup/rank*.log; do
        [ "$(stat -c %a "$f")" = 600 ] || fail "$f has mode $(stat -c %a "$f"), expected 600"
      done
      grep -q s3cret-of-this-job "$WORK/n$n/warmup/plan.json" && fail "the secret itself is in plan.json"
    done
    unset SAFE_LAUNCH_WARMUP_SECRET
    # Without a secret, a multi-node warm-up says its store is unauthenticated.
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0 5) -- true
    wait_all
    expect_in "$WORK/n0.out" "warm-up store unauthenticated"
    expect_in "$WORK/n0.out" "SAFE_LAUNCH_WARMUP_SECRET"
    ;;
  impostor)
    # A process without the job's secret answers for node 1: node 0 refuses every claim it
    # makes, names it, and does not start the job; the impostor refuses node 0's verdict.
    start=$(date +%s)
    SAFE_LAUNCH_WARMUP_SECRET=the-job run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0 30) -- true
    SAFE_LAUNCH_WARMUP_SECRET=not-the-job run_node 1 "$FX/roce-jumbo" roce-x $(pair_args 1 30) -- true
    wait_all
    [ "${RCS[0]}" = 69 ] || fail "node 0 exited ${RCS[0]}, expected 69 (it believed the impostor)"
    [ "${RCS[1]}" = 69 ] || fail "impostor exited ${RCS[1]}, expected 69"
    expect_in "$WORK/n0.out" "refused a claim on rank [23] (node 1)"
    expect_in "$WORK/n0.out" "tag made with another key"
    expect_in "$WORK/n0.out" "did not arrive at the rendezvous"
    # The impostor refuses node 0's verdict when it reads it before node 0 stops; on a loaded
    # machine node 0 may be gone first, and then it fails for want of a verdict. Either way it
    # did not pass (exit 69 above).
    expect_in "$WORK/n1.out" "refused a verdict\|no verdict from rank 0"
    [ "$(json "$WORK/n0/warmup.json" 'sorted({f["check"] for f in d["findings"]})')" = "['warmup.arrival', 'warmup.auth']" ] ||
      fail "node 0 warmup.json findings are not arrival + auth"
    [ $(( $(date +%s) - start )) -le 60 ] || fail "took more than 60 s with a 30 s timeout"
    ;;
  duplicate)
    # Two processes claim node 1 (the same --node-rank twice): named with both hosts before
    # any collective; nobody starts the job.
    export SAFE_LAUNCH_WARMUP_SECRET=s3cret-of-this-job
    run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- true
    run_node 2 "$FX/roce-jumbo" roce-c $(pair_args 1) -- true
    sleep 2
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    wait_all
    for i in 0 1 2; do [ "${RCS[$i]}" = 69 ] || fail "process $i exited ${RCS[$i]}, expected 69"; done
    expect_in "$WORK/n0.out" "two processes claim node 1: hosts roce-[bc] (127.0.0.1, pid [0-9]*) and roce-[bc]"
    expect_in "$WORK/n1.out" "two processes claim node 1"
    expect_in "$WORK/n2.out" "two processes claim node 1"
    # Usually no collective runs: both claims arrive before node 0's verdict. The second claim can
    # only be made once node 0's store is up, so on a loaded machine it may land after the
    # verdict; then it is still named (above) and nobody passes (exit 69), which is the contract.
    unset SAFE_LAUNCH_WARMUP_SECRET
    ;;
  late-duplicate)
    # A second --node-rank 1 starts after the warm-up passed and the job runs: node 0's store is
    # gone, but its launcher answers on the warm-up port, so the late one is refused at once,
    # naming the first claimant, where it used to wait its whole timeout ("could not reach").
    export SAFE_LAUNCH_WARMUP_SECRET=s3cret-of-this-job
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- sleep 60
    run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- sleep 60
    for _ in $(seq 1 900); do
      grep -q "warm-up passed" "$WORK/n0.out" 2>/dev/null && break
      sleep 0.1
    done
    expect_in "$WORK/n0.out" "warm-up passed"
    sleep 1  # the guard starts right after the verdict line
    start=$(date +%s)
    "$SL" run --sysroot "$FX/roce-jumbo" --on-preflight-fail=warn --node-name roce-c \
      --run-dir "$WORK/n2" $(pair_args 1 90) -- true > "$WORK/n2.out" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    [ "$rc" = 69 ] || fail "the late claimant exited $rc, expected 69"
    [ "$took" -le 20 ] || fail "the late claimant took ${took} s to be refused (timeout 90 s)"
    expect_in "$WORK/n2.out" "two processes claim node 1: roce-b (127.0.0.1, pid [0-9]*) passed this job's warm-up"
    expect_in "$WORK/n2.out" "this process on roce-c is a second --node-rank 1 and is refused at once"
    expect_in "$WORK/n2.out" "give every node its own --node-rank"
    expect_in "$WORK/n0.out" "refused a late claim from 127.0.0.1"
    unset SAFE_LAUNCH_WARMUP_SECRET
    ;;
  preset-verdict)
    # Something else hosts the store with a verdict and a report already set (plain keys, and the
    # job's namespaced keys without a tag): node 1 must not pass on them.
    cat > "$WORK/fake_store.py" <<'PYEOF'
import json, sys, time
from datetime import timedelta
import torch.distributed as dist
port = int(sys.argv[1])
s = dist.TCPStore("127.0.0.1", port, 1, True, timedelta(seconds=30), wait_for_workers=False)
fake = {"verdict": json.dumps({"run_collectives": False, "findings": []}),
        "report": json.dumps({"verdict": "pass", "nnodes": 2, "nproc_per_node": 2})}
for k, v in fake.items():
    s.set(k, v)
    s.set("sl-warmup/port-%d/%s" % (port, k), v)
print("fake store up", flush=True)
time.sleep(60)
PYEOF
    $PY "$WORK/fake_store.py" $((PORT + 1)) > "$WORK/fake.out" 2>&1 &
    PIDS+=($!)
    FAKE=$!
    for _ in $(seq 100); do grep -q "fake store up" "$WORK/fake.out" && break; sleep 0.2; done
    expect_in "$WORK/fake.out" "fake store up"
    run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1 20) -- true
    wait "${PIDS[1]}"
    rc=$?
    kill -KILL "$FAKE" 2>/dev/null
    PIDS=()
    [ "$rc" = 69 ] || fail "node 1 exited $rc, expected 69 (it believed a pre-set verdict)"
    grep -q "warm-up passed" "$WORK/n1.out" && fail "node 1 passed on a pre-set verdict"
    # The impostor refuses node 0's verdict when it reads it before node 0 stops; on a loaded
    # machine node 0 may be gone first, and then it fails for want of a verdict. Either way it
    # did not pass (exit 69 above).
    expect_in "$WORK/n1.out" "refused a verdict\|no verdict from rank 0"
    expect_in "$WORK/n1.out" "carries no tag"
    ;;
  nproc-mismatch)
    # Node 1 runs 3 ranks where node 0 runs 2: named at once, not a Gloo timeout 90 s later.
    start=$(date +%s)
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    run_node 1 "$FX/roce-jumbo" roce-b --nnodes 2 --node-rank 1 --nproc-per-node 3 \
      --rendezvous "$HOST:$PORT" --warmup-timeout 90 -- true
    wait_all
    elapsed=$(( $(date +%s) - start ))
    [ "${RCS[0]}" = 69 ] || fail "node 0 exited ${RCS[0]}, expected 69"
    [ "${RCS[1]}" = 69 ] || fail "node 1 exited ${RCS[1]}, expected 69"
    [ "$elapsed" -le 45 ] || fail "took ${elapsed}s: the mismatch was not named at once"
    for n in 0 1; do
      expect_in "$WORK/n$n.out" "node 1 (roce-b) runs 3 rank(s) per node (--nproc-per-node) but node 0 runs 2"
    done
    ;;
  rdzv-differs)
    # Node 1 gives its job another MASTER_ADDR, then (torchrun) another --master_port: node 0
    # names both nodes and values in seconds, not at torchrun's rendezvous timeout.
    start=$(date +%s)
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    MASTER_ADDR=127.0.0.2 MASTER_PORT=$PORT run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- true
    wait_all
    [ "${RCS[0]}" = 69 ] || fail "node 0 exited ${RCS[0]}, expected 69"
    [ "${RCS[1]}" = 69 ] || fail "node 1 exited ${RCS[1]}, expected 69"
    [ $(( $(date +%s) - start )) -le 45 ] || fail "the endpoint mismatch was not named at once"
    for n in 0 1; do
      expect_in "$WORK/n$n.out" "node 1 (roce-b) gives torchrun the rendezvous endpoint '127.0.0.2:$PORT' (from MASTER_ADDR + MASTER_PORT, resolves to 127.0.0.2) but node 0 (roce-a) gives '127.0.0.1:$PORT'"
    done
    expect_in "$WORK/n0.out" "compute it once for the job"
    [ "$(json "$WORK/n0/warmup.json" '[f["entity"] for f in d["findings"] if f["check"]=="warmup.consistency.rendezvous"]')" = "['node 1 (roce-b)']" ] ||
      fail "warmup.json does not name node 1 for the rendezvous"
    [ "$(json "$WORK/n1/status.json" 'd["rendezvous"]["job"]["host"]')" = 127.0.0.2 ] ||
      fail "node 1 status.json does not record the endpoint it gives torchrun"
    for i in 0 1; do
      run_node $i "$FX/roce-jumbo" "roce-$i" $(pair_args $i) -- /usr/bin/torchrun --nnodes=2 \
        --node_rank=$i --nproc_per_node=2 --master_addr=127.0.0.1 --master_port=$((PORT + 7 * i)) \
        "$WORK/never.py"
    done
    wait_all
    [ "${RCS[1]}" = 69 ] || fail "torchrun: node 1 exited ${RCS[1]}, expected 69"
    expect_in "$WORK/n0.out" "node 1 (roce-1) gives torchrun the rendezvous endpoint '127.0.0.1:$((PORT + 7))' (from torchrun --master-addr + torchrun --master-port"
    ;;
  rdzv-same)
    # The same endpoint written two ways (a name and its address) is the same endpoint.
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    MASTER_ADDR=localhost MASTER_PORT=$PORT run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- true
    wait_all
    check_pass_pair
    ;;
  netns-rdzv-elsewhere)
    # One name, resolved differently per node: `ip netns exec` gives each namespace its own
    # /etc/hosts (/etc/netns/NAME/hosts), and node 1's maps the head's name elsewhere.
    setup_netns
    mkdir -p "/etc/netns/$NS_A" "/etc/netns/$NS_B"
    echo "$HOST rdzvhead" > "/etc/netns/$NS_A/hosts"
    echo "${HOST%.1}.77 rdzvhead" > "/etc/netns/$NS_B/hosts"
    start=$(date +%s)
    MASTER_ADDR=rdzvhead MASTER_PORT=$PORT run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    MASTER_ADDR=rdzvhead MASTER_PORT=$PORT run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- true
    wait_all
    [ "${RCS[0]}" = 69 ] || fail "node 0 exited ${RCS[0]}, expected 69"
    [ "${RCS[1]}" = 69 ] || fail "node 1 exited ${RCS[1]}, expected 69"
    [ $(( $(date +%s) - start )) -le 45 ] || fail "the endpoint mismatch was not named at once"
    for n in 0 1; do
      expect_in "$WORK/n$n.out" "the rendezvous endpoint resolves elsewhere on node 1 (roce-b): 'rdzvhead:$PORT' (from MASTER_ADDR + MASTER_PORT, resolves to ${HOST%.1}.77) there, 'rdzvhead:$PORT' (from MASTER_ADDR + MASTER_PORT, resolves to $HOST) on node 0 (roce-a)"
    done
    expect_in "$WORK/n0.out" "make 'rdzvhead' resolve to node 0's address on node 1 (roce-b)"
    ;;
  netns-healthy)
    setup_netns
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    run_node 1 "$FX/roce-jumbo" roce-b $(pair_args 1) -- true
    wait_all
    check_pass_pair
    [ "$(json "$WORK/n1/warmup.json" 'd["this_node"]["local_address"]')" != 127.0.0.1 ] ||
      fail "node 1 used loopback inside its namespace"
    ;;
  netns-mtu)
    setup_netns
    run_node 0 "$FX/roce-jumbo" roce-a $(pair_args 0) -- true
    run_node 1 "$FX/roce-mtu1500" roce-b $(pair_args 1) -- true
    wait_all
    check_mtu_fail
    ;;
  *)
    echo "unknown case $CASE"
    exit 2
    ;;
esac
echo "ok ($CASE)"
