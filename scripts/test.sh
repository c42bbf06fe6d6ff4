#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds (-j2, ccache), checks
# the locking with clang's thread-safety analysis (scripts/thread-safety.sh)
# and runs every test through ctest. Unit tests and the simulation's shards
# run two at a time; cluster tests, which start etcd, weft-mds and weft-osd
# processes, run one at a time.
#   scripts/test.sh               everything
#   scripts/test.sh -L unit       only unit tests (any ctest arguments pass through)
#   WEFT_SKIP_THREAD_SAFETY=1 scripts/test.sh ...   without the analysis
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
if [[ "${WEFT_SKIP_THREAD_SAFETY:-0}" != 1 ]]; then
  "$root/scripts/thread-safety.sh"
fi
build=${WEFT_BUILD_DIR:-$root/build}
cd "$build"
exec ctest --output-on-failure -j2 --timeout 900 "$@"
