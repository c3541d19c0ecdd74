#!/usr/bin/env bash
# The device checks of issues 5 and 6, as ONE prepared script for the GPU machine (one H200,
# torch 2.11 + CUDA 13 + NCCL 2.28.9 in /opt/torch/.venv, none of our Debian packages, no network).
#
# Here, first:   cmake --build build && bash scripts/device-kit.sh        (makes .device-kit/)
# Then, device:  run(command="bash scripts/device-check.sh", carry=[".device-kit"], timeout_s=540)
#
# 1. builds safe-launch-warmup there against that torch (CMAKE_PREFIX_PATH from
#    torch.utils.cmake_prefix_path; the wheel's targets bring the C++11 ABI flag and
#    USE_C10D_NCCL), with the kit's header-only fmt/spdlog/nlohmann/toml++;
# 2. issue 6: a one-node, one-rank NCCL warm-up through safe-launch, 3 times: end-to-end wall and
#    the phases from warmup.json (target <= 2 s per node);
# 3. issue 5: a real NCCL watchdog timeout (examples/device/nccl_timeout_job.py: all_reduce behind
#    a 25 s GPU kernel, 5 s PG timeout) under `safe-launch -- torchrun --standalone
#    --nproc-per-node=1`: the bundle must hold the Flight Recorder dump taken through the pipe
#    before torch's ~60 s abort, the RAS status, and a summary naming ALLREDUCE SeqNum.
# Everything it prints is in $OUT/device-check.log; the bundle and reports come back in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/device-check-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/device-check.log") 2>&1
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
# Overridable only for a dry run of this script's plumbing on a CPU machine (see the manual).
PY=${PY:-python3}
WARMUP_BACKEND=${WARMUP_BACKEND:-nccl}
HANG_CMD=${HANG_CMD:-torchrun --standalone --nproc-per-node=1 examples/device/nccl_timeout_job.py}
HANG_ARGS=${HANG_ARGS:-}
KIT=$PWD/.device-kit
SL=$KIT/bin/safe-launch
WORK=/tmp/device-check
rm -rf "$WORK" && mkdir -p "$WORK"
step() { printf '\n==== %s (%s)\n' "$*" "$(date -u +%T)"; }
now() { date +%s.%N; }
[[ -x $SL ]] || { echo "no $SL: run bash scripts/device-kit.sh here and carry .device-kit"; exit 2; }

step "machine"
nvidia-smi -L || true
"$PY" -c 'import torch, sys
try:
    nccl = torch.cuda.nccl.version()
except Exception as e:  # a CPU torch (dry run)
    nccl = "none (%s)" % type(e).__name__
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "nccl", nccl, "gpus", torch.cuda.device_count(), "cxx11abi", torch.compiled_with_cxx11_abi())'
cmake --version | head -1; c++ --version | head -1; ldd --version | head -1; nproc
"$SL" version

step "1. build safe-launch-warmup against this torch"
TP=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
t0=$(now)
cmake -S . -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSAFE_LAUNCH_WARMUP_ONLY=ON \
  -DSAFE_LAUNCH_KIT_INCLUDE="$KIT/include" -DCMAKE_PREFIX_PATH="$TP" 2>&1 | tail -25
cmake --build "$WORK/build" -j "$(nproc)" 2>&1 | tail -15
t1=$(now)
if [[ ! -x $WORK/build/bin/safe-launch-warmup ]]; then
  # Fallback, so that one device call is enough even if find_package(Torch) fails there: the
  # same sources with the flags torch's own targets would give (C++11 ABI, USE_C10D_*).
  echo "CMake build failed; trying the plain-compiler fallback"
  TD=$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  defs="-DUSE_DISTRIBUTED -DUSE_C10D_NCCL -D_GLIBCXX_USE_CXX11_ABI=1"
  [[ -d $TD/include/gloo ]] && defs+=" -DUSE_C10D_GLOO"
  flags="-std=c++20 -O2 -fPIC -I. -isystem $KIT/include -isystem $TD/include
    -isystem $TD/include/torch/csrc/api/include -isystem /usr/local/cuda/include
    -DFMT_HEADER_ONLY=1 -DSPDLOG_FMT_EXTERNAL -DTOML_HEADER_ONLY=1 $defs
    -DSAFE_LAUNCH_VERSION=\"0.1.0\""
  mkdir -p "$WORK/obj" "$WORK/build/bin"
  export flags WORK
  ls common/*.cpp warmup/*.cpp warmup/torch/*.cpp |
    xargs -P "$(nproc)" -I{} sh -c 'c++ $flags -c "{}" -o "$WORK/obj/$(echo "{}" | tr / _).o"' &&
  c++ -o "$WORK/build/bin/safe-launch-warmup" "$WORK"/obj/*.o -L"$TD/lib" -Wl,-rpath,"$TD/lib" \
    -ltorch -ltorch_cpu -ltorch_cuda -lc10 -lc10_cuda -L/usr/local/cuda/lib64 -lcudart \
    -L"$KIT/lib" -l:libcrypto.so.3 -Wl,-rpath,"$KIT/lib" -ldl -lpthread
fi
if [[ ! -x $WORK/build/bin/safe-launch-warmup ]]; then
  echo "BUILD FAILED (see above)"; exit 1
fi
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "warm-up built in %.0f s\n", b - a }'
cp "$WORK/build/bin/safe-launch-warmup" "$KIT/bin/"   # safe-launch looks next to itself
ldd "$KIT/bin/safe-launch-warmup" | grep -E "torch|c10|nccl|cuda" | head

step "2. issue 6: one node, one rank, NCCL warm-up through safe-launch (3 runs)"
for i in 1 2 3; do
  t0=$(now)
  "$SL" --on-preflight-fail=warn --warmup --nproc-per-node 1 --warmup-backend "$WARMUP_BACKEND" \
    --run-dir "$WORK/warm$i" -- true
  rc=$?
  t1=$(now)
  awk -v a="$t0" -v b="$t1" -v r="$rc" -v i="$i" \
    'BEGIN { printf "run %d: exit %d, safe-launch end to end %.2f s\n", i, r, b - a }'
  "$PY" - "$WORK/warm$i/warmup.json" <<'PY'
import json, sys
try:
    w = json.load(open(sys.argv[1]))
except Exception as e:
    print("no warmup.json:", e); sys.exit(0)
print("verdict", w.get("verdict"), "backend", w.get("backend"), "phases (ms)",
      {k: round(v, 1) for k, v in w.get("timings_ms", {}).items()})
for s in w.get("sweep", []):
    print(f"  {s['bytes']:>9} B  {s['seconds'] * 1e6:9.1f} us  algbw {s['algbw_gbps']:8.2f} GB/s")
for f in w.get("findings", []):
    print("  finding:", json.dumps(f)[:400])
PY
done
cp "$WORK/warm3/warmup.json" "$OUT/warmup.json" 2>/dev/null || true

step "3. issue 5: real NCCL watchdog timeout under safe-launch"
t0=$(now)
# shellcheck disable=SC2086  # HANG_ARGS/HANG_CMD are word lists
"$SL" --on-preflight-fail=warn --run-dir "$WORK/hang" $HANG_ARGS -- $HANG_CMD
rc=$?
t1=$(now)
awk -v a="$t0" -v b="$t1" -v r="$rc" 'BEGIN { printf "safe-launch exit %d after %.1f s\n", r, b - a }'
# Bundles are <run-dir>/{hang,failure}-<host>-<utc>/ plus the same name .tar.gz.
bundle=$(ls -d "$WORK"/hang/hang-*/ "$WORK"/hang/failure-*/ 2>/dev/null | head -1)
echo "bundle: ${bundle:-none}"
if [[ -n $bundle ]]; then
  find "$bundle" -type f -printf '%8s %P\n' | sort -k2
  cp "$bundle/summary.md" "$OUT/summary.md" 2>/dev/null
  cp "$bundle/manifest.json" "$OUT/manifest.json" 2>/dev/null
  echo "---- summary.md"; cat "$bundle/summary.md"
  echo "---- collectors"
  "$PY" - "$bundle/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for c in m.get("collectors", []):
    print(f"{c.get('id'):18s} {c.get('status'):8s} {c.get('duration_s', 0):6.2f} s"
          f" {c.get('bytes', 0):8d} B  {c.get('error') or ''}")
PY
  tarball=${bundle%/}.tar.gz
  [[ -f $tarball ]] && cp "$tarball" "$OUT/bundle.tar.gz"
fi
cp "$WORK/hang/status.json" "$OUT/status-hang.json" 2>/dev/null
echo "---- flight recorder files in the run dir"; ls -la "$WORK"/hang/ | grep -i -E "fr|pipe" || true
echo "done"
