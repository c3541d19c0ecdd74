#!/usr/bin/env bash
# The relocatable tarball (cmake --build build --target tarball): safe-launch-<V>-linux-<arch>.tar.gz
# in the build directory, for container images and clusters without our Debian packages. It is
# the install layout (packaging/CMakeLists.txt) plus lib/ with the non-system shared libraries
# the binary loads, the binary with RUNPATH $ORIGIN/../lib, and bin/safe-launch a small sh
# wrapper that checks the C library first (the loader's own message would be
# "version `GLIBC_2.34' not found"). Its README states the minimum glibc and libstdc++.
# usage: packaging/make-tarball.sh BUILD_DIR VERSION [OUT_DIR (default BUILD_DIR)]
#        (needs patchelf: scripts/install-deps.sh)
set -euo pipefail
B=$(cd "$1" && pwd)
V=$2
OUT=$(cd "${3:-$B}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
command -v patchelf >/dev/null || { echo "tarball: patchelf missing (scripts/install-deps.sh)" >&2; exit 2; }
NAME=safe-launch-$V-linux-$(uname -m)
STAGE=$OUT/tarball-stage
P=$STAGE/$NAME
rm -rf "$STAGE"
cmake --install "$B" --prefix "$P" --component main --strip >/dev/null
mkdir -p "$P/lib"
mv "$P/bin/safe-launch" "$P/bin/safe-launch.bin"
patchelf --set-rpath '$ORIGIN/../lib' "$P/bin/safe-launch.bin"
# Every library the loader resolves except the C/C++ runtime and the loader itself: those must
# come from the system (a second libc in one process does not work; the system's libstdc++ is
# the one the job's torch uses too).
ldd "$B/bin/safe-launch" | awk '/=> \// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
    *) cp -L "$lib" "$P/lib/" ;;
  esac
done
# libcrypto is dlopen()ed by the warm-up's store signing (not in ldd's list): carried too, found
# through the binary's RUNPATH like the rest (device-check.sh also links the helper against it).
cp -L "$(ldconfig -p | awk '/libcrypto\.so\.3 .*x86-64/ {print $NF; exit}')" "$P/lib/"
for lib in "$P"/lib/*; do
  chmod 0644 "$lib"
  strip --strip-unneeded "$lib"
  patchelf --set-rpath '$ORIGIN' "$lib"
done
# The newest symbol versions anything in the tarball needs = the oldest system it runs on.
need() { objdump -T "$P/bin/safe-launch.bin" "$P"/lib/* | grep -o "$1_[0-9][0-9.]*" | sort -uV | tail -1 | sed "s/$1_//"; }
GLIBC=$(need GLIBC)
GLIBCXX=$(need GLIBCXX)
sed "s/@MIN_GLIBC@/$GLIBC/g" "$HERE/safe-launch.sh.in" > "$P/bin/safe-launch"
chmod 0755 "$P/bin/safe-launch"
LIBS=$(cd "$P/lib" && ls | tr '\n' ' ')
sed -e "s/@VERSION@/$V/g" -e "s/@NAME@/$NAME/g" -e "s/@MIN_GLIBC@/$GLIBC/g" \
    -e "s/@MIN_GLIBCXX@/$GLIBCXX/g" -e "s/@LIBS@/$LIBS/g" "$HERE/README.tarball.in" > "$P/README"
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner --sort=name -czf "$OUT/$NAME.tar.gz" "$NAME"
rm -rf "$STAGE"
echo "tarball: $OUT/$NAME.tar.gz ($(du -h "$OUT/$NAME.tar.gz" | cut -f1); glibc >= $GLIBC, libstdc++ GLIBCXX_$GLIBCXX)"
