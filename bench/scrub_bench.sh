#!/usr/bin/env bash
# bench/scrub_bench.sh: deep scrub's rate and what it costs clients, on a
# quickstart cluster (6 OSDs on this host).
#
# A 3x pool `benchscrub` (SCRUB_PG_NUM PGs, failure domain osd) is filled
# with FILL_SECONDS of `weft bench write` (4 MiB objects, kept). Then, for
# RUNS rounds, alternating: client I/O alone, and client I/O while `weft osd
# deep-scrub all --wait` runs. Client I/O is two `weft bench` at once for
# IO_SECONDS: random 4 MiB reads of the kept objects (`rand`, 4 in flight)
# and 64 KiB writes to a second pool (`write`, 4 in flight). Prints the
# deep scrub's rate (bytes the OSDs read for it, weft_osd_scrubbed_bytes_total,
# per second and per OSD) and each client p99 idle and under scrub, with
# the ratio (the issue's target: p99 under scrub <= 1.5x idle). Medians
# over the runs.
#
#   bench/scrub_bench.sh
#
# Environment: FILL_SECONDS (20), IO_SECONDS (20), RUNS (3), SCRUB_PG_NUM
#   (64), OUT (default a new /tmp/weft-scrubbench.XXXXXX, kept).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bin=${WEFT_BUILD_DIR:-$root/build}/bin

FILL_SECONDS=${FILL_SECONDS:-20}
IO_SECONDS=${IO_SECONDS:-20}
RUNS=${RUNS:-3}
SCRUB_PG_NUM=${SCRUB_PG_NUM:-64}
[[ ${1:-} != -h && ${1:-} != --help ]] || { print_help; exit 0; }
need_positive_int FILL_SECONDS IO_SECONDS RUNS SCRUB_PG_NUM
OUT=${OUT:-$(mktemp -d /tmp/weft-scrubbench.XXXXXX)}
mkdir -p "$OUT"
W=("$bin/weft")
weft_dir="" ceph_started=0 sampler_pid=""
failures=()
trap_exit

# The metrics port the quickstart gives osd.N: osd_metrics_port + N.
scrubbed_bytes() {
  local base total=0 n v
  base=$(sed -n 's/^osd_metrics_port *= *//p' "$WEFT_CONF")
  [[ -n $base ]] || die "the quickstart config has no osd_metrics_port"
  for n in $(seq 0 5); do
    v=$(curl -s "http://127.0.0.1:$((base + n))/metrics" |
        awk '/^weft_osd_scrubbed_bytes_total/ { print $2 }')
    total=$(calc "$total + ${v:-0}")
  done
  echo "$total"
}

# client_io TAG: the two benches at once; their outputs in $OUT.
client_io() {
  "${W[@]}" bench benchscrub rand --seconds "$IO_SECONDS" --threads 4 >"$OUT/$1.rand.txt" 2>&1 &
  local reader=$!
  "${W[@]}" bench benchscrubw write --seconds "$IO_SECONDS" --threads 4 --block-size 65536 \
    >"$OUT/$1.write.txt" 2>&1
  wait "$reader"
  "${W[@]}" bench benchscrubw cleanup >/dev/null 2>&1 || true
}

wait_for_build
weft_up /tmp/weft-scrubbench-cluster.XXXXXX "$OUT/weft.up.log" "" WEFT_MNT="$OUT/weft-mnt" ||
  die "quickstart.sh failed"
pgs0=$(pg_total)
"${W[@]}" pool create benchscrub --size 3 --min-size 2 --pg-num "$SCRUB_PG_NUM" \
  --failure-domain osd >"$OUT/pool.log" 2>&1 || die "pool create: $(cat "$OUT/pool.log")"
"${W[@]}" pool create benchscrubw --size 3 --min-size 2 --pg-num 32 --failure-domain osd \
  >>"$OUT/pool.log" 2>&1 || die "pool create: $(cat "$OUT/pool.log")"
weft_wait_clean $(( pgs0 + SCRUB_PG_NUM + 32 )) || die "PGs not active+clean after 300 s"
log "filling benchscrub for $FILL_SECONDS s"
run_tool "fill" "$OUT/fill.txt" "${W[@]}" bench benchscrub write --seconds "$FILL_SECONDS" \
  --threads 16 --block-size 4194304

declare -a rates idle_r idle_w busy_r busy_w
for r in $(seq "$RUNS"); do
  log "run $r: client I/O alone"
  client_io "idle.$r"
  log "run $r: client I/O during a deep scrub of every PG"
  before=$(scrubbed_bytes)
  t0=$(date +%s.%N)
  "${W[@]}" osd deep-scrub all --wait >"$OUT/scrub.$r.txt" 2>&1 &
  scrubber=$!
  client_io "busy.$r"
  wait "$scrubber" || die "deep scrub failed: $(tail -3 "$OUT/scrub.$r.txt")"
  t1=$(date +%s.%N)
  after=$(scrubbed_bytes)
  rates+=("$(calc "($after - $before) / ($t1 - $t0) / 6 / 1048576")")
  idle_r+=("$(value "$OUT/idle.$r.rand.txt" "p99 Latency(s):")")
  idle_w+=("$(value "$OUT/idle.$r.write.txt" "p99 Latency(s):")")
  busy_r+=("$(value "$OUT/busy.$r.rand.txt" "p99 Latency(s):")")
  busy_w+=("$(value "$OUT/busy.$r.write.txt" "p99 Latency(s):")")
  log "run $r: scrub $(fixed "${rates[-1]}") MiB/s per OSD over $(calc "$t1 - $t0") s"
done

med() { printf '%s\n' "$@" | median; }
rate=$(med "${rates[@]}")
ir=$(med "${idle_r[@]}") iw=$(med "${idle_w[@]}") br=$(med "${busy_r[@]}") bw=$(med "${busy_w[@]}")
{
  echo "# scrub_bench $(date -u +%FT%TZ), weft $(weft_version), $RUNS runs (medians)"
  machine_lines
  echo "deep scrub rate per OSD (MiB/s): $(fixed "$rate")"
  printf '%-28s %10s %10s %8s\n' "client p99 (ms)" idle scrub ratio
  printf '%-28s %10s %10s %8s\n' "rand read 4 MiB, 4 in flight" "$(fixed "$(calc "$ir*1000")")" \
    "$(fixed "$(calc "$br*1000")")" "$(ratio "$ir" "$br")"
  printf '%-28s %10s %10s %8s\n' "write 64 KiB, 4 in flight" "$(fixed "$(calc "$iw*1000")")" \
    "$(fixed "$(calc "$bw*1000")")" "$(ratio "$iw" "$bw")"
  echo "target: p99 under scrub <= 1.5x idle; raw outputs in $OUT"
} | tee "$OUT/report.txt"
