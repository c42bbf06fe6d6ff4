#!/usr/bin/env bash
# Configures and builds Weft into ./build (or $WEFT_BUILD_DIR) with -j2 and ccache.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
jobs=${WEFT_JOBS:-2}
# Let ccache hit across checkouts in different directories (CI clones anew).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j "$jobs"
