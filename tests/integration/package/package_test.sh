#!/usr/bin/env bash
# The installed safe-launch, run from where a package or an install puts it (issue 17).
# usage: package_test.sh CASE BUILD_DIR SOURCE_DIR
#   deb      cpack the .deb(s) from the built tree (nothing is rebuilt), dpkg-deb -x into a
#            throwaway root, run preflight --sysroot, env --explain (installed recipes, a site
#            override in ROOT/etc/safe-launch/recipes.d), a supervised job, the warm-up helper
#            from ROOT/usr/libexec, man, bash completion; lintian: no errors
#   install  cmake --install --prefix P: the same layout, recipes and site dir under P
#   tarball  the relocatable tarball: runs from anywhere on its own lib/, refuses an old glibc
set -u
CASE=$1
B=$(cd "$2" && pwd)
SRC=$(cd "$3" && pwd)
FIX=$SRC/tests/fixtures
T=$(mktemp -d /tmp/sl-package-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache SAFE_LAUNCH_WARMUP_SECRET=package-test
unset SAFE_LAUNCH_RECIPE_PATH SLURM_JOB_ID SLURM_STEP_ID
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\|TORCH_NCCL_[A-Za-z0-9_]*\|TORCH_FR_[A-Za-z0-9_]*\)=.*/\1/p'); do
  unset "$v"
done
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
check() {  # name command...
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
has() { grep -qF -- "$2" "$1"; }     # file text
V=(--nccl-version 2.28.9 --torch-version 2.11.0)

# The checks every installed copy must pass. SL: its safe-launch; SHARE: its data directory;
# SITE: its site recipe directory.
installed_checks() {
  local SL=$1 SHARE=$2 SITE=$3
  "$SL" version >"$T/version" 2>&1
  check "installed binary runs" has "$T/version" "safe-launch "
  "$SL" preflight --sysroot "$FIX/ib-healthy" >"$T/pre" 2>&1
  local rc=$?
  "$B/bin/safe-launch" preflight --sysroot "$FIX/ib-healthy" >/dev/null 2>&1
  check "preflight --sysroot: exit $rc, as from the build tree" test "$rc" = "$?"
  check "preflight --sysroot reports checks" grep -q "ib\." "$T/pre"
  "$SL" env --explain --sysroot "$FIX/ib-healthy" "${V[@]}" --run-dir "$T/r" >"$T/explain" 2>&1
  check "env --explain reads the installed recipe" \
    grep -qxF "file     $SHARE/recipes/infiniband.toml" "$T/explain"
  check "env --explain shows the search order" \
    has "$T/explain" "searched site $SITE (absent), then shipped $SHARE/recipes, then built-in"
  check "origins keep the shipped name" grep -qE '^    recipe    recipes/default.toml:[0-9]+$' "$T/explain"
  # A site recipe overrides the shipped one of its name, extending the shipped file by path
  # ([match] is the recipe's own: it is not inherited).
  mkdir -p "$SITE"
  printf 'extends = "%s"\n[match]\nlink_layer = "InfiniBand"\npriority = 10\n[env]\nNCCL_IB_TIMEOUT = 23\n' \
    "$SHARE/recipes/infiniband.toml" >"$SITE/infiniband.toml"
  "$SL" env --explain --sysroot "$FIX/ib-healthy" "${V[@]}" --run-dir "$T/r" >"$T/site" 2>&1
  check "a site recipe overrides the shipped one" grep -qxF "file     $SITE/infiniband.toml" "$T/site"
  check "the site recipe's value is exported" grep -qx "NCCL_IB_TIMEOUT=23" "$T/site"
  check "the shipped recipe it extends still applies" grep -q "^NCCL_IB_HCA=" "$T/site"
  "$SL" env --format json --sysroot "$FIX/ib-healthy" "${V[@]}" --run-dir "$T/r" >"$T/json" 2>/dev/null
  check "env --format json names the recipe file" /usr/bin/python3 -c \
    'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(j["recipe_file"]!=sys.argv[2])' \
    "$T/json" "$SITE/infiniband.toml"
  check "env --format json gives the search order" /usr/bin/python3 -c \
    'import json,sys; s=json.load(open(sys.argv[1]))["recipe_search"]
sys.exit(s != [{"kind": "site", "path": sys.argv[2], "present": True},
               {"kind": "shipped", "path": sys.argv[3], "present": True}])' \
    "$T/json" "$SITE" "$SHARE/recipes"
  rm -rf "$SITE"
  # A supervised job from the installed binary: its exit status, its environment, status.json.
  "$SL" run --on-preflight-fail=warn --run-dir "$T/job" -- \
    sh -c 'echo "NCCL_DEBUG=$NCCL_DEBUG" > "$1"; exit 3' _ "$T/job.env" >"$T/run.out" 2>&1
  rc=$?
  check "supervised job: its exit status 3 passed through (got $rc)" test "$rc" = 3
  check "supervised job got the recipe's environment" grep -qx "NCCL_DEBUG=WARN" "$T/job.env"
  check "supervised job: status.json written" test -s "$T/job/status.json"
}

case_deb() {
  command -v lintian >/dev/null || { bad "lintian missing: bash scripts/install-deps.sh"; return; }
  [ -f "$B/CPackConfig.cmake" ] || { bad "no $B/CPackConfig.cmake"; return; }
  # cpack installs what is built already: no compilation in this test.
  (cd "$T" && cpack -G DEB --config "$B/CPackConfig.cmake" -B "$T/pkg" >"$T/cpack.log" 2>&1)
  check "cpack -G DEB" ls "$T/pkg"/safe-launch_*.deb
  [ "$fail" = 0 ] || { cat "$T/cpack.log"; return; }
  local deb=("$T"/pkg/safe-launch_*.deb)
  local version
  version=$(dpkg-deb -f "${deb[0]}" Version)
  check "package version is the project's" grep -q "VERSION $version " "$SRC/CMakeLists.txt"
  check "the changelog's last entry is this version" \
    test "$(dpkg-parsechangelog -l "$SRC/packaging/changelog" -S Version)" = "$version"
  dpkg-deb -f "${deb[0]}" Depends >"$T/depends"
  check "Depends from dpkg-shlibdeps (libc6, libarchive13)" \
    grep -qE 'libc6 \(>= [0-9.]+\).*libarchive13|libarchive13.*libc6 \(>= ' "$T/depends"
  check "Depends does not pull in torch" bash -c "! grep -q torch '$T/depends'"
  local R=$T/root
  for d in "$T"/pkg/*.deb; do dpkg-deb -x "$d" "$R"; done
  for f in usr/bin/safe-launch usr/share/safe-launch/recipes/default.toml \
    usr/share/doc/safe-launch/examples/sbatch/train.sbatch usr/share/doc/safe-launch/copyright \
    usr/share/doc/safe-launch/changelog.gz usr/share/man/man1/safe-launch.1.gz \
    usr/share/bash-completion/completions/safe-launch; do
    check "package holds /$f" test -f "$R/$f"
  done
  installed_checks "$R/usr/bin/safe-launch" "$R/usr/share/safe-launch" "$R/etc/safe-launch/recipes.d"
  MANWIDTH=80 man -l "$R/usr/share/man/man1/safe-launch.1.gz" >"$T/man" 2>/dev/null
  check "man page: NAME section" grep -q "safe-launch - preflight, tune" "$T/man"
  check "man page: the manual's sections" grep -q "^Environment and recipes" "$T/man"
  man --warnings -l "$R/usr/share/man/man1/safe-launch.1.gz" 2>"$T/man.warn" >/dev/null
  check "man page renders without groff warnings" test ! -s "$T/man.warn"
  head -3 "$T/man.warn"
  # Completing "safe-launch <TAB>" offers every subcommand --help lists.
  bash -c 'source "$1"; COMP_WORDS=(safe-launch ""); COMP_CWORD=1; _safe_launch
           printf "%s\n" "${COMPREPLY[@]}"' _ "$R/usr/share/bash-completion/completions/safe-launch" \
    >"$T/compl"
  "$R/usr/bin/safe-launch" --help | sed -n '/^Subcommands:/,$s/^  \([a-z][a-z-]*\) .*/\1/p' >"$T/subs"
  check "--help lists subcommands" test -s "$T/subs"
  while read -r s; do check "completion offers '$s'" grep -qx "$s" "$T/compl"; done <"$T/subs"
  if [ -f "$R/usr/libexec/safe-launch/safe-launch-warmup" ]; then
    "$R/usr/bin/safe-launch" run --on-preflight-fail=warn --warmup --nproc-per-node 1 \
      --warmup-backend gloo --run-dir "$T/warm" -- true >"$T/warm.out" 2>&1
    rc=$?
    check "warm-up with the helper from /usr/libexec/safe-launch: exit $rc" test "$rc" = 0
    check "warm-up wrote warmup.json" test -s "$T/warm/warmup.json"
    [ "$rc" = 0 ] || tail -20 "$T/warm.out"
  else
    echo "skip: no safe-launch-warmup package (built without libtorch)"
  fi
  lintian "$T"/pkg/*.deb >"$T/lintian" 2>&1
  check "lintian: no errors" bash -c "! grep -q '^E:' '$T/lintian'"
  grep '^E:' "$T/lintian"
  echo "lintian warnings: $(grep -c '^W:' "$T/lintian") ($(grep '^W:' "$T/lintian" | awk '{print $3}' | sort | uniq -c | tr -s ' ' | tr '\n' ';'))"
}

case_install() {
  local P=$T/prefix
  cmake --install "$B" --prefix "$P" --component main >"$T/install.log" 2>&1
  check "cmake --install --prefix" test -x "$P/bin/safe-launch"
  check "recipes in P/share/safe-launch/recipes" test -f "$P/share/safe-launch/recipes/roce.toml"
  check "completion in P/share/bash-completion/completions" \
    test -f "$P/share/bash-completion/completions/safe-launch"
  check "examples in P/share/doc/safe-launch/examples" \
    test -f "$P/share/doc/safe-launch/examples/sbatch/train.sbatch"
  installed_checks "$P/bin/safe-launch" "$P/share/safe-launch" "$P/etc/safe-launch/recipes.d"
}

case_tarball() {
  bash "$SRC/packaging/make-tarball.sh" "$B" 0 "$T" >"$T/tarball.log" 2>&1
  check "tarball built" ls "$T"/safe-launch-0-linux-*.tar.gz
  [ "$fail" = 0 ] || { cat "$T/tarball.log"; return; }
  mkdir -p "$T/opt" && tar -xzf "$T"/safe-launch-0-linux-*.tar.gz -C "$T/opt"
  local P
  P=$(echo "$T"/opt/safe-launch-0-linux-*)
  check "RUNPATH \$ORIGIN/../lib" bash -c "readelf -d '$P/bin/safe-launch.bin' | grep -q 'RUNPATH.*\[\$ORIGIN/../lib\]'"
  ldd "$P/bin/safe-launch.bin" >"$T/ldd"
  check "libraries resolve from its lib/" grep -q "libarchive.so.13 => $P/bin/../lib/" "$T/ldd"
  check "C runtime from the system" grep -q "libc.so.6 => /lib" "$T/ldd"
  local min
  min=$(sed -n 's/^Needs: Linux, glibc >= \([0-9.]*\) .*/\1/p' "$P/README")
  check "README states the minimum glibc ($min)" test -n "$min"
  check "the wrapper checks the same version" grep -qx "min=$min" "$P/bin/safe-launch"
  installed_checks "$P/bin/safe-launch" "$P/share/safe-launch" "$P/etc/safe-launch/recipes.d"
  # An older C library is refused with the version needed, not the loader's message.
  mkdir -p "$T/fake" && printf '#!/bin/sh\necho "glibc 2.17"\n' >"$T/fake/getconf"
  chmod +x "$T/fake/getconf"
  PATH=$T/fake:$PATH "$P/bin/safe-launch" version >"$T/old" 2>&1
  rc=$?
  check "glibc 2.17 refused with exit 126 (got $rc)" test "$rc" = 126
  check "the message names both versions" has "$T/old" "needs glibc >= $min; this system has glibc 2.17"
  # No glibc at all (musl): refused too.
  printf '#!/bin/sh\nexit 1\n' >"$T/fake/getconf"
  PATH=$T/fake:$PATH "$P/bin/safe-launch" version >"$T/none" 2>&1
  check "no glibc refused with exit 126" test "$?" = 126
}

"case_$CASE"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
