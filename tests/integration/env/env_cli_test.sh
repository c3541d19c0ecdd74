#!/usr/bin/env bash
# Integration tests of `safe-launch env`: usage: env_cli_test.sh CASE SAFE_LAUNCH FIXTURES
set -u
CASE=$1
SL=$2
FIX=$3
T=$(mktemp -d /tmp/sl-env-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
unset SLURM_JOB_ID SLURM_STEP_ID SAFE_LAUNCH_RECIPE_PATH
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\|TORCH_NCCL_[A-Za-z0-9_]*\|TORCH_FR_[A-Za-z0-9_]*\)=.*/\1/p'); do
  unset "$v"
done
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
check() {  # name condition-command...
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
V=(--nccl-version 2.28.9 --torch-version 2.11.0 --run-dir "$T/run")
# Runs safe-launch env with the arguments, then evals its output in a clean bash and prints the
# named variables as NAME=<value> lines (one line per variable).
eval_env() {  # vars... -- args...
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  "$SL" env "$@" >"$T/out.sh" 2>"$T/err" || { echo "rc=$? $(cat "$T/err")"; return 1; }
  bash -c 'set -e; eval "$(cat "$1")"; shift; for v in "$@"; do printf "%s=%s\n" "$v" "${!v-<unset>}"; done' \
    _ "$T/out.sh" "${vars[@]}"
}
need_fixture() {
  if [ ! -d "$FIX/$1" ]; then
    echo "skip: fixture $1 not present"
    exit 0
  fi
}

case "$CASE" in
ib)
  need_fixture ib-healthy
  out=$(eval_env NCCL_IB_HCA NCCL_SOCKET_IFNAME NCCL_DEBUG NCCL_DEBUG_FILE TORCH_FR_BUFFER_SIZE \
    TORCH_FR_DUMP_TEMP_FILE TORCH_NCCL_DEBUG_INFO_PIPE_FILE TORCH_NCCL_ASYNC_ERROR_HANDLING \
    NCCL_IB_GID_INDEX -- --sysroot "$FIX/ib-healthy" "${V[@]}")
  echo "$out"
  ports=$(ls "$FIX/ib-healthy/sys/class/infiniband" | sed 's/$/:1/' | sort -V | paste -sd, -)
  check "NCCL_IB_HCA lists the 8 active ports exactly" grep -qx "NCCL_IB_HCA==$ports" <<<"$out"
  check "bootstrap interface pinned with =" grep -q '^NCCL_SOCKET_IFNAME==' <<<"$out"
  check "NCCL_DEBUG=WARN" grep -qx 'NCCL_DEBUG=WARN' <<<"$out"
  check "debug file per host and pid in the run dir" grep -qx "NCCL_DEBUG_FILE=$T/run/nccl.%h.%p.log" <<<"$out"
  check "Flight Recorder on (new names for torch 2.11)" grep -qx 'TORCH_FR_BUFFER_SIZE=2000' <<<"$out"
  check "FR dump prefix in run dir" grep -qx "TORCH_FR_DUMP_TEMP_FILE=$T/run/fr_rank_" <<<"$out"
  check "FR pipe prefix in run dir" grep -qx "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=$T/run/frpipe_" <<<"$out"
  check "async error handling 3" grep -qx 'TORCH_NCCL_ASYNC_ERROR_HANDLING=3' <<<"$out"
  check "no GID index on InfiniBand" grep -qx 'NCCL_IB_GID_INDEX=<unset>' <<<"$out"
  check "run dir created for the exported paths" test -d "$T/run"
  "$SL" env --sysroot "$FIX/ib-healthy" "${V[@]}" --explain >"$T/explain" 2>&1
  check "--explain names the recipe" grep -q '^recipe   infiniband' "$T/explain"
  check "--explain gives a reason per value" grep -q 'why       the ACTIVE ports' "$T/explain"
  check "--explain shows file:line origins" grep -qE '^    recipe    recipes/default.toml:[0-9]+$' "$T/explain"
  out=$(eval_env TORCH_NCCL_TRACE_BUFFER_SIZE TORCH_FR_BUFFER_SIZE TORCH_NCCL_DEBUG_INFO_TEMP_FILE \
    -- --sysroot "$FIX/ib-healthy" --nccl-version 2.28.9 --torch-version 2.5.1 --run-dir "$T/run")
  check "torch 2.5 gets the old Flight Recorder names" grep -qx 'TORCH_NCCL_TRACE_BUFFER_SIZE=2000' <<<"$out"
  check "torch 2.5 does not get the new names" grep -qx 'TORCH_FR_BUFFER_SIZE=<unset>' <<<"$out"
  ;;
roce)
  need_fixture roce-container-gid4
  out=$(eval_env NCCL_IB_HCA NCCL_IB_GID_INDEX -- --sysroot "$FIX/roce-container-gid4" "${V[@]}")
  echo "$out"
  check "RoCE: NCCL_IB_HCA exact list" grep -qE '^NCCL_IB_HCA==mlx5_0:1' <<<"$out"
  check "RoCE + NCCL 2.28: no GID index (NCCL picks it)" grep -qx 'NCCL_IB_GID_INDEX=<unset>' <<<"$out"
  out=$(eval_env NCCL_IB_GID_INDEX -- --sysroot "$FIX/roce-container-gid4" --nccl-version 2.18.3 \
    --torch-version 2.11.0 --run-dir "$T/run")
  echo "$out"
  idx=$(sed -n 's/^NCCL_IB_GID_INDEX=//p' <<<"$out")
  check "RoCE + NCCL 2.18: GID index set" test "$idx" != "<unset>"
  check "container table: index is 4 or higher" test "${idx:-0}" -ge 4 2>/dev/null
  type=$(cat "$FIX/roce-container-gid4/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/$idx" 2>/dev/null)
  check "the chosen index is a RoCE v2 entry ($type)" test "$type" = "RoCE v2"
  "$SL" env --sysroot "$FIX/roce-container-gid4" "${V[@]}" --format json >"$T/j"
  check "recipe roce chosen from facts" /usr/bin/python3 -c \
    'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(j["recipe"]!="roce")' "$T/j"
  ;;
socket)
  need_fixture socket-only
  out=$(eval_env NCCL_IB_HCA NCCL_IB_DISABLE NCCL_SOCKET_IFNAME -- --sysroot "$FIX/socket-only" "${V[@]}")
  echo "$out"
  check "socket-only: IB disabled" grep -qx 'NCCL_IB_DISABLE=1' <<<"$out"
  check "socket-only: no NCCL_IB_HCA" grep -qx 'NCCL_IB_HCA=<unset>' <<<"$out"
  check "socket-only: bootstrap interface is not lo/docker" grep -qvE '=(lo|docker)' <<<"$(grep NCCL_SOCKET_IFNAME <<<"$out")"
  ;;
hostile)
  need_fixture ib-healthy
  hostile=$'it\'s $(touch '"$T"'/pwned1) `touch '"$T"'/pwned2` ; touch '"$T"'/pwned3 \\\nsecond line "dq" $HOME'
  export NCCL_DEBUG_FILE="$hostile"
  export NCCL_TOPO_FILE=$'\'; touch '"$T"$'/pwned4; echo \''
  "$SL" env --sysroot "$FIX/ib-healthy" "${V[@]}" >"$T/out.sh" 2>"$T/err"
  got=$(bash -c 'eval "$(cat "$1")"; printf "%s" "$NCCL_DEBUG_FILE"' _ "$T/out.sh")
  check "hostile value survives eval byte for byte" test "$got" = "$hostile"
  got4=$(bash -c 'eval "$(cat "$1")"; printf "%s" "$NCCL_TOPO_FILE"' _ "$T/out.sh")
  check "quote-breaking value survives eval" test "$got4" = "$NCCL_TOPO_FILE"
  check "no command in a value was executed" test ! -e "$T/pwned1" -a ! -e "$T/pwned2" -a ! -e "$T/pwned3" -a ! -e "$T/pwned4"
  check "sh output passes bash -n" bash -n "$T/out.sh"
  check "sh output is POSIX sh too (dash)" sh -n "$T/out.sh"
  ;;
user)
  need_fixture ib-healthy
  export NCCL_DEBUG=INFO NCCL_IB_DISABLE=1
  out=$(eval_env NCCL_DEBUG NCCL_IB_DISABLE -- --sysroot "$FIX/ib-healthy" "${V[@]}")
  echo "$out"
  check "user NCCL_DEBUG kept" grep -qx 'NCCL_DEBUG=INFO' <<<"$out"
  check "user NCCL_IB_DISABLE kept" grep -qx 'NCCL_IB_DISABLE=1' <<<"$out"
  check "conflict with active IB ports reported on stderr" grep -q 'conflict: NCCL_IB_DISABLE=1: .*sockets' "$T/err"
  check "conflict also a comment in the sh output" grep -q '^# conflict: NCCL_IB_DISABLE' "$T/out.sh"
  ;;
errors)
  "$SL" env --recipe infiniban "${V[@]}" >/dev/null 2>"$T/err"
  check "unknown recipe: exit 2" test $? -eq 2
  check "unknown recipe: did you mean" grep -q "did you mean 'infiniband'" "$T/err"
  printf '[env]\nNCCL_DEBUG = "WARN"\nNCCL_IB_TIMEOUT = = 3\n' >"$T/bad.toml"
  "$SL" env --recipe "$T/bad.toml" "${V[@]}" >/dev/null 2>"$T/err"
  check "malformed recipe: exit 2" test $? -eq 2
  check "malformed recipe: file:line:column" grep -q "$T/bad.toml:3:[0-9]" "$T/err"
  printf 'extends = "default"\n[env]\nNCCL_IB_TIMEOUT = 77\n' >"$T/range.toml"
  "$SL" env --recipe "$T/range.toml" "${V[@]}" >/dev/null 2>"$T/err"
  check "out-of-range value: exit 2 naming variable and range" grep -q "range.toml:3.*NCCL_IB_TIMEOUT.*1\.\.31" "$T/err"
  printf 'extends = "default"\n[env]\nMY_APP = "x"\nNCCL_ALGO = "Ring"\n' >"$T/good.toml"
  out=$(eval_env MY_APP NCCL_ALGO NCCL_DEBUG -- --recipe "$T/good.toml" "${V[@]}")
  check "user recipe file by path extends default" grep -qx 'NCCL_DEBUG=WARN' <<<"$out"
  check "user recipe sets its own variables" grep -qx 'NCCL_ALGO=Ring' <<<"$out"
  "$SL" env --nccl-version banana --run-dir "$T/run" >/dev/null 2>"$T/err"
  check "bad --nccl-version: exit 2" test $? -eq 2
  "$SL" env --sysroot /nonexistent/root "${V[@]}" >/dev/null 2>"$T/err"
  check "missing sysroot: exit 2 naming it" grep -q /nonexistent/root "$T/err"
  "$SL" env --format yaml >/dev/null 2>&1
  check "bad --format: exit 2" test $? -eq 2
  ;;
json)
  need_fixture ib-healthy
  "$SL" env --sysroot "$FIX/ib-healthy" "${V[@]}" --format json >"$T/j" 2>"$T/err"
  check "json parses and has the plan" /usr/bin/python3 - "$T/j" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
names = {e["name"]: e for e in j["entries"]}
assert j["recipe"] == "infiniband", j["recipe"]
assert j["versions"]["nccl"] == "2.28.9"
assert names["NCCL_IB_HCA"]["source"] == "computed"
assert names["NCCL_DEBUG"]["source"] == "recipe"
assert names["NCCL_DEBUG"]["origin"].startswith("recipes/default.toml:")
assert j["thresholds"]["min_ib_mtu"] == 4096
for e in j["entries"]:
    assert e["reason"], e
PY
  ;;
versions)
  # No flags: detect from /usr/bin/python3 and the system NCCL, then again from the cache.
  "$SL" env --format json --run-dir "$T/run" >"$T/j" 2>"$T/err"
  check "detection runs without flags" test $? -eq 0
  /usr/bin/python3 - "$T/j" <<'PY' && ok "versions detected as on this machine" || bad "versions detected as on this machine"
import json, sys, os, glob
j = json.load(open(sys.argv[1]))["versions"]
print(j)
tv = None
for d in ["/usr/lib/python3/dist-packages", "/usr/local/lib/python3.11/dist-packages"]:
    p = os.path.join(d, "torch/version.py")
    if os.path.exists(p):
        tv = [l for l in open(p) if l.startswith("__version__")][0].split("'")[1]
        break
if tv is not None:
    assert j["torch"] == ".".join(tv.split("+")[0].split("a")[0].split(".")[:3]), (j, tv)
if os.path.exists("/usr/local/cuda/lib64/libnccl.so.2"):
    assert j["nccl"] is not None and j["nccl"].startswith("2."), j
PY
  check "cache written" test -s "$XDG_CACHE_HOME/safe-launch/versions.json"
  start=$(date +%s%N)
  "$SL" env --format json --run-dir "$T/run" >"$T/j2" 2>/dev/null
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "cached env run: ${ms} ms"
  check "cached result is the same" cmp -s <(/usr/bin/python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["versions"])' "$T/j") \
    <(/usr/bin/python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["versions"])' "$T/j2")
  ;;
ras)
  need_fixture socket-only
  a=$(SLURM_JOB_ID=4242 SLURM_STEP_ID=0 eval_env NCCL_RAS_ADDR -- --sysroot "$FIX/socket-only" "${V[@]}")
  b=$(SLURM_JOB_ID=4243 SLURM_STEP_ID=0 eval_env NCCL_RAS_ADDR -- --sysroot "$FIX/socket-only" "${V[@]}")
  echo "$a / $b"
  check "RAS address set in a Slurm job" grep -qE '^NCCL_RAS_ADDR=127\.0\.0\.1:2[89][0-9]{3}$' <<<"$a"
  check "two jobs get different RAS ports" test "$a" != "$b"
  c=$(SLURM_JOB_ID=4242 eval_env NCCL_RAS_ADDR -- --sysroot "$FIX/socket-only" --nccl-version 2.21.5 --torch-version 2.11.0 --run-dir "$T/run")
  check "no RAS address for NCCL 2.21" grep -qx 'NCCL_RAS_ADDR=<unset>' <<<"$c"
  ;;
lint)
  # The preflight env.nccl check lints the same registry against the same facts.
  need_fixture ib-healthy
  NCCL_IB_DISABLE=1 "$SL" preflight --only env.nccl --sysroot "$FIX/ib-healthy" >"$T/out" 2>&1
  check "NCCL_IB_DISABLE=1 on an IB node fails env.nccl (exit 1)" test $? -eq 1
  check "the failure says training would use sockets" grep -q "sockets" "$T/out"
  NCCL_IB_HAC=mlx5_0 TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "$SL" preflight --only env.nccl \
    --sysroot "$FIX/ib-healthy" -v >"$T/out" 2>&1
  check "unknown and deprecated names only warn (exit 0)" test $? -eq 0
  check "did you mean NCCL_IB_HCA" grep -q "did you mean NCCL_IB_HCA" "$T/out"
  check "deprecated name points at TORCH_FR_BUFFER_SIZE" grep -q "TORCH_FR_BUFFER_SIZE" "$T/out"
  NCCL_IB_TIMEOUT=99 "$SL" preflight --only env.nccl --sysroot "$FIX/ib-healthy" >"$T/out" 2>&1
  check "out-of-range value fails env.nccl" test $? -eq 1
  eval "$("$SL" env --sysroot "$FIX/ib-healthy" "${V[@]}" 2>/dev/null)"
  "$SL" preflight --only env.nccl --sysroot "$FIX/ib-healthy" >"$T/out" 2>&1
  check "the environment env exports passes env.nccl" test $? -eq 0
  ;;
conf)
  # An admin's /etc/nccl.conf (here in a copy of a fixture tree) is a source of the plan: its
  # values are kept, shown with file:line, and not exported over (NCCL reads the file itself,
  # under the environment, so an export would silently override it).
  need_fixture ib-healthy
  cp -a "$FIX/ib-healthy" "$T/node"
  mkdir -p "$T/node/etc"
  printf '# site settings\nNCCL_IB_HCA=mlx5_0:1\nNCCL_IB_TIMEOUT=22\n' >"$T/node/etc/nccl.conf"
  out=$(eval_env NCCL_IB_HCA NCCL_IB_TIMEOUT -- --sysroot "$T/node" "${V[@]}")
  echo "$out"
  check "the recipe does not export NCCL_IB_HCA over /etc/nccl.conf" grep -qx 'NCCL_IB_HCA=<unset>' <<<"$out"
  check "a conf-only variable is not exported either" grep -qx 'NCCL_IB_TIMEOUT=<unset>' <<<"$out"
  "$SL" env --sysroot "$T/node" "${V[@]}" >"$T/sh" 2>&1
  check "the sh output says where NCCL_IB_HCA comes from" grep -q '^# NCCL_IB_HCA from /etc/nccl.conf:2' "$T/sh"
  "$SL" env --sysroot "$T/node" "${V[@]}" --explain >"$T/explain" 2>&1
  check "--explain shows the conf source" grep -q 'nccl.conf *\/etc\/nccl.conf:2' "$T/explain"
  "$SL" env --sysroot "$T/node" "${V[@]}" --format json >"$T/json" 2>&1
  check "JSON source nccl.conf with the recipe's value beside it" python3 -c '
import json, sys
e = {x["name"]: x for x in json.load(open(sys.argv[1]))["entries"]}
h = e["NCCL_IB_HCA"]
assert h["source"] == "nccl.conf" and h["origin"] == "/etc/nccl.conf:2", h
assert h["value"] == "mlx5_0:1" and h["recipe_value"].startswith("="), h
assert e["NCCL_IB_TIMEOUT"]["source"] == "nccl.conf"' "$T/json"
  out=$(NCCL_IB_HCA='=mlx5_1:1' eval_env NCCL_IB_HCA -- --sysroot "$T/node" "${V[@]}")
  check "the environment still wins over the file" grep -qx 'NCCL_IB_HCA==mlx5_1:1' <<<"$out"
  ;;
typo)
  # A misspelt subcommand is refused, not started as a job named after the typo.
  for w in prefligth envv verison; do
    "$SL" "$w" >"$T/out" 2>"$T/err"
    check "$w: exit 2" test $? -eq 2
    check "$w: did you mean" grep -q "is not a subcommand; did you mean '" "$T/err"
    check "$w: nothing checked or run" test ! -s "$T/out"
  done
  grep -q "did you mean 'preflight'" < <("$SL" prefligth 2>&1)
  check "prefligth -> preflight" test $? -eq 0
  # safe-launch's own --version is not taken for a job's flag (it was: "run --version").
  v=$("$SL" --version 2>&1)
  check "--version exits 0" test $? -eq 0
  check "--version prints the version" grep -qx 'safe-launch [0-9][0-9.]*' <<<"$v"
  # A program of that name on the PATH is the job (it runs after preflight, whatever its verdict).
  mkdir -p "$T/bin"
  printf '#!/bin/sh\nexit 0\n' >"$T/bin/envx"
  chmod +x "$T/bin/envx"
  PATH="$T/bin:$PATH" "$SL" envx >/dev/null 2>"$T/err"
  check "a program on PATH is not taken for a typo" bash -c '! grep -q "not a subcommand" "$1"' _ "$T/err"
  "$SL" -- prefligth >/dev/null 2>"$T/err"
  check "after -- the word is the job" bash -c '! grep -q "not a subcommand" "$1"' _ "$T/err"
  ;;
rundir)
  # The exports point at the run directory: when it cannot be created, env fails and prints none.
  touch "$T/file"
  "$SL" env --nccl-version 2.28.9 --torch-version 2.11.0 --run-dir "$T/file/run" >"$T/out" 2>"$T/err"
  check "uncreatable run dir: exit 2" test $? -eq 2
  check "uncreatable run dir: no exports" test ! -s "$T/out"
  check "uncreatable run dir: named" grep -q "$T/file/run.*cannot create the run directory" "$T/err"
  # --format json and --explain create nothing and still work.
  "$SL" env --nccl-version 2.28.9 --torch-version 2.11.0 --run-dir "$T/file/run" --format json >"$T/out" 2>"$T/err"
  check "json does not need the run dir" test $? -eq 0
  # Without --run-dir, looking at the exports creates nothing (the default directory is new on
  # every call); the printed code makes it when it is eval'd, and the exports point into it.
  mkdir "$T/cwd"
  for i in 1 2; do
    (cd "$T/cwd" && "$SL" env --nccl-version 2.28.9 --torch-version 2.11.0 >"$T/out$i" 2>"$T/err")
    check "env without --run-dir, call $i: exit 0" test $? -eq 0
  done
  check "two env calls left nothing in the cwd" test -z "$(ls -A "$T/cwd")"
  (cd "$T/cwd" && bash -c 'set -e; eval "$(cat "$1")"; test -d "${TORCH_FR_DUMP_TEMP_FILE%/fr_rank_}"' _ "$T/out1")
  check "eval of the exports makes the run directory they point at" test $? -eq 0
  check "one run directory after the eval" test "$(find "$T/cwd" -mindepth 3 -maxdepth 3 -type d | wc -l)" -eq 1
  ;;
*)
  echo "unknown case $CASE"
  exit 2
  ;;
esac
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
