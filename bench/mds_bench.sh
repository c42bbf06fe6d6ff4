#!/usr/bin/env bash
# bench/mds_bench.sh: the Weft MDS against CephFS (the anchor in
# ../shared/anchors/ceph/) on the shared metadata workload, mdbench.c from
# ../shared/anchors/bench/: THREADS threads x FILES files, create
# (O_CREAT|O_EXCL + close), stat, readdir, unlink, each thread in a private
# directory, then all in one shared directory.
#
# Weft first: a fresh 6-OSD cluster (scripts/quickstart.sh, which mounts its
# filesystem "weft" at $OUT/weft-mnt), mdbench.c on that mount: the verdicts.
# Then, for reference, pools benchmeta (size 3, 16 PGs) and benchdata (size 3,
# 32 PGs), filesystem benchfs and weft-mdbench (bench/mds_bench.cc), which
# sends the same operations straight to the MDS through the client library's
# gRPC API (no FUSE, no kernel). Weft is purged before Ceph starts (an idle
# cluster still uses CPU). Ceph: the anchor's up.sh
# (ceph-fuse at /mnt/cephanchor), mdbench.c compiled as fsbench.sh does, run in
# /mnt/cephanchor/rep3, then down.sh. Prints the commands, the machine, a table
# ceph | weft (mount) | weft/ceph and the verdict on each target:
#   creates/s >= 2x ceph, unlinks/s >= 2x ceph, stats/s >= 1x ceph
# (private and shared directories alike; readdir and MDS RSS are shown only).
#
#   bench/mds_bench.sh [--skip-ceph] [--skip-weft]
#
# Environment: FILES (5000, per thread), THREADS (4), RUNS (1; with RUNS > 1
#   every figure is the median over the runs), OUT (directory for the raw
#   outputs; default a new /tmp/weft-mdbench.XXXXXX, kept), MILLION (0; 1 adds
#   the memory test: the MDS restarted with mds_cache_memory_limit = 512 MiB,
#   MILLION_FILES (1000000) files created in one directory with
#   `weft-mdbench --create-only` over MILLION_THREADS (16) threads, MDS RSS
#   against 512 MiB + 25 %), ANCHORS (../shared/anchors).
# Needs root (apt-get, the Ceph anchor). See bench/README.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
anchors=$(cd "${ANCHORS:-$root/../shared/anchors}" && pwd)
anchor=$anchors/ceph
bin=${WEFT_BUILD_DIR:-$root/build}/bin

FILES=${FILES:-5000}
THREADS=${THREADS:-4}
RUNS=${RUNS:-1}
MILLION=${MILLION:-0}
MILLION_FILES=${MILLION_FILES:-1000000}
MILLION_THREADS=${MILLION_THREADS:-16}
FS=benchfs META_PGS=16 DATA_PGS=32
MDS_CACHE_MIB=512
MDS_RSS_TARGET_MIB=$(( MDS_CACHE_MIB * 125 / 100 ))  # the cache limit + 25 %
export CDIR=${CDIR:-/tmp/cephanchor}   # up.sh/down.sh read them too
export MNT=${MNT:-/mnt/cephanchor}

side_options "[--skip-ceph] [--skip-weft]" "$@"
need_positive_int FILES THREADS RUNS MILLION_FILES MILLION_THREADS
[[ $MILLION == 0 || $MILLION == 1 ]] || { echo "MILLION must be 0 or 1" >&2; exit 2; }
[[ $THREADS -le 1024 && $MILLION_THREADS -le 1024 ]] || { echo "THREADS must be <= 1024 (mdbench.c's limit)" >&2; exit 2; }

OUT=${OUT:-$(mktemp -d /tmp/weft-mdbench.XXXXXX)}
mkdir -p "$OUT"
ceph_conf=$CDIR/ceph.conf
W=("$bin/weft")

# The exit trap stops what the script started (lib.sh).
ceph_started=0 weft_dir="" sampler_pid="" failures=()
trap_exit

# ----------------------------------------------------------------- header --
started_at=$(date +%s)
if [[ $do_ceph == 1 ]]; then install_ceph; fi
{
  echo "# Weft MDS vs CephFS MDS, mdbench workload, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  machine_lines
  echo "weft: $(weft_version)"
  echo "ceph: $(ceph --version 2>/dev/null | awk '{ print $3, $5 }' || echo 'not installed')"
  echo "workload: $THREADS threads x $FILES files, private dirs then one shared dir, runs: $RUNS$([[ $MILLION == 1 ]] && echo "; memory test: $MILLION_FILES files in one dir by $MILLION_THREADS threads, mds_cache_memory_limit $MDS_CACHE_MIB MiB")"
  echo "raw outputs: $OUT"
} | tee "$OUT/header.txt"
commands=()
# Other clusters on the machine take CPU; the script stops only what it started.
note_foreign OSD/MDS ceph-osd weft-osd weft-mds ceph-mds

# ------------------------------------------------------------------- weft --
# weft_fs_ready [FILE]: waits until rank 0 of $FS answers as active; FILE
# gets its `weft fs status`.
weft_fs_ready() {
  weft_wait_clean 0 weft_fs_active "$FS" || die "filesystem $FS not active after 300 s"
  [[ -z ${1:-} ]] || "${W[@]}" fs status "$FS" >"$1" 2>&1 || true
}

# mdbench_runs SIDE DIR R: mdbench in DIR.private, then with all threads in
# DIR.shared; the outputs in $OUT/SIDE.{private,shared}.R.txt.
mdbench_runs() {
  local side=$1 d=$2 r=$3
  mkdir -p "$d.private" "$d.shared"
  run_tool "$side private (run $r)" "$OUT/$side.private.$r.txt" "$OUT/mdbench" "$d.private" "$THREADS" "$FILES"
  run_tool "$side shared (run $r)" "$OUT/$side.shared.$r.txt" "$OUT/mdbench" "$d.shared" "$THREADS" "$FILES" shared
  rmdir "$d.private" "$d.shared" 2>/dev/null || true
  local shown=${d/.$$.$r/.PID.R}  # the commands, once for all runs
  [[ $r != 1 ]] || commands+=("$OUT/mdbench $shown.private $THREADS $FILES" "$OUT/mdbench $shown.shared $THREADS $FILES shared")
}

weft_start() {
  wait_for_build
  # quickstart.sh's build.sh builds weft-mdbench too.
  weft_up /tmp/weft-mdbench-cluster.XXXXXX "$OUT/weft.up.log" "" WEFT_MNT="$weft_mnt" ||
    die "quickstart.sh failed"
  mountpoint -q "$weft_mnt" || die "$weft_mnt is not mounted after quickstart.sh"
  [[ -x $bin/weft-mdbench ]] || die "$bin/weft-mdbench missing after the build"
  local pgs0; pgs0=$(pg_total)
  {
    "${W[@]}" pool create benchmeta --size 3 --pg-num "$META_PGS" &&
    "${W[@]}" pool create benchdata --size 3 --pg-num "$DATA_PGS"
  } >"$OUT/weft.pool.log" 2>&1 || { cat "$OUT/weft.pool.log" >&2; die "creating the Weft pools failed"; }
  log "waiting for the Weft PGs to be active+clean"
  weft_wait_clean $(( pgs0 + META_PGS + DATA_PGS )) ||
    die "Weft PGs not active+clean after 300 s: $(grep -E 'pgs:|HEALTH' "$OUT/weft.status.txt" | tr '\n' ' ')"
  "${W[@]}" fs new "$FS" --metadata-pool benchmeta --data-pool benchdata >>"$OUT/weft.pool.log" 2>&1 \
    || { cat "$OUT/weft.pool.log" >&2; die "weft fs new failed"; }
  weft_fs_ready
  commands+=("WEFT_DIR=\$(mktemp -d) WEFT_OSDS=6 WEFT_MNT=$weft_mnt scripts/quickstart.sh")
  commands+=("weft pool create benchmeta --size 3 --pg-num $META_PGS; weft pool create benchdata --size 3 --pg-num $DATA_PGS")
  commands+=("weft fs new $FS --metadata-pool benchmeta --data-pool benchdata")
}

# The memory test: weft-mds restarted with the cache limit in weft.conf, then
# MILLION_FILES creates in one directory.
weft_million() {
  local pidfile=$weft_dir/run/mds.pid pid
  echo "mds_cache_memory_limit = $(( MDS_CACHE_MIB << 20 ))" >>"$WEFT_CONF"
  log "restarting weft-mds with mds_cache_memory_limit = $MDS_CACHE_MIB MiB"
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  # As quickstart.sh starts it (WEFT_CONF is exported).
  setsid "$bin/weft-mds" --name a >>"$weft_dir/log/mds.a.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  disown
  weft_fs_ready "$OUT/weft.million.fs_status.txt"
  run_tool "weft create-only $MILLION_FILES" "$OUT/weft.million.txt" \
    "$bin/weft-mdbench" -c "$WEFT_CONF" --fs "$FS" --threads "$MILLION_THREADS" --create-only "$MILLION_FILES" --dir million
  commands+=("echo 'mds_cache_memory_limit = $(( MDS_CACHE_MIB << 20 ))' >> weft.conf; restart weft-mds")
  commands+=("weft-mdbench -c weft.conf --fs $FS --threads $MILLION_THREADS --create-only $MILLION_FILES --dir million")
  million_hwm=$(peak_rss "$OUT/weft.million.rss" "$pidfile")
  "${W[@]}" fs status "$FS" >>"$OUT/weft.million.fs_status.txt" 2>&1 || true
}

weft_part() {
  weft_start
  local pidfile=$weft_dir/run/mds.pid
  start_sampler "$OUT/weft.rss.samples" "$pidfile"
  "${W[@]}" fs status >"$OUT/weft.fs_status.before.txt" 2>&1 || true
  weft_runs_from=$(date +%s.%N)
  for r in $(seq "$RUNS"); do
    mdbench_runs weft "$weft_mnt/mdbench.$$.$r" "$r"
    run_tool "weft gRPC private (run $r)" "$OUT/grpc.private.$r.txt" \
      "$bin/weft-mdbench" -c "$WEFT_CONF" --fs "$FS" --threads "$THREADS" --files "$FILES" --dir "mdbench.$r"
    run_tool "weft gRPC shared (run $r)" "$OUT/grpc.shared.$r.txt" \
      "$bin/weft-mdbench" -c "$WEFT_CONF" --fs "$FS" --threads "$THREADS" --files "$FILES" --shared --dir "mdbench.$r"
  done
  weft_runs_to=$(date +%s.%N)
  stop_sampler
  commands+=("weft-mdbench -c weft.conf --fs $FS --threads $THREADS --files $FILES --dir mdbench.R")
  commands+=("weft-mdbench -c weft.conf --fs $FS --threads $THREADS --files $FILES --shared --dir mdbench.R")
  weft_rss=$(peak_rss "$OUT/weft.rss" "$pidfile")
  "${W[@]}" fs status >"$OUT/weft.fs_status.txt" 2>&1 || true
  if [[ $MILLION == 1 ]]; then weft_million; fi
  weft_purge
}

# ------------------------------------------------------------------- ceph --
ceph_part() {
  anchor_clear 0 ||
    die "the Ceph anchor in $CDIR is running (not started by this script): stop it with $anchor/down.sh first"
  anchor_up "$OUT/ceph.up.log" || die "ceph up.sh failed"
  mountpoint -q "$MNT" || die "$MNT is not mounted after up.sh"
  ceph -c "$ceph_conf" -s >"$OUT/ceph.status.txt" 2>&1 || true
  local pidfile=$CDIR/run/mds.a.pid
  start_sampler "$OUT/ceph.rss.samples" "$pidfile"
  for r in $(seq "$RUNS"); do
    mdbench_runs ceph "$MNT/rep3/mdbench.$$.$r" "$r"
  done
  stop_sampler
  commands+=("$anchor/up.sh   # CDIR=$CDIR, 6 BlueStore-on-file OSDs, 1 MDS, ceph-fuse at $MNT")
  ceph_rss=$(peak_rss "$OUT/ceph.rss" "$pidfile")
  anchor_down
}

ceph_rss="" weft_rss="" million_hwm="" weft_mnt=$OUT/weft-mnt weft_runs_from="" weft_runs_to=""
# Both sides run the same mdbench binary.
command -v gcc >/dev/null || apt_install gcc
gcc -O2 -pthread "$anchors/bench/mdbench.c" -o "$OUT/mdbench" || die "compiling mdbench.c failed"
commands+=("gcc -O2 -pthread $anchors/bench/mdbench.c -o $OUT/mdbench")
# (plain `if`s: errexit is off inside a function called from an && list)
if [[ $do_weft == 1 ]]; then weft_part; fi
if [[ $do_ceph == 1 ]]; then ceph_part; fi

# ----------------------------------------------------------------- report --
# metric SYS MODE PHASE: median over the runs of PHASE's rate, "" if absent.
# create/stat/unlink: ops/s as printed. readdir: entries/s, i.e. the printed
# directories/s times the entries of one directory (FILES private, THREADS x
# FILES shared); the printed rate, unlike the seconds (%.3f), keeps its
# precision when a listing takes a millisecond.
metric() {
  local sys=$1 mode=$2 phase=$3 per_dir=$FILES
  [[ $mode == shared ]] && per_dir=$(( THREADS * FILES ))
  median_runs "$OUT/$sys.$mode" phase_rate "$phase" "$per_dir"
}
phase_rate() {  # PHASE PER_DIR FILE
  awk -v p="$1" -v n="$2" '
    $1 == p && NF == 4 { if (p == "readdir") printf "%.1f", n * $4; else print $4; exit }' "$3"
}

verdicts=()
row() { printf '%-36s %11s %11s %10s  %s\n' "$@"; }
rate_row() {  # mode phase label target_x (empty: no target)
  local mode=$1 phase=$2 label=$3 x=$4
  local c w v="-" note=""
  c=$(metric ceph "$mode" "$phase"); w=$(metric weft "$mode" "$phase")
  if [[ -n $x ]]; then
    if [[ -n $c && -n $w ]]; then
      v=$(awk -v c="$c" -v w="$w" -v x="$x" 'BEGIN { print (w >= x * c) ? "PASS" : "MISS" }')
      verdicts+=("$v  $mode $phase/s >= ${x}x ceph (weft $(fixed "$w"), ceph $(fixed "$c"): $(ratio "$c" "$w"))")
    fi
    note="target >= $(printf '%.2f' "$x")x: $v"
  fi
  row "$label" "$(fixed "$c")" "$(fixed "$w")" "$(ratio "$c" "$w")" "$note"
}

{
  echo
  echo "commands (Weft first, purged before Ceph starts; R = run number):"
  for c in "${commands[@]}"; do echo "  $c"; done
  echo
  echo "Both through their FUSE mounts and the kernel (mdbench.c: open+close, stat, readdir, unlink):"
  echo "weft-fuse on the quickstart's filesystem, ceph-fuse on $MNT/rep3."
  echo
  row "metric (median of $RUNS run(s))" ceph weft weft/ceph ""
  row "------------------------------------" "-----------" "-----------" "----------" ""
  for mode in private shared; do
    rate_row "$mode" create "$mode create (ops/s)" 2
    rate_row "$mode" stat "$mode stat (ops/s)" 1
    rate_row "$mode" readdir "$mode readdir (entries/s)" ""
    rate_row "$mode" unlink "$mode unlink (ops/s)" 2
  done
  echo
  echo "for reference, Weft through its gRPC MDS API (weft-mdbench: one MDS request per create, stat"
  echo "and unlink, no FUSE or kernel in the way; filesystem $FS):"
  for mode in private shared; do
    for phase in create stat unlink; do
      row "$mode $phase (ops/s)" "" "$(fixed "$(metric grpc "$mode" "$phase")")" "" "gRPC"
    done
  done
  echo
  row "MDS peak RSS (MiB)" "${ceph_rss:--}" "${weft_rss:--}" "$(ratio "$ceph_rss" "$weft_rss")" "VmHWM of ceph-mds / weft-mds"
  if [[ $MILLION == 1 && -f $OUT/weft.million.txt ]]; then
    local_scale=""
    [[ $MILLION_FILES == 1000000 ]] || local_scale=" (reduced: MILLION_FILES=$MILLION_FILES)"
    mrate=$(awk '$1 == "create" && NF == 4 { print $4; exit }' "$OUT/weft.million.txt")
    mafter=$(awk '$1 == "mds_rss_mib" { print $2; exit }' "$OUT/weft.million.txt")
    mv="-"
    if [[ -n $million_hwm ]]; then
      mv=$( [[ $million_hwm -le $MDS_RSS_TARGET_MIB ]] && echo PASS || echo MISS )
      verdicts+=("$mv  MDS peak RSS over $MILLION_FILES creates in one dir <= $MDS_RSS_TARGET_MIB MiB ($MDS_CACHE_MIB MiB cache limit + 25 %): $million_hwm MiB$local_scale")
    fi
    echo
    echo "memory test: $MILLION_FILES files in one directory by $MILLION_THREADS threads, mds_cache_memory_limit = $MDS_CACHE_MIB MiB$local_scale"
    row "create (ops/s)" "" "$(fixed "$mrate")" "" ""
    row "MDS RSS after, FsStatus (MiB)" "" "${mafter:--}" "" ""
    row "MDS peak RSS, VmHWM (MiB)" "" "${million_hwm:--}" "" "target <= $MDS_RSS_TARGET_MIB MiB: $mv"
    grep '^mds_' "$OUT/weft.million.txt" | sed 's/^/  weft-mdbench: /'
  fi
  # The ranks' locks over the Weft runs (the mount's filesystem for mdbench,
  # $FS for weft-mdbench, one after the other): `weft fs status` before and
  # after. How much a finer lock could win: the share of the requests' time
  # spent waiting for it, and how busy it was.
  if [[ -f $OUT/weft.fs_status.before.txt && -f $OUT/weft.fs_status.txt ]]; then
    echo
    echo "the rank locks over the Weft runs (weft fs status before and after; docs/ARCHITECTURE.md, \"One lock per rank\"):"
    awk -v wall="$(awk -v a="$weft_runs_from" -v b="$weft_runs_to" 'BEGIN { print b - a }')" '
      /requests: / {
        gsub(/,/, ""); s = (FILENAME ~ /before/) ? -1 : 1
        n += s * $2; t += s * $6; w += s * $11; h += s * $14
      }
      END {
        if (n <= 0 || t <= 0 || wall <= 0) { print "  (no requests counted)"; exit }
        printf "  %d requests, %.0f us each in the rank, %.1f %% of it waiting for the rank lock;\n", n, t * 1000 / n, 100 * w / t
        printf "  the lock held %.1f s of the runs'"'"' %.1f s (%.1f %%), %.1f us per request\n", h / 1000, wall, 100 * h / 1000 / wall, h * 1000 / n
      }' "$OUT/weft.fs_status.before.txt" "$OUT/weft.fs_status.txt"
  fi
  echo
  echo "readdir entries/s = mdbench's directories/s x the entries of a directory ($FILES private, $(( THREADS * FILES )) shared);"
  echo "private: $THREADS directories listed in parallel, shared: one listing by one thread."
  echo "MDS peak RSS is the VmHWM of the MDS process at the end of the runs (startup included);"
  echo "weft-mds also runs the cluster's map manager."
  echo
  print_verdicts
} | tee "$OUT/report.txt"

[[ ${#failures[@]} == 0 ]]
