#!/usr/bin/env bash
# Integration tests of `safe-launch preflight`: exit codes, --only/--waive/--list, JSON, sysroots.
set -u
SL=$1
FIX=$2
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
expect_rc() {  # name expected_rc cmd...
  local name=$1 want=$2
  shift 2
  "$@" >/tmp/sl-pf-out.$$ 2>/tmp/sl-pf-err.$$
  local rc=$?
  if [ "$rc" = "$want" ]; then ok "$name"; else
    bad "$name (rc=$rc, want $want)"
    sed 's/^/    /' /tmp/sl-pf-out.$$ /tmp/sl-pf-err.$$ | head -20
  fi
}
expect_grep() {  # name pattern file
  if grep -qE -- "$2" "$3"; then ok "$1"; else
    bad "$1 (no /$2/ in output)"
    sed 's/^/    /' "$3" | head -20
  fi
}

expect_rc "--list exits 0" 0 "$SL" preflight --list
expect_grep "--list names every check" "^ib\.gid " /tmp/sl-pf-out.$$
n=$(wc -l </tmp/sl-pf-out.$$)
[ "$n" -ge 14 ] && ok "--list has 14+ checks" || bad "--list has $n checks"
expect_grep "--list names the warm-up comparisons after the checks" "^warmup\.consistency\.mtu " /tmp/sl-pf-out.$$
nw=$(grep -c '^warmup\.' /tmp/sl-pf-out.$$)
[ "$nw" = 14 ] && ok "--list has the 14 warm-up comparisons" || bad "--list has $nw warm-up comparisons"
[ "$(grep -n '^warmup\.' /tmp/sl-pf-out.$$ | head -1 | cut -d: -f1)" -gt "$(grep -n '^net\.ifname ' /tmp/sl-pf-out.$$ | cut -d: -f1)" ] &&
  ok "--list shows the comparisons after the checks" || bad "--list order"
expect_rc "run --list exits 0 without a job" 0 "$SL" run --list
expect_grep "run --list names checks and comparisons" "^warmup\.consistency\.gid " /tmp/sl-pf-out.$$
expect_rc "run --waive with an unknown id is a usage error" 2 "$SL" run --no-preflight --waive warmup.consistency.mut -- true
expect_grep "the unknown --waive id is named with the nearest one" "unknown check id 'warmup.consistency.mut'.*did you mean 'warmup.consistency.mtu'" /tmp/sl-pf-err.$$
expect_rc "preflight --waive of a warm-up comparison is a usage error" 2 "$SL" preflight --waive warmup.consistency.mtu
expect_grep "it points at run --waive" "safe-launch run --waive" /tmp/sl-pf-err.$$

expect_rc "unknown --only id is a usage error" 2 "$SL" preflight --only ib.gidd
expect_grep "unknown id suggests the right one" "did you mean 'ib.gid'" /tmp/sl-pf-err.$$
expect_rc "missing sysroot is a usage error" 2 "$SL" preflight --sysroot /nonexistent/sysroot
expect_grep "missing sysroot is named" "/nonexistent/sysroot" /tmp/sl-pf-err.$$
expect_rc "bad --since is a usage error" 2 "$SL" preflight --since yesterday
expect_rc "unknown flag is a usage error" 2 "$SL" preflight --frobnicate

if [ -d "$FIX/ib-healthy" ]; then
  expect_rc "healthy IB fixture passes" 0 "$SL" preflight --sysroot "$FIX/ib-healthy"
  expect_grep "a healthy node with skipped checks has the verdict PASS" "^preflight .*: PASS — .* [1-9][0-9]* skip in" /tmp/sl-pf-out.$$
  expect_rc "healthy IB fixture JSON" 0 "$SL" preflight --json --sysroot "$FIX/ib-healthy"
  expect_grep "a healthy node's JSON verdict is pass" "\"verdict\": *\"pass\"" /tmp/sl-pf-out.$$
  if /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"]=="safe-launch.preflight/1"; assert d["verdict"] in ("pass","warn","skip"), d["verdict"]; assert any(f["check"]=="ib.port.state" for f in d["findings"])' /tmp/sl-pf-out.$$; then
    ok "JSON report parses with schema, verdict and findings"
  else bad "JSON report malformed"; fi
fi
if [ -d "$FIX/ib-port-down" ]; then
  expect_rc "port-down fixture fails with status 1" 1 "$SL" preflight --sysroot "$FIX/ib-port-down"
  expect_grep "port-down names the port" "mlx5_3:1" /tmp/sl-pf-out.$$
  expect_rc "waiving the failing checks gives 0" 0 "$SL" preflight --sysroot "$FIX/ib-port-down" \
    --waive ib.port.state,ib.mtu,ib.port.errors
  expect_rc "--only other group ignores the failure" 0 "$SL" preflight --sysroot "$FIX/ib-port-down" --only os.nofile
  expect_rc "excluding the down port via NCCL_IB_HCA passes ib.port.state" 0 \
    env NCCL_IB_HCA='^=mlx5_3' "$SL" preflight --sysroot "$FIX/ib-port-down" --only ib.port.state
fi
if [ -d "$FIX/roce-mtu1500" ]; then
  "$SL" preflight --sysroot "$FIX/roce-mtu1500" --only ib.mtu >/tmp/sl-pf-out.$$ 2>&1
  expect_grep "RoCE MTU 1500 is reported" "1500" /tmp/sl-pf-out.$$
fi
for broken in ib-broken host-broken; do
  if [ -d "$FIX/$broken" ]; then
    "$SL" preflight --sysroot "$FIX/$broken" -v >/tmp/sl-pf-out.$$ 2>&1
    rc=$?
    { [ $rc -eq 0 ] || [ $rc -eq 1 ]; } && ok "$broken tree does not crash (rc=$rc)" || bad "$broken tree rc=$rc"
    expect_grep "$broken tree yields error outcomes naming paths" "ERROR .*$broken|$FIX/$broken" /tmp/sl-pf-out.$$
  fi
done

rm -f /tmp/sl-pf-out.$$ /tmp/sl-pf-err.$$
# A sysroot's symlinks resolve inside it (as openat2 RESOLVE_IN_ROOT): an absolute target or one
# with more ../ than the tree is deep must not read the host's files.
if [ -d "$FIX/socket-only" ]; then
  E=$(mktemp -d /tmp/sl-pf-escape.XXXXXX)
  cp -a "$FIX/socket-only" "$E/root"
  host_name=$(cat /proc/sys/kernel/hostname)
  for target in /proc/sys/kernel/hostname ../../../../../../../../../../../proc/sys/kernel/hostname; do
    ln -sfn "$target" "$E/root/proc/sys/kernel/hostname"
    "$SL" preflight --sysroot "$E/root" >"$E/out" 2>&1
    expect_grep "sysroot link to $target stays in the tree" "^preflight sysroot \\(sysroot " "$E/out"
    if grep -q "^preflight $host_name " "$E/out"; then bad "the host's hostname was read through $target"; fi
  done
  rm -rf "$E"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
