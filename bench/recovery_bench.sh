#!/usr/bin/env bash
# bench/recovery_bench.sh: recovery on Weft and on the Ceph anchor, side by
# side, one after the other on this machine: how fast one OSD's data moves
# after `osd out` of one of six OSDs, what clients get meanwhile, and how
# much memory the OSDs use for it.
#
# Each system gets a 3x pool `rec` (REC_PG_NUM PGs, failure domain osd)
# filled with FILL_GIB of 4 MiB objects (16 in flight; Weft: `weft bench
# write`, Ceph: bench/rados_latency.py write, which also times every
# operation; by count, not time: this disk can take a GiB/s), then client I/O alone for IO_SECONDS, then `osd out` of its
# first OSD and the same client I/O while the PGs backfill, then the wait
# until every PG is active+clean. Client I/O is two loads at once: 4 MiB
# writes to a second pool (4 in flight) and reads of the filled objects in
# order (4 in flight); bandwidth in MiB/s and p99 latency for each.
#
# Printed per system: the recovery rate (the bytes the first OSD held,
# over the time from `out` to active+clean), the client figures idle and
# during recovery, and the OSDs' resident memory: the largest sample (once
# a second, every OSD) during recovery, and the largest VmHWM over the
# whole run. Ratios are Weft / Ceph. The anchor's OSDs have
# osd_memory_target 1 GiB (its up.sh); Weft's OSDs their defaults.
#
#   bench/recovery_bench.sh
#   SYSTEMS=weft FILL_GIB=16 bench/recovery_bench.sh   # more data, Weft only
#
# The disk needs about 3 x FILL_GIB free (checked first), for one system
# at a time. Environment: SYSTEMS ("weft ceph"), FILL_GIB (8), IO_SECONDS (10),
#   REC_PG_NUM (64), CLEAN_TIMEOUT_S (1800), OUT (default a new
#   /tmp/weft-recbench.XXXXXX, kept), CDIR (/tmp/cephanchor).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bin=${WEFT_BUILD_DIR:-$root/build}/bin
anchor=$(cd "$root/../shared/anchors/ceph" && pwd)
export CDIR=${CDIR:-/tmp/cephanchor}  # up.sh/down.sh read it too

SYSTEMS=${SYSTEMS:-"weft ceph"}
FILL_GIB=${FILL_GIB:-8}
IO_SECONDS=${IO_SECONDS:-10}
REC_PG_NUM=${REC_PG_NUM:-64}
CLEAN_TIMEOUT_S=${CLEAN_TIMEOUT_S:-1800}
[[ ${1:-} != -h && ${1:-} != --help ]] || { print_help; exit 0; }
need_positive_int FILL_GIB IO_SECONDS REC_PG_NUM CLEAN_TIMEOUT_S
fill_objects=$(( FILL_GIB * 256 ))
avail_gib=$(df -BG --output=avail /tmp | tail -1 | tr -dc 0-9)
(( avail_gib > 3 * FILL_GIB + 10 )) ||
  die "/tmp has ${avail_gib} GiB free: FILL_GIB=$FILL_GIB needs about $(( 3 * FILL_GIB + 10 ))"

for s in $SYSTEMS; do [[ $s == weft || $s == ceph ]] || die "SYSTEMS: '$s' is not weft or ceph"; done
OUT=${OUT:-$(mktemp -d /tmp/weft-recbench.XXXXXX)}
mkdir -p "$OUT"
ceph_conf=$CDIR/ceph.conf
C=(ceph -c "$ceph_conf")
probe=(/usr/bin/python3 "$root/bench/rados_latency.py" --conf "$ceph_conf")
W=("$bin/weft")
weft_dir="" ceph_started=0 sampler_pid="" failures=() verdicts=()
trap_exit
started_at=$(date +%s)

mib() { calc "$1 / 1048576"; }

# ---------------------------------------------------------------- weft --
weft_osd0_bytes() {
  local base
  base=$(sed -n 's/^osd_metrics_port *= *//p' "$WEFT_CONF")
  curl -s "http://127.0.0.1:$base/metrics" | awk '/^weft_osd_stored_bytes/ { print $2 }'
}
weft_setup() {
  weft_up /tmp/weft-recbench-cluster.XXXXXX "$OUT/weft.up.log" "" WEFT_MNT="$OUT/weft-mnt" ||
    die "quickstart.sh failed"
  pgs0=$(pg_total)
  "${W[@]}" pool create rec --size 3 --min-size 2 --pg-num "$REC_PG_NUM" --failure-domain osd \
    >"$OUT/weft.pool.log" 2>&1 || die "pool create: $(cat "$OUT/weft.pool.log")"
  "${W[@]}" pool create recw --size 3 --min-size 2 --pg-num 32 --failure-domain osd \
    >>"$OUT/weft.pool.log" 2>&1 || die "pool create: $(cat "$OUT/weft.pool.log")"
  weft_wait_clean $(( pgs0 + REC_PG_NUM + 32 )) || die "PGs not active+clean after 300 s"
  pidfiles=("$weft_dir"/run/osd.*.pid)
}
weft_fill() {
  run_tool "fill" "$OUT/weft.fill.txt" "${W[@]}" bench rec write --seconds 3600 \
    --max-objects "$fill_objects" --threads 16 --block-size 4194304
}
# weft_io TAG: the reader and the writer at once.
weft_io() {
  "${W[@]}" bench rec seq --seconds "$IO_SECONDS" --threads 4 >"$OUT/weft.$1.read.txt" 2>&1 &
  local reader=$!
  "${W[@]}" bench recw write --seconds "$IO_SECONDS" --threads 4 --block-size 4194304 \
    >"$OUT/weft.$1.write.txt" 2>&1 || true
  wait "$reader" || true
  "${W[@]}" bench recw cleanup >/dev/null 2>&1 || true
}
weft_out() { "${W[@]}" osd out "$(cat "$weft_dir/osd.0/.weft_osd_id")" >"$OUT/weft.out.log" 2>&1; }
# Recovery done: every PG active and none recovering, backfilling or not
# reported. (Not "all active+clean": the quickstart's EC 4+2 pool cannot
# place six shards on five OSDs and stays undersized.)
weft_clean() {
  local pgs
  pgs=$("${W[@]}" status 2>/dev/null | sed -n 's/^ *pgs: *//p')
  [[ -n $pgs ]] && ! grep -qE "recover|backfill|peering|unknown|down|incomplete|peered" <<<"$pgs"
}
weft_teardown() { weft_purge; }
# Weft bench prints MB/s (10^6): MiB/s as rados bench.
weft_bw() { local v; v=$(value "$1" "Bandwidth (MB/sec):"); [[ -z $v ]] || calc "$v * 1000000 / 1048576"; }

# ---------------------------------------------------------------- ceph --
ceph_osd0_bytes() {
  "${C[@]}" osd df -f json 2>/dev/null | python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    if n["id"] == 0: print(n["kb_used_data"] * 1024)'
}
ceph_setup() {
  install_ceph
  anchor_clear 1
  anchor_up "$OUT/ceph.up.log" || die "ceph up.sh failed"
  local p
  for p in "rec $REC_PG_NUM" "recw 32"; do
    set -- $p
    {
      "${C[@]}" osd pool create "$1" "$2" "$2" replicated &&
      "${C[@]}" osd pool set "$1" size 3 &&
      "${C[@]}" osd pool set "$1" min_size 2 &&
      "${C[@]}" osd pool application enable "$1" rados
    } >>"$OUT/ceph.pool.log" 2>&1 || die "creating Ceph pool $1: $(tail -3 "$OUT/ceph.pool.log")"
  done
  local tries=0
  until ceph_pgs_clean; do
    (( ++tries < 300 )) || die "Ceph PGs not active+clean after 300 s"
    sleep 1
  done
  pidfiles=("$CDIR"/run/osd.*.pid)
}
ceph_fill() {
  run_tool "fill" "$OUT/ceph.fill.txt" "${probe[@]}" --pool rec write --seconds 3600 \
    --max-objects "$fill_objects" --threads 16 --block-size 4194304 --prefix fill
}
ceph_io() {
  "${probe[@]}" --pool rec seq --seconds "$IO_SECONDS" --threads 4 --prefix fill \
    >"$OUT/ceph.$1.read.txt" 2>&1 &
  local reader=$!
  "${probe[@]}" --pool recw write --seconds "$IO_SECONDS" --threads 4 --block-size 4194304 \
    --prefix "w$1" >"$OUT/ceph.$1.write.txt" 2>&1 || true
  wait "$reader" || true
}
ceph_out() { "${C[@]}" osd out 0 >"$OUT/ceph.out.log" 2>&1; }
ceph_clean() {  # the benchmark's pools active+clean (the anchor's EC 4+2 pool cannot be)
  local p
  for p in rec recw; do
    "${C[@]}" pg ls-by-pool "$p" -f json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
pgs = d["pg_stats"] if isinstance(d, dict) else d
sys.exit(0 if pgs and all(p["state"] == "active+clean" for p in pgs) else 1)' || return 1
  done
}
ceph_teardown() { anchor_down; }
ceph_bw() { value "$1" "Bandwidth (MB/sec):"; }

# ----------------------------------------------------------------- run --
declare -A R
run_system() {
  local s=$1 t0 t1 moved
  log "$s: setting up"
  "${s}_setup"
  log "$s: filling pool rec with $FILL_GIB GiB"
  "${s}_fill"
  sleep 5
  moved=$("${s}_osd0_bytes")
  [[ -n $moved ]] || die "$s: no byte count for its first OSD"
  log "$s: client I/O alone for $IO_SECONDS s"
  "${s}_io" idle
  log "$s: osd out of the first OSD ($(fixed "$(mib "$moved")" 0) MiB), client I/O meanwhile"
  start_sampler "$OUT/$s.rss.txt" "${pidfiles[@]}"
  t0=$(date +%s.%N)
  "${s}_out" || die "$s: osd out failed"
  # The client I/O beside it; the time to clean is polled meanwhile.
  ( sleep 1; "${s}_io" busy ) &
  local io=$! waited=0
  sleep 2  # the map change reaches the OSDs before the first poll
  until "${s}_clean"; do
    (( ++waited < CLEAN_TIMEOUT_S * 2 )) || { failures+=("$s: not clean after $CLEAN_TIMEOUT_S s"); break; }
    sleep 0.5
  done
  t1=$(date +%s.%N)
  wait "$io" || true
  stop_sampler
  R[$s.moved]=$moved
  R[$s.secs]=$(calc "$t1 - $t0")
  R[$s.rate]=$(calc "$(mib "$moved") / (${R[$s.secs]})")
  R[$s.rss]=$(awk '$2 > m { m = $2 } END { printf "%.0f", m / 1024 }' "$OUT/$s.rss.txt")
  R[$s.hwm]=$(peak_rss "$OUT/$s" "${pidfiles[@]}")
  local tag kind
  for tag in idle busy; do
    for kind in read write; do
      R[$s.$tag.$kind.bw]=$("${s}_bw" "$OUT/$s.$tag.$kind.txt")
      R[$s.$tag.$kind.p99]=$(value "$OUT/$s.$tag.$kind.txt" "p99 Latency(s):")
    done
  done
  log "$s: $(fixed "$(mib "$moved")" 0) MiB moved in $(fixed "${R[$s.secs]}") s"
  "${s}_teardown"
}

note_foreign OSD ceph-osd weft-osd
"$root/scripts/quickstart.sh" down >/dev/null 2>&1 || true
wait_for_build
for s in $SYSTEMS; do run_system "$s"; done

row() {  # LABEL KEY [SCALE]: the weft and ceph figures and weft/ceph
  local w=${R[weft.$2]:-} c=${R[ceph.$2]:-} k=${3:-1}
  [[ -z $w ]] || w=$(calc "$w * $k")
  [[ -z $c ]] || c=$(calc "$c * $k")
  printf '%-44s %10s %10s %10s\n' "$1" "$(fixed "$w")" "$(fixed "$c")" "$(ratio "$c" "$w")"
}
{
  echo "# recovery_bench $(date -u +%FT%TZ), weft $(weft_version)"
  machine_lines
  echo "workload: 3x pools, failure domain osd, $REC_PG_NUM PGs filled with $FILL_GIB GiB (4 MiB, 16 in"\
       "flight); client I/O ${IO_SECONDS}s: 4 MiB writes + in-order reads, 4 in flight each"
  printf '%-44s %10s %10s %10s\n' "" weft ceph weft/ceph
  row "data on the OSD taken out (MiB)" moved "$(calc "1 / 1048576")"
  row "time from out to active+clean (s)" secs
  row "recovery rate (MiB/s)" rate
  row "client write MiB/s, idle" idle.write.bw
  row "client write MiB/s, during recovery" busy.write.bw
  row "client write p99 ms, idle" idle.write.p99 1000
  row "client write p99 ms, during recovery" busy.write.p99 1000
  row "client read MiB/s, idle" idle.read.bw
  row "client read MiB/s, during recovery" busy.read.bw
  row "client read p99 ms, idle" idle.read.p99 1000
  row "client read p99 ms, during recovery" busy.read.p99 1000
  row "OSD RSS during recovery, largest (MiB)" rss
  row "OSD VmHWM over the run, largest (MiB)" hwm
  for f in "${failures[@]}"; do echo "FAILED: $f"; done
  echo "wall time: $(( $(date +%s) - started_at )) s; raw outputs in $OUT"
} | tee "$OUT/report.txt"
