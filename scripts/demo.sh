#!/usr/bin/env bash
# The main job, as a demo on a fresh Debian 12 machine: installs the packages it needs, builds only
# what it runs (the safe-launch binary and the warm-up helper: no tests), then shows what
# safe-launch does on this machine and on fixture trees of broken nodes. One progress line per
# phase; what is built already is not built again.
set -euo pipefail
N_PHASES=$(grep -cE '^\s*(phase|step) "' "${BASH_SOURCE[0]}")  # every phase and step line below
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
T0=$(date +%s)
phase_no=0
phase() {  # the progress line of the next phase, with the time since the start
  phase_no=$((phase_no + 1))
  printf '\n\033[1m[demo %d/%d, %ds] %s\033[0m\n' "$phase_no" "$N_PHASES" "$(($(date +%s) - T0))" "$*"
}
step() { phase "$@"; }

phase "packages 1/2: compiler, CMake, header libraries (Debian 12; skipped when installed)"
bash scripts/install-deps.sh --demo-tools
# libtorch's closure (~350 packages, mostly download and unpack) installs while safe-launch, which
# does not need it, builds; its output goes to a log, its exit status is waited for below.
PKG_LOG=$(mktemp "${TMPDIR:-/tmp}/safe-launch-demo-torch.XXXXXX.log")
phase "packages 2/2 in the background: libtorch, torch, Gloo (log: $PKG_LOG)"
# At the lowest CPU and I/O priority: dpkg's unpacking gives way to the compiler (the build is the
# longer of the two; the install still ends well before it on 2 cores).
nice -n 19 ionice -c 3 bash scripts/install-deps.sh --demo-torch >"$PKG_LOG" 2>&1 &
PKG_PID=$!
wait_packages() {  # the background install's exit status; on failure its log's tail, and stop
  local rc=0
  wait "$PKG_PID" || rc=$?
  PKG_PID=
  sed 's/^/  /' "$PKG_LOG"
  if ((rc)); then
    echo "demo: installing libtorch/torch failed (exit $rc); the log is $PKG_LOG" >&2
    exit "$rc"
  fi
}
# A failed build still waits for apt: a dpkg killed halfway leaves the machine to repair.
trap '[ -z "${PKG_PID:-}" ] || { echo "demo: waiting for the package install (log: $PKG_LOG)" >&2; wait "$PKG_PID" || true; }' EXIT
phase "configure ($BUILD_DIR) and build safe-launch"
bash scripts/build.sh --demo safe-launch
phase "packages 2/2: waiting for libtorch and torch"
wait_packages
phase "configure again (libtorch found) and build safe-launch-warmup"
rc=0
bash scripts/build.sh --demo safe-launch-warmup || rc=$?
# 3: CMake did not find libtorch (build.sh said where to look); the warm-up steps say so too.
((rc == 0 || rc == 3)) || exit "$rc"
SL=${SAFE_LAUNCH:-$BUILD_DIR/bin/safe-launch}  # packaging/try-deb.sh: the installed /usr/bin/safe-launch

step "preflight of this machine"
$SL preflight || true

step "fabric preflight of fixture nodes: one IB rail down with error counters; RoCE at MTU 1500 with a wrong NCCL_IB_GID_INDEX"
$SL preflight --sysroot tests/fixtures/ib-port-down --only ib.port. || true
NCCL_IB_GID_INDEX=1 $SL preflight --sysroot tests/fixtures/roce-mtu1500 --only ib.mtu,ib.gid || true

step "environment: the tuned, explained NCCL/torch plan for this machine (versions detected)"
$SL env --explain --run-dir /tmp/safe-launch-demo-env
step "environment on a RoCE node in a container (fixture), NCCL 2.18: GID index computed, with a user value that contradicts the node"
NCCL_IB_HCA=mlx5_9 $SL env --explain --sysroot tests/fixtures/roce-container-gid4 \
  --nccl-version 2.18.3 --torch-version 2.5.1 --run-dir /tmp/safe-launch-demo-env || true
step "environment as shell exports for an sbatch script: eval \"\$(safe-launch env)\""
$SL env --sysroot tests/fixtures/ib-healthy --run-dir /tmp/safe-launch-demo-env

step "hang detection: replay of a real torch 2.11 watchdog timeout -> bundle, job stopped (exit 124)"
DEMO_RUN=$(mktemp -d)/run
# The job prints the real log a line every 0.1 s, then hangs, as the real job did.
$SL --no-preflight --no-warmup --run-dir "$DEMO_RUN" -- bash -c \
  'while IFS= read -r l; do printf "%s\n" "$l"; sleep 0.1; done <"$0"; exec sleep 600' \
  tests/fixtures/logs/watchdog_timeout.torchrun.txt || echo "safe-launch exited $?"
ls -l "$DEMO_RUN"
sed -n 1,20p "$DEMO_RUN"/hang-*/summary.md

step "supervised job: a real 2-rank torchrun Gloo all_reduce under safe-launch"
# Debian's torchrun (torch 1.13, Python 3.11) needs --nproc_per_node and -r/-t; on a cluster:
#   srun safe-launch -- torchrun --nproc-per-node=8 train.py   (see examples/sbatch/train.sbatch)
DEMO_JOB=$(mktemp -d)/run
$SL --on-preflight-fail=warn --run-dir "$DEMO_JOB" -- /usr/bin/torchrun --nproc_per_node=2 \
  -r 1 -t 1 --monitor_interval 0.5 examples/allreduce_gloo.py && echo "safe-launch exited 0"
ls "$DEMO_JOB"
sed -n '/"exit_status"/p;/"state"/p' "$DEMO_JOB/status.json"

step "warm-up: 2 nodes x 2 ranks on loopback (two safe-launch processes, RoCE fixtures, libtorch Gloo)"
if [ -x "$BUILD_DIR/bin/safe-launch-warmup" ]; then
  # Every node of a job shares one secret, so only the job's own nodes can answer in the store.
  export SAFE_LAUNCH_WARMUP_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  WU=$(mktemp -d)
  WPORT=$(( 30000 + RANDOM % 20000 ))
  warm_pair() {  # FIXTURE_NODE1
    for n in 0 1; do
      fx=tests/fixtures/roce-jumbo
      [ "$n" = 1 ] && fx=$1
      $SL --sysroot "$fx" --on-preflight-fail=warn --node-name "roce-$n" --nnodes 2 \
        --node-rank $n --nproc-per-node 2 --rendezvous 127.0.0.1:$WPORT --warmup-timeout 60 \
        --run-dir "$WU/n$n-$(basename "$1")" -- true 2>&1 | grep -E "warm-up|busbw|sweep|fail|  [0-9]" &
    done
    wait
  }
  warm_pair tests/fixtures/roce-jumbo
  step "warm-up: same pair, node 1's RoCE netdevs at MTU 1500 -> named, job not started (exit 69)"
  WPORT=$((WPORT + 2))
  warm_pair tests/fixtures/roce-mtu1500
else
  echo "(safe-launch-warmup not built: libtorch not found)"
fi

printf '\n[demo] done in %ds\n' "$(($(date +%s) - T0))"
