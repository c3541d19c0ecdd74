#!/usr/bin/env bash
# Fails when the repository reaches outside itself: a user's clone has nothing beside it.
#   1. no tracked file names a path outside the checkout (a sibling `shared` folder, the team's checkout
#      paths), and the licence files are there;
#   2. a lone copy of the tracked files (in a fresh temporary directory, nothing beside it)
#      configures, and every input `ninja -t inputs` lists for its build exists in that copy, on
#      the system, or is built by the build itself;
#   3. no compile definition of that build carries the copy's own path (ccache reuse).
# Names each offender. usage: scripts/check-self-contained.sh [--no-configure]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
bad=0
say() { printf 'self-contained: %s\n' "$*"; bad=1; }

# 1. Tracked text that points outside. The patterns: a climb to a sibling `shared` folder, and the
# development machines' checkout layout (the team's checkout, its worktrees, mirrors, tool library).
# This script names them itself, so it is left out of its own search.
pattern='(\.\./)+shared([/"'"'"' ]|$)|/work/(main|shared|wt-[A-Za-z0-9_-]+|\.mirror|\.library|\.device|corpus-staging)(/|$)'
while IFS= read -r hit; do
  say "tracked file names a path outside the repository: $hit"
done < <(git grep -nIE "$pattern" -- . ':!scripts/check-self-contained.sh' 2>/dev/null | cut -c1-200)
[[ -f LICENSE ]] && grep -q 'Apache License' LICENSE && grep -q 'Version 2.0' LICENSE ||
  say "LICENSE at the root is missing or is not the Apache License 2.0"
grep -q '^License: Apache-2.0' packaging/copyright 2>/dev/null ||
  say "packaging/copyright does not say 'License: Apache-2.0' (machine-readable format)"
grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
  packaging/copyright 2>/dev/null || say "packaging/copyright is not in the machine-readable format"

if [[ ${1:-} != --no-configure ]]; then
  # 2. A lone copy: only what git tracks (what a clone gets), in a directory with nothing beside.
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/sl-lone-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/clone"
  git ls-files -z | tar --null --no-recursion -T - -cf - | tar -xf - -C "$tmp/clone"
  if ! cmake -S "$tmp/clone" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       >"$tmp/configure.log" 2>&1; then
    say "a lone clone does not configure:"
    tail -20 "$tmp/configure.log" | sed 's/^/  /'
  else
    ninja -C "$tmp/build" -t targets all | sed 's/: [^:]*$//' | sort -u >"$tmp/outputs"
    ninja -C "$tmp/build" -t inputs all | sort -u >"$tmp/inputs"
    n=0
    while IFS= read -r in; do
      n=$((n + 1))
      case $in in
        /*) path=$in ;;
        *) path=$tmp/build/$in ;;
      esac
      path=$(realpath -m "$path")
      case $path in
        "$tmp"/clone/* | "$tmp"/build/*)
          [[ -e $path ]] && continue
          rel=${path#"$tmp/build/"}
          grep -qxF "$rel" "$tmp/outputs" && continue
          grep -qxF "$path" "$tmp/outputs" && continue
          say "build input missing from a lone clone: ${path#"$tmp/"}" ;;
        "$tmp"/*) say "build input beside the clone (outside the repository): ${path#"$tmp/"}" ;;
        /usr/* | /lib/* | /lib64/* | /opt/* | /etc/*) ;;  # the system's packages
        *) say "build input outside the repository and the system: $path" ;;
      esac
    done <"$tmp/inputs"
    printf 'self-contained: %d build inputs checked in a lone clone\n' "$n"
    # 3. No compile definition carries the clone's own path (a -D"/tmp/x/tests/fixtures" string):
    # such an object differs in every clone, and ccache cannot reuse it across clones (issue 22;
    # tests find their trees at run time, tests/unit/test_paths.h).
    while IFS= read -r d; do
      say "a compile definition names the clone's path (find it at run time instead): $d"
    done < <(grep -E '^ *DEFINES = ' "$tmp/build/build.ninja" | tr ' ' '\n' |
               grep -F -e "$tmp/clone" -e "$tmp/build" | sort -u | sed "s|$tmp/||g")
  fi
fi
((bad == 0)) && echo "self-contained: ok"
exit $bad
