#!/usr/bin/env bash
# bench/ec_table.sh: per-stream (one thread) `weft bench` write and seq read on
# erasure-coded pools 4+2, 8+2 and 16+2 (k+m OSDs each, failure domain osd,
# fresh quickstart cluster per profile) with 4, 16 and 64 MiB objects. Prints a
# markdown table: MB/s (10^6 B/s, as weft bench prints) and p99 latency.
#
#   bench/ec_table.sh
# Environment: SECONDS_PER_RUN (15), PROFILES ("4+2 8+2 16+2"), SIZES
# ("4M 16M 64M"), PG_NUM (32), OUT (raw outputs; default a new /tmp dir).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bin=${WEFT_BUILD_DIR:-$root/build}/bin
SECONDS_PER_RUN=${SECONDS_PER_RUN:-15}
PROFILES=${PROFILES:-"4+2 8+2 16+2"}
SIZES=${SIZES:-"4M 16M 64M"}
PG_NUM=${PG_NUM:-32}
OUT=${OUT:-$(mktemp -d /tmp/weft-ectable.XXXXXX)}
mkdir -p "$OUT"

# The exit trap purges the cluster of the profile under way (lib.sh).
ceph_started=0 weft_dir="" sampler_pid="" failures=()
trap_exit

rows=()
for profile in $PROFILES; do
  k=${profile%+*} m=${profile#*+}
  weft_up /tmp/weft-ectable-cluster.XXXXXX "$OUT/up.$k$m.log" "profile $profile: " \
    WEFT_OSDS=$((k + m)) WEFT_MNT=/tmp/weft-ectable-mnt.$$ || die "quickstart.sh failed"
  pool=ec$k$m pgs0=$(pg_total)
  "$bin/weft" pool create "$pool" --ec "$profile" --pg-num "$PG_NUM" --failure-domain osd >/dev/null
  weft_wait_clean $(( pgs0 + PG_NUM )) || die "profile $profile: PGs not active+clean after 300 s"
  for size in $SIZES; do
    bytes=$(numfmt --from=iec "$size")
    w=$OUT/write.$k$m.$size.txt r=$OUT/seq.$k$m.$size.txt
    log "profile $profile, $size objects: write, seq"
    sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    "$bin/weft" bench "$pool" write --seconds "$SECONDS_PER_RUN" --threads 1 --block-size "$bytes" >"$w" 2>&1 || true
    sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    "$bin/weft" bench "$pool" seq --seconds "$SECONDS_PER_RUN" --threads 1 >"$r" 2>&1 || true
    "$bin/weft" bench "$pool" cleanup >/dev/null 2>&1 || true
    rows+=("| $profile | $size | $(value "$w" "Bandwidth (MB/sec):") | $(value "$w" "p99 Latency(s):") | $(value "$r" "Bandwidth (MB/sec):") | $(value "$r" "p99 Latency(s):") |")
  done
  weft_purge "profile $profile: "
done
{
  echo "# weft bench, one stream, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), ${SECONDS_PER_RUN}s per phase"
  echo
  echo "| EC | object | write MB/s | write p99 s | read MB/s | read p99 s |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "raw outputs: $OUT"
} | tee "$OUT/table.md"
