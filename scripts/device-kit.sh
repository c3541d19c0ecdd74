#!/usr/bin/env bash
# Packs what the GPU machine needs to run safe-launch's device checks (issues 5 and 6) into
# .device-kit/ (git-ignored; carry it with the run): the safe-launch binary built here, stripped,
# with RUNPATH $ORIGIN/../lib and the Debian shared libraries it loads (not glibc/libstdc++, which
# the GPU machine has newer), plus the header-only dependencies the warm-up needs to be built there
# against that machine's CUDA torch. Then, there: bash scripts/device-check.sh (see its header).
# usage: bash scripts/device-kit.sh [build-dir]        (needs patchelf: scripts/install-deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
KIT=.device-kit
[[ -x $B/bin/safe-launch ]] || { echo "device-kit: no $B/bin/safe-launch; run: cmake --build $B" >&2; exit 2; }
command -v patchelf >/dev/null || { echo "device-kit: patchelf missing (apt-get install patchelf)" >&2; exit 2; }
rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib" "$KIT/include"
strip -o "$KIT/bin/safe-launch" "$B/bin/safe-launch"
patchelf --set-rpath '$ORIGIN/../lib' "$KIT/bin/safe-launch"
# Every library ldd resolves, except the C/C++ runtime and the loader (the target's own are newer).
ldd "$B/bin/safe-launch" | awk '/=> \// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
    *) cp -L "$lib" "$KIT/lib/" ;;
  esac
done
# The libraries find each other through the same RUNPATH.
for lib in "$KIT"/lib/*; do patchelf --set-rpath '$ORIGIN' "$lib"; done
for d in fmt spdlog nlohmann toml++; do cp -r "/usr/include/$d" "$KIT/include/"; done
du -sh "$KIT" | awk '{print "device-kit: " $1 " in .device-kit (limit for a device run: 64 MiB with the tree)"}'
