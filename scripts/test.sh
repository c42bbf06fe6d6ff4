#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds (-j2, ccache) and runs
# every test through ctest. Unit tests run two at a time; cluster tests, which
# start etcd, weft-mds and weft-osd processes, run one at a time.
#   scripts/test.sh               everything
#   scripts/test.sh -L unit       only unit tests (any ctest arguments pass through)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${WEFT_BUILD_DIR:-$root/build}
cd "$build"
exec ctest --output-on-failure -j2 --timeout 900 "$@"
