#!/usr/bin/env bash
# bench/ec_bench.sh: `weft bench` against `rados bench` on erasure-coded 4+2
# pools of 6 OSDs (failure domain osd), 16 threads, 4 MiB objects, write then
# seq, one after the other; prints both and the ratio (target >= 1.5x Ceph).
# It is bench/object_bench.sh with EC=4+2: same options and environment.
#   bench/ec_bench.sh [--skip-ceph] [--skip-weft]
set -euo pipefail
EC=${EC:-4+2} exec "$(dirname "$0")/object_bench.sh" "$@"
