#!/usr/bin/env bash
# bench/object_bench.sh: Weft's object layer against `rados bench` on the Ceph
# anchor (../shared/anchors/ceph/), on this machine, one after the other.
#
# Both clusters: 6 OSDs on this host, a pool `benchrep3` with size 3,
# min_size 2, OBJ_PG_NUM PGs, failure domain osd. Each is driven for
# SECONDS_PER_RUN seconds with THREADS operations in flight and BLOCK-sized
# objects: `write` (objects kept), then `seq` (one pass reading them back).
# Ceph runs first and is stopped before Weft starts (an idle cluster still
# uses CPU). Prints the commands, the machine, a table ceph | weft | weft/ceph
# and the verdict on each target of the issue:
#   write MiB/s >= 1.5x ceph, seq MiB/s >= 1.5x ceph, p99 latency <= ceph's,
#   peak RSS per OSD <= 512 MiB.
# rados bench prints no latency percentiles: Ceph's p99 comes from
# bench/rados_latency.py, the same workload through librados (python3-rados),
# run after rados bench on the same pool.
#
#   bench/object_bench.sh [--skip-ceph] [--skip-weft]
#
# With EC=K+M (bench/ec_bench.sh sets EC=4+2) both pools are erasure-coded
# instead: `benchecKM`, K+M shards, min_size K+1, failure domain osd (Ceph: an
# erasure-code-profile with plugin jerasure, technique reed_sol_van, its
# default stripe unit; Weft: ISA-L, its default 64 KiB chunk).
# Environment: SECONDS_PER_RUN (30), THREADS (16), BLOCK (4M), OBJ_PG_NUM (128),
#   RUNS (1; with RUNS > 1 every metric is the median over the runs, each run
#   starting from an empty pool: on Ceph a fresh anchor), DROP_CACHES (1: sync and drop the page cache
#   before every run and between write and seq), OUT (directory for the raw
#   outputs; default a new /tmp/weft-objbench.XXXXXX, kept), DISK_PROBE (1: before
#   every seq run, fio reads files of its own for DISK_PROBE_S (8) s at the
#   same shape, THREADS O_DIRECT readers of BLOCK, and the report shows that
#   rate beside each system's; 0: no probe).
# Needs root (apt-get, the Ceph anchor, drop_caches). See bench/README.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
anchor=$(cd "$root/../shared/anchors/ceph" && pwd)
bin=${WEFT_BUILD_DIR:-$root/build}/bin

SECONDS_PER_RUN=${SECONDS_PER_RUN:-30}
THREADS=${THREADS:-16}
BLOCK=${BLOCK:-4M}
OBJ_PG_NUM=${OBJ_PG_NUM:-128}
RUNS=${RUNS:-1}
DROP_CACHES=${DROP_CACHES:-1}
POOL=benchrep3
EC=${EC:-}
if [[ -n $EC ]]; then
  [[ $EC =~ ^([0-9]+)\+([0-9]+)$ ]] || { echo "EC must be K+M, e.g. 4+2" >&2; exit 2; }
  ec_k=${BASH_REMATCH[1]} ec_m=${BASH_REMATCH[2]}
  POOL=benchec$ec_k$ec_m
fi
RSS_TARGET_MIB=512
export CDIR=${CDIR:-/tmp/cephanchor}   # up.sh/down.sh read it too

side_options "[--skip-ceph] [--skip-weft]" "$@"
need_positive_int SECONDS_PER_RUN THREADS OBJ_PG_NUM RUNS
block_bytes=$(numfmt --from=iec "${BLOCK%B}") || { echo "BLOCK: bad size '$BLOCK'" >&2; exit 2; }

OUT=${OUT:-$(mktemp -d /tmp/weft-objbench.XXXXXX)}
mkdir -p "$OUT"
ceph_conf=$CDIR/ceph.conf
C=(ceph -c "$ceph_conf")
R=(rados -c "$ceph_conf")
probe=(/usr/bin/python3 "$root/bench/rados_latency.py" --conf "$ceph_conf" --pool "$POOL")
W=("$bin/weft")

# The exit trap stops what the script started (lib.sh).
ceph_started=0 weft_dir="" sampler_pid="" failures=()
trap_exit

drop_caches() {
  sync
  # The previous run's cleanup, or the other system's teardown, still
  # discarding: not part of what the next run measures (lib.sh).
  echo -n "before $1: " >>"$OUT/settle.log"
  settle_disk "$OUT" "$OUT/settle.log"
  if [[ $DROP_CACHES == 1 ]]; then
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || log "warning: cannot drop caches (not root?)"
  fi
}

# ----------------------------------------------------------------- header --
started_at=$(date +%s)
if [[ $do_ceph == 1 ]]; then install_ceph; fi
{
  echo "# Weft object layer vs rados bench (Ceph anchor), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  machine_lines
  echo "weft: $(weft_version)"
  echo "ceph: $(ceph --version 2>/dev/null | awk '{ print $3, $5 }' || echo 'not installed yet')"
  echo "workload: pool $POOL $([[ -n $EC ]] && echo "erasure $EC min_size $((ec_k + 1))" || echo "size 3 min_size 2") pg_num $OBJ_PG_NUM, $THREADS threads,"\
       "$BLOCK ($block_bytes B) objects, ${SECONDS_PER_RUN}s write then seq, runs: $RUNS,"\
       "drop caches: $([[ $DROP_CACHES == 1 ]] && echo yes || echo no)"
  echo "raw outputs: $OUT"
} | tee "$OUT/header.txt"
commands=()
note_foreign OSD ceph-osd weft-osd

# Idle clusters cost CPU: the default quickstart cluster must not run beside
# either measurement.
"$root/scripts/quickstart.sh" down >/dev/null 2>&1 || true

# ------------------------------------------------------------------- ceph --

# ceph_setup: a fresh anchor with the benchmark pool, every PG active+clean.
ceph_setup() {
  anchor_clear 1  # this script stops an anchor it finds running
  anchor_up "$OUT/ceph.up.log" || die "ceph up.sh failed"

  if [[ -n $EC ]]; then
    {
      "${C[@]}" osd erasure-code-profile set "weft$ec_k$ec_m" k="$ec_k" m="$ec_m" crush-failure-domain=osd &&
      "${C[@]}" osd pool create "$POOL" "$OBJ_PG_NUM" "$OBJ_PG_NUM" erasure "weft$ec_k$ec_m" &&
      "${C[@]}" osd pool application enable "$POOL" rados
    } >"$OUT/ceph.pool.log" 2>&1 || { cat "$OUT/ceph.pool.log" >&2; die "creating the Ceph pool failed"; }
  else
    {
      "${C[@]}" osd pool create "$POOL" "$OBJ_PG_NUM" "$OBJ_PG_NUM" replicated &&
      "${C[@]}" osd pool set "$POOL" size 3 &&
      "${C[@]}" osd pool set "$POOL" min_size 2 &&
      "${C[@]}" osd pool application enable "$POOL" rados
    } >"$OUT/ceph.pool.log" 2>&1 || { cat "$OUT/ceph.pool.log" >&2; die "creating the Ceph pool failed"; }
  fi
  log "waiting for the Ceph PGs to be active+clean"
  local tries=0
  until ceph_pgs_clean; do
    (( ++tries < 300 )) || die "Ceph PGs not active+clean after 300 s: $("${C[@]}" pg stat 2>&1)"
    sleep 1
  done
  "${C[@]}" -s >"$OUT/ceph.status.txt" 2>&1 || true
  "${C[@]}" osd pool ls detail >>"$OUT/ceph.status.txt" 2>&1 || true
}

# Every run gets a fresh anchor: BlueStore on its image files does not give
# deleted objects' space back to the host's file system, and a second run on
# the same anchor filled this machine's 60 GB (the images are 6 x 20 GB,
# sparse). For the same reason the bench's objects go before the latency
# probe writes its own.
ceph_part() {
  local pidfiles r rss
  ceph_rss=""
  for r in $(seq "$RUNS"); do
    ceph_setup
    pidfiles=("$CDIR"/run/osd.*.pid)
    start_sampler "$OUT/ceph.rss.samples.$r" "${pidfiles[@]}"
    drop_caches "ceph write (run $r)"
    run_tool "ceph write (run $r)" "$OUT/ceph.write.$r.txt" \
      "${R[@]}" -p "$POOL" bench "$SECONDS_PER_RUN" write -t "$THREADS" -b "$block_bytes" --no-cleanup
    drop_caches "ceph seq (run $r)"
    disk_probe ceph.$r "$OUT/disk_probe.ceph.$r.json"
    run_tool "ceph seq (run $r)" "$OUT/ceph.seq.$r.txt" \
      "${R[@]}" -p "$POOL" bench "$SECONDS_PER_RUN" seq -t "$THREADS"
    "${R[@]}" -p "$POOL" cleanup >"$OUT/ceph.cleanup.$r.txt" 2>&1 || true
    # Latency percentiles, which rados bench does not print: the same
    # workload again through librados, timed per operation.
    drop_caches "ceph latency probe write (run $r)"
    run_tool "ceph latency probe write (run $r)" "$OUT/cephlat.write.$r.txt" \
      "${probe[@]}" write --seconds "$SECONDS_PER_RUN" --threads "$THREADS" --block-size "$block_bytes" --prefix "probe$r"
    drop_caches "ceph latency probe seq (run $r)"
    run_tool "ceph latency probe seq (run $r)" "$OUT/cephlat.seq.$r.txt" \
      "${probe[@]}" seq --seconds "$SECONDS_PER_RUN" --threads "$THREADS" --block-size "$block_bytes" --prefix "probe$r"
    stop_sampler
    rss=$(peak_rss "$OUT/ceph.rss.$r" "${pidfiles[@]}")
    # The report shows the per-OSD peaks of the run with the highest one.
    if [[ -n $rss ]] && (( rss > ${ceph_rss:-0} )); then
      ceph_rss=$rss
      cp "$OUT/ceph.rss.$r.hwm" "$OUT/ceph.rss.hwm"
    fi
    anchor_down
  done
  cat "$OUT"/ceph.rss.samples.* >"$OUT/ceph.rss.samples"
  if [[ -n $EC ]]; then
    commands+=("ceph -c $ceph_conf osd erasure-code-profile set weft$ec_k$ec_m k=$ec_k m=$ec_m crush-failure-domain=osd; ... osd pool create $POOL $OBJ_PG_NUM $OBJ_PG_NUM erasure weft$ec_k$ec_m; ... application enable $POOL rados")
  else
    commands+=("ceph -c $ceph_conf osd pool create $POOL $OBJ_PG_NUM $OBJ_PG_NUM replicated; ... set size 3; ... set min_size 2; ... application enable $POOL rados")
  fi
  commands+=("rados -c $ceph_conf -p $POOL bench $SECONDS_PER_RUN write -t $THREADS -b $block_bytes --no-cleanup")
  commands+=("rados -c $ceph_conf -p $POOL bench $SECONDS_PER_RUN seq -t $THREADS")
  commands+=("rados -c $ceph_conf -p $POOL cleanup")
  commands+=("bench/rados_latency.py --conf $ceph_conf --pool $POOL write|seq --seconds $SECONDS_PER_RUN --threads $THREADS --block-size $block_bytes   # ceph's latency percentiles")
}

# ------------------------------------------------------------------- weft --
weft_part() {
  wait_for_build  # quickstart.sh builds what is missing
  # Its own mountpoint: ./mnt may hold the developer's quickstart mount.
  weft_up /tmp/weft-objbench-cluster.XXXXXX "$OUT/weft.up.log" "" WEFT_MNT="$OUT/weft-mnt" ||
    die "quickstart.sh failed"
  local shape=(--size 3 --min-size 2) pgs0
  pgs0=$(pg_total)
  [[ -z $EC ]] || shape=(--ec "$EC" --failure-domain osd)
  "${W[@]}" pool create "$POOL" "${shape[@]}" --pg-num "$OBJ_PG_NUM" >"$OUT/weft.pool.log" 2>&1 \
    || { cat "$OUT/weft.pool.log" >&2; die "creating the Weft pool failed"; }
  commands+=("WEFT_DIR=\$(mktemp -d) WEFT_OSDS=6 WEFT_MNT=$OUT/weft-mnt scripts/quickstart.sh; weft pool create $POOL ${shape[*]} --pg-num $OBJ_PG_NUM")
  log "waiting for the Weft PGs to be active+clean"
  weft_wait_clean $(( pgs0 + OBJ_PG_NUM )) ||
    die "Weft PGs not active+clean after 300 s: $(grep -E 'pgs:|HEALTH' "$OUT/weft.status.txt" | tr '\n' ' ')"

  local pidfiles=("$weft_dir"/run/osd.*.pid)
  [[ ${#pidfiles[@]} == 6 ]] || die "expected 6 weft-osd pid files, found ${#pidfiles[@]}"
  start_sampler "$OUT/weft.rss.samples" "${pidfiles[@]}"
  for r in $(seq "$RUNS"); do
    drop_caches "weft write (run $r)"
    run_tool "weft write (run $r)" "$OUT/weft.write.$r.txt" \
      "${W[@]}" bench "$POOL" write --seconds "$SECONDS_PER_RUN" --threads "$THREADS" --block-size "$block_bytes"
    drop_caches "weft seq (run $r)"
    disk_probe weft.$r "$OUT/disk_probe.weft.$r.json"
    run_tool "weft seq (run $r)" "$OUT/weft.seq.$r.txt" \
      "${W[@]}" bench "$POOL" seq --seconds "$SECONDS_PER_RUN" --threads "$THREADS"
    if [[ $r -lt $RUNS ]]; then
      "${W[@]}" bench "$POOL" cleanup >"$OUT/weft.cleanup.$r.txt" 2>&1 || true
    fi
  done
  stop_sampler
  commands+=("weft bench $POOL write --seconds $SECONDS_PER_RUN --threads $THREADS --block-size $block_bytes")
  commands+=("weft bench $POOL seq --seconds $SECONDS_PER_RUN --threads $THREADS")
  weft_rss=$(peak_rss "$OUT/weft.rss" "${pidfiles[@]}")
  "${W[@]}" status >>"$OUT/weft.status.txt" 2>&1 || true
  weft_purge
}

ceph_rss="" weft_rss=""
# The disk's read rate at the seq runs' shape, right before each (lib.sh).
disk_probe_setup "$OUT/diskprobe" "$THREADS" "$block_bytes"
# (plain `if`s: errexit is off inside a function called from an && list)
if [[ $do_ceph == 1 ]]; then ceph_part; fi
if [[ $do_weft == 1 ]]; then weft_part; fi
disk_probe_remove

# ----------------------------------------------------------------- report --
# metric SYS MODE LABEL: median over the runs of LABEL's value, "" if absent.
# Bandwidth is reported in MiB/s: rados bench's "MB/sec" is bytes/2^20 per
# second, weft bench's is bytes/10^6 per second, so weft's is converted.
metric() {
  local sys=$1 mode=$2 label=$3 scale=1
  [[ $sys == weft && $label == "Bandwidth (MB/sec):" ]] && scale=$(calc "1000000 / 1048576")
  median_runs "$OUT/$sys.$mode" scaled_value "$label" "$scale"
}
scaled_value() {  # LABEL SCALE FILE
  local v; v=$(value "$3" "$1")
  [[ $v =~ ^[0-9.eE+-]+$ ]] && calc "$v * $2"
}

declare -A M
for sys in ceph weft; do
  for mode in write seq; do
    M[$sys.$mode.bw]=$(metric $sys $mode "Bandwidth (MB/sec):")
    M[$sys.$mode.avg]=$(metric $sys $mode "Average Latency(s):")
    M[$sys.$mode.p99]=$(metric $sys $mode "p99 Latency(s):")
    # Ceph's percentiles come from the latency probe (rados bench has none).
    # The probe (Python, a copy of each buffer into librados) runs slower
    # than rados bench, so its p99 is taken relative to its own average and
    # applied to rados bench's: p99 = rados avg * probe p99 / probe avg.
    # That scales Ceph's tail down to rados bench's speed, never up.
    if [[ $sys == ceph ]]; then
      M[$sys.$mode.probe_p99]=$(median_runs "$OUT/cephlat.$mode" scaled_value "p99 Latency(s):" 1)
      M[$sys.$mode.probe_avg]=$(median_runs "$OUT/cephlat.$mode" scaled_value "Average Latency(s):" 1)
      M[$sys.$mode.probe_bw]=$(median_runs "$OUT/cephlat.$mode" scaled_value "Bandwidth (MB/sec):" 1)
      pa=${M[$sys.$mode.probe_avg]} pp=${M[$sys.$mode.probe_p99]} ra=${M[$sys.$mode.avg]}
      if [[ -n $pa && -n $pp && -n $ra ]] && awk -v a="$pa" 'BEGIN { exit !(a > 0) }'; then
        M[$sys.$mode.p99]=$(calc "$ra * $pp / $pa")
      fi
    fi
    M[$sys.$mode.max]=$(metric $sys $mode "Max latency(s):")
    iops=$(metric $sys $mode "Average IOPS:")
    [[ -z $iops ]] && iops=$(metric $sys $mode "Average IOPS")  # rados seq prints no colon
    M[$sys.$mode.iops]=$iops
  done
done

verdicts=()
row() { printf '%-34s %11s %11s %10s  %s\n' "$@"; }
bw_row() {  # mode label
  local c=${M[ceph.$1.bw]} w=${M[weft.$1.bw]} v="-"
  if [[ -n $c && -n $w ]]; then
    v=$(awk -v c="$c" -v w="$w" 'BEGIN { print (w >= 1.5 * c) ? "PASS" : "MISS" }')
    verdicts+=("$v  $1 bandwidth >= 1.5x ceph ($(ratio "$c" "$w"))")
  fi
  row "$2" "$(fixed "$c" 1)" "$(fixed "$w" 1)" "$(ratio "$c" "$w")" "target >= 1.50x: $v"
}
# Ceph's p99 comes from bench/rados_latency.py (rados bench prints no
# percentiles). Without the probe's output it is bounded, not invented:
# p99 <= max, and since at most 1% of the operations are slower than p99 and
# none slower than max, avg <= 0.99 p99 + 0.01 max, i.e.
# p99 >= (avg - 0.01 max) / 0.99.
p99_rows() {  # mode
  local mode=$1 cp=${M[ceph.$1.p99]} ca=${M[ceph.$1.avg]} cm=${M[ceph.$1.max]} wp=${M[weft.$1.p99]}
  local lb="" v="-" how=""
  [[ -n $ca && -n $cm ]] && lb=$(calc "($ca - 0.01 * $cm) / 0.99")
  if [[ -n $cp && -n $wp ]]; then
    v=$(awk -v c="$cp" -v w="$wp" 'BEGIN { print (w <= c) ? "PASS" : "MISS" }'); how="vs ceph p99"
  elif [[ -n $lb && -n $wp ]]; then
    v=$(awk -v lb="$lb" -v mx="$cm" -v w="$wp" 'BEGIN { print (w <= lb) ? "PASS" : (w > mx) ? "MISS" : "UNDECIDED" }')
    how="ceph p99 n/a: PASS if <= its lower bound, MISS if > its max"
  fi
  row "$mode p99 latency (s)" "$([[ -n $cp ]] && fixed "$cp" 4 || echo n/a)" "$(fixed "$wp" 4)" "$(ratio "$cp" "$wp")" \
    "target <= ceph: $v${how:+ ($how)}"
  [[ -n $cp ]] || row "  ceph p99 lower bound (derived)" "$(fixed "$lb" 4)" "" "$(ratio "$lb" "$wp")" "(avg - 0.01 max) / 0.99"
  [[ -z $cp ]] || row "  ceph p99 as probed (raw)" "$(fixed "${M[ceph.$mode.probe_p99]}" 4)" "" "" "probe avg $(fixed "${M[ceph.$mode.probe_avg]}" 4); above: rados avg x probe p99/avg"
  [[ $v == - ]] || verdicts+=("$v  $mode p99 latency <= ceph's (weft $(fixed "$wp" 4) s; ceph $([[ -n $cp ]] && echo "p99 $(fixed "$cp" 4)" || echo "p99 not printed by rados bench, >= $(fixed "$lb" 4), avg $(fixed "$ca" 4), max $(fixed "$cm" 4)") s)")
}

{
  echo
  echo "commands (each cluster started fresh; ceph first, stopped before weft starts):"
  echo "  $anchor/up.sh   # CDIR=$CDIR, 6 BlueStore-on-file OSDs + the anchor's CephFS pools, MDS and ceph-fuse"
  for c in "${commands[@]}"; do echo "  $c"; done
  [[ $DROP_CACHES != 1 ]] || echo "  (sync; echo 3 > /proc/sys/vm/drop_caches before every write and every seq)"
  echo "  (and before each, a wait until the disk stopped discarding and writing: $(awk -F'settled after ' 'NF > 1 { split($2, a, " "); s += a[1]; n++ } END { printf "%d waits, %d s in all", n, s }' "$OUT/settle.log" 2>/dev/null), $OUT/settle.log)"
  echo
  row "metric (median of $RUNS run(s))" ceph weft weft/ceph ""
  row "----------------------------------" "-----------" "-----------" "----------" ""
  bw_row write "write bandwidth (MiB/s)"
  bw_row seq "seq read bandwidth (MiB/s)"
  for mode in write seq; do
    row "$mode IOPS" "$(fixed "${M[ceph.$mode.iops]}" 1)" "$(fixed "${M[weft.$mode.iops]}" 1)" "$(ratio "${M[ceph.$mode.iops]}" "${M[weft.$mode.iops]}")" ""
  done
  for mode in write seq; do
    row "$mode avg latency (s)" "$(fixed "${M[ceph.$mode.avg]}" 4)" "$(fixed "${M[weft.$mode.avg]}" 4)" "$(ratio "${M[ceph.$mode.avg]}" "${M[weft.$mode.avg]}")" ""
    p99_rows "$mode"
    row "$mode max latency (s)" "$(fixed "${M[ceph.$mode.max]}" 4)" "$(fixed "${M[weft.$mode.max]}" 4)" "$(ratio "${M[ceph.$mode.max]}" "${M[weft.$mode.max]}")" ""
  done
  disk_c=$(disk_probe_median '^ceph') disk_w=$(disk_probe_median '^weft')
  if [[ -n $disk_c || -n $disk_w ]]; then
    row "disk read rate before seq (MiB/s)" "$(fixed "$disk_c" 1)" "$(fixed "$disk_w" 1)" "$(ratio "$disk_c" "$disk_w")" "fio, same shape (below)"
    row "seq read / disk read rate" "$(ratio "$disk_c" "${M[ceph.seq.bw]}")" "$(ratio "$disk_w" "${M[weft.seq.bw]}")" "" ""
  fi
  rv="-"
  if [[ -n $weft_rss ]]; then
    rv=$( [[ $weft_rss -le $RSS_TARGET_MIB ]] && echo PASS || echo MISS )
    verdicts+=("$rv  peak RSS per OSD <= $RSS_TARGET_MIB MiB (weft max $weft_rss MiB${ceph_rss:+, ceph max $ceph_rss MiB})")
  fi
  row "peak RSS per OSD, max (MiB)" "${ceph_rss:--}" "${weft_rss:--}" "$(ratio "$ceph_rss" "$weft_rss")" "target weft <= $RSS_TARGET_MIB MiB: $rv"
  echo
  echo "MiB/s = 2^20 bytes/s (rados bench's \"MB/sec\" is MiB/s; weft bench's MB/s is converted). Latency ratios"
  echo "below 1.00x are better for weft. rados bench prints no latency percentiles: bench/rados_latency.py"
  echo "runs the same workload through librados, timed per operation, and ceph's p99 is rados bench's"
  echo "average times the probe's p99/average (the probe runs slower than rados bench; its bandwidth:"
  echo "write ${M[ceph.write.probe_bw]:-?}, seq ${M[ceph.seq.probe_bw]:-?} MiB/s)."
  [[ -z $disk_c && -z $disk_w ]] || {
    echo "Disk read rate: fio with $THREADS psync readers of $BLOCK, O_DIRECT, ${DISK_PROBE_S:-8} s, on $THREADS files of"
    echo "${DISK_PROBE_MIB:-512} MiB written at the start, right before each seq run (after its cache drop): what the"
    echo "disk gave a plain reader at the seq runs' depth that minute. The probes, MiB/s:"
    echo "  $(awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }' "$OUT/disk_probe.txt")"
  }
  echo "Peak RSS is VmHWM of each OSD process at the end of its cluster's runs (startup included)."
  for s in ceph weft; do
    [[ -f $OUT/$s.rss.hwm ]] || continue
    echo "$s per-OSD VmHWM (MiB): $(awk -F'VmHWM_KiB=' '{ split($1, a, " "); printf "%s %.0f  ", a[1], $2 / 1024 }' "$OUT/$s.rss.hwm")"
    [[ ! -s $OUT/$s.rss.samples ]] || echo "$s max sampled VmRSS during the runs (MiB): $(awk '$2 > m { m = $2 } END { printf "%.0f", m / 1024 }' "$OUT/$s.rss.samples")"
  done
  echo
  print_verdicts
} | tee "$OUT/report.txt"

[[ ${#failures[@]} == 0 ]]
