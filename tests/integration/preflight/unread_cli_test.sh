#!/usr/bin/env bash
# What could not be read is an error, never "empty = healthy", through the real binary: trees
# built from tests/fixtures/ib-healthy with paths made unreadable in ways that hold for root too
# (chmod 000 does not stop root): a dangling symlink, a directory where a file should be, a file
# where a directory should be, a FIFO. Usage: unread_cli_test.sh SAFE_LAUNCH FIXTURES
set -u
SL=$1
FIX=$2
T=$(mktemp -d /tmp/sl-unread-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
unset SLURM_JOB_ID SLURM_STEP_ID SAFE_LAUNCH_RECIPE_PATH NCCL_IB_DISABLE
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
check() {  # name condition-command...
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
if [ ! -d "$FIX/ib-healthy" ]; then
  echo "skip: fixture ib-healthy not present"
  exit 0
fi
V=(--nccl-version 2.28.9 --torch-version 2.11.0)

# 1. /sys/class/infiniband is a dangling symlink: the fabric is unread, not "no RDMA device".
F=$T/fabric
cp -a "$FIX/ib-healthy" "$F"
rm -rf "$F/sys/class/infiniband"
ln -s /nonexistent-safe-launch-fabric "$F/sys/class/infiniband"
"$SL" env --sysroot "$F" "${V[@]}" --run-dir "$T/run-env" >"$T/env.out" 2>"$T/env.err"
rc=$?
check "env refuses to choose a recipe from an unread fabric (exit 2)" [ "$rc" = 2 ]
check "env exports nothing, NCCL_IB_DISABLE least of all" [ ! -s "$T/env.out" ]
check "env names the path" grep -q "$F/sys/class/infiniband" "$T/env.err"
check "env names the recipe flag" grep -q -- "--recipe NAME" "$T/env.err"
cat "$T/env.err"
"$SL" env --sysroot "$F" "${V[@]}" --run-dir "$T/run-env2" --recipe infiniband >"$T/env2.out" 2>&1
check "env with --recipe infiniband resolves" [ $? = 0 ]
check "... and does not disable IB" bash -c '! grep -q NCCL_IB_DISABLE "$1"' _ "$T/env2.out"
"$SL" run --sysroot "$F" --on-preflight-fail=warn --run-dir "$T/run-run" -- true \
  >"$T/run.out" 2>"$T/run.err"
rc=$?
check "run refuses the plan (exit 2)" [ "$rc" = 2 ]
check "run names the path and the flag" \
  grep -q "$F/sys/class/infiniband.*--recipe NAME" "$T/run.err"
"$SL" preflight --json --sysroot "$F" >"$T/fabric.json" 2>/dev/null
check "preflight reports the unread fabric as an error of ib.port.state" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert any(f["check"] == "ib.port.state" and f["outcome"] == "error" and
           f["code"] == "ib.port.state/device_unreadable" for f in d["findings"]), d["findings"]
assert d["verdict"] == "error", d["verdict"]' "$T/fabric.json"

# 2. Wrong types behind the host and counter facts.
H=$T/host
cp -a "$FIX/ib-healthy" "$H"
N=$H/proc/driver/nvidia
rm -rf "$N/version" "$N/gpus"
mkdir "$N/version"  # a directory where a file should be
touch "$N/gpus"     # a file where a directory should be
C=$H/sys/class/infiniband/mlx5_0/ports/1/counters
rm -rf "$C"
mkfifo "$C"  # a FIFO where a directory should be
rm -f "$H/proc/modules"
ln -s /nonexistent-safe-launch-modules "$H/proc/modules"  # a dangling symlink
ln -s ../../devices/virtual/net/nowhere0 "$H/sys/class/net/nowhere0"  # leads nowhere
timeout 60 "$SL" preflight --json --sysroot "$H" >"$T/host.json" 2>/dev/null
check "preflight on wrong-type paths: errors, no false fail, no pass" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
fs = d["findings"]
def of(check, entity=None):
    return [f for f in fs if f["check"] == check and (entity is None or f["entity"] == entity)]
gpu = of("gpu.inventory")
assert any(f["code"] == "gpu.inventory/file_unreadable" and "nvidia/version" in f["message"]
           for f in gpu), gpu
assert any(f["code"] == "gpu.inventory/file_unreadable" and "nvidia/gpus" in f["message"]
           for f in gpu), gpu
assert not any(f["outcome"] in ("pass", "fail") for f in gpu), gpu
ctr = of("ib.port.errors", "mlx5_0:1")
assert [f["code"] for f in ctr] == ["ib.port.errors/counter_unreadable"], ctr
assert ctr[0]["outcome"] == "error", ctr
gdr = of("gpu.gdr")
assert [(f["code"], f["outcome"]) for f in gdr] == [("gpu.gdr/modules_unreadable", "error")], gdr
net = of("net.ifname")
assert any(f["code"] == "net.ifname/file_unreadable" and "nowhere0" in f["message"]
           for f in net), net
assert d["verdict"] == "error", d["verdict"]' "$T/host.json"

echo "passed: $pass, failed: $fail"
[ "$fail" = 0 ]
