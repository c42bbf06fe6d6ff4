#!/usr/bin/env bash
# bench/storm_bench.sh: a metadata storm against an MDS with a small cache,
# Weft against CephFS (the anchor in ../shared/anchors/ceph/), one after the
# other on this machine. MOUNTS mounts of one filesystem (as MOUNTS client
# hosts would have) each create their own tree of DIRS x FILES empty files
# (bench/storm.c create), then, WALKS times, the kernels' caches are dropped
# and every mount walks its tree at once (storm.c walk: readdir and an lstat
# of every name, as `find -ls` does). Both MDSs run with
# mds_cache_memory_limit = LIMIT_MIB. Every second the MDS's resident set
# (and, for Weft, its cache estimate, caps and leases alive, and the caps
# granted and recalled so far) goes to SIDE.samples.tsv; the report gives
# the peak RSS against the limit, the rates and the client errors, and
# storm.png plots RSS over time. Target (issue 46): Weft's MDS peak RSS <=
# 1.5 x the limit over the whole run, no client error.
#
#   bench/storm_bench.sh [--skip-ceph] [--skip-weft]
#
# Environment: MOUNTS (4), DIRS (250), FILES (1000 per directory: 4 x 250k
#   = 1M files in all by default), WALKS (2), LIMIT_MIB (256), OUT (raw
#   outputs; default a new /tmp/weft-storm.XXXXXX, kept), ANCHORS
#   (../shared/anchors). Needs root (apt-get, FUSE mounts, the anchor).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
anchors=$(cd "${ANCHORS:-$root/../shared/anchors}" && pwd)
anchor=$anchors/ceph
bin=${WEFT_BUILD_DIR:-$root/build}/bin

MOUNTS=${MOUNTS:-4} DIRS=${DIRS:-250} FILES=${FILES:-1000} WALKS=${WALKS:-2}
LIMIT_MIB=${LIMIT_MIB:-256}
export CDIR=${CDIR:-/tmp/cephanchor}   # up.sh/down.sh read them too
export MNT=${MNT:-/mnt/cephanchor}

side_options "[--skip-ceph] [--skip-weft]" "$@"
need_positive_int MOUNTS DIRS FILES WALKS LIMIT_MIB
limit=$((LIMIT_MIB * 1048576))

OUT=${OUT:-$(mktemp -d /tmp/weft-storm.XXXXXX)}
mkdir -p "$OUT"
ceph_conf=$CDIR/ceph.conf

# The extra mounts go before the clusters (the exit trap, lib.sh).
extra_mounts=()
unmount_extra() {
  local m
  for m in "${extra_mounts[@]}"; do
    if mountpoint -q "$m" 2>/dev/null; then fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true; fi
  done
  extra_mounts=()
}
stop_storm_sampler() {
  [[ -z ${storm_sampler:-} ]] || { kill "$storm_sampler" 2>/dev/null || true; wait "$storm_sampler" 2>/dev/null || true; }
  storm_sampler=""
}
ceph_started=0 weft_dir="" sampler_pid="" storm_sampler="" failures=() commands=()
trap_exit stop_storm_sampler unmount_extra

started_at=$(date +%s)
if [[ $do_ceph == 1 ]]; then install_ceph; fi
command -v gcc >/dev/null || apt_install gcc
need_pkg curl curl
gcc -O2 -o "$OUT/storm" "$root/bench/storm.c" || die "compiling storm.c failed"
commands+=("gcc -O2 -o $OUT/storm bench/storm.c")
{
  echo "# Metadata storm, Weft vs CephFS, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  machine_lines
  echo "weft: $(weft_version)"
  echo "ceph: $(ceph --version 2>/dev/null | awk '{ print $3, $5 }' || echo 'not installed')"
  echo "workload: $MOUNTS mounts x $DIRS dirs x $FILES files, $WALKS walk(s), mds_cache_memory_limit $LIMIT_MIB MiB"
  echo "raw outputs: $OUT"
} | tee "$OUT/header.txt"
note_foreign OSD/MDS ceph-osd weft-osd weft-mds ceph-mds

# sample SIDE PIDFILE [METRICS_URL]: every second, a line of SIDE.samples.tsv:
# seconds since the side started, the MDS's VmRSS in KiB, and with a URL the
# gauges and counters below from its metrics ("-" where absent).
storm_metrics=(weft_mds_cache_bytes weft_mds_cached_inodes weft_mds_attr_caps weft_mds_dir_leases
               weft_mds_caps_granted weft_mds_caps_recalled weft_mds_caps_released weft_mds_caps_bytes)
sample() {
  local side=$1 pidfile=$2 url=${3:-} t0 pid
  t0=$(date +%s.%N)
  echo "t_s rss_kib ${storm_metrics[*]}" >"$OUT/$side.samples.tsv"
  (
    while :; do
      pid=$(cat "$pidfile" 2>/dev/null || true)
      rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
      m=""
      if [[ -n $url ]]; then
        m=$(curl -s --max-time 1 "$url" 2>/dev/null | awk -v names="${storm_metrics[*]}" '
          BEGIN { n = split(names, k, " ") }
          { name = $1; sub(/\{.*/, "", name); v[name] += $NF }
          END { for (i = 1; i <= n; i++) printf " %s", (k[i] in v) ? v[k[i]] : "-" }')
      fi
      echo "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }') ${rss:--}$m"
      sleep 1
    done
  ) >>"$OUT/$side.samples.tsv" &
  storm_sampler=$!
  echo "0 start" >"$OUT/$side.phases"
  side_t0=$t0
}
phase() {  # SIDE NAME: marks the start of a phase in SIDE.phases
  echo "$(awk -v a="$(date +%s.%N)" -v b="$side_t0" 'BEGIN { printf "%.1f", a - b }') $2" >>"$OUT/$1.phases"
}

# storm SIDE MOUNT...: the create and the walks, one process per mount, each
# in its own tree; outputs SIDE.create.I.txt and SIDE.walkW.I.txt.
storm() {
  local side=$1 i w pids=(); shift
  local mounts=("$@")
  phase "$side" create
  log "$side: $MOUNTS mounts create $DIRS x $FILES files each"
  for i in "${!mounts[@]}"; do
    "$OUT/storm" create "${mounts[$i]}/storm.$i" "$DIRS" "$FILES" >"$OUT/$side.create.$i.txt" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || failures+=("$side create on mount $i: $(tail -1 "$OUT/$side.create.$i.txt")"); done
  for w in $(seq "$WALKS"); do
    sync; echo 3 >/proc/sys/vm/drop_caches
    phase "$side" "walk$w"
    log "$side: walk $w of $WALKS through every mount"
    pids=()
    for i in "${!mounts[@]}"; do
      "$OUT/storm" walk "${mounts[$i]}/storm.$i" >"$OUT/$side.walk$w.$i.txt" 2>&1 &
      pids+=($!)
    done
    for i in "${!pids[@]}"; do wait "${pids[$i]}" || failures+=("$side walk $w on mount $i: $(tail -1 "$OUT/$side.walk$w.$i.txt")"); done
  done
  phase "$side" end
}

weft_part() {
  local m i mnts=("$OUT/weft-mnt") port
  wait_for_build
  weft_up /tmp/weft-storm-cluster.XXXXXX "$OUT/weft.up.log" "" WEFT_MNT="$OUT/weft-mnt" ||
    die "quickstart.sh failed"
  # The limit needs a restart: the MDS reads its configuration once.
  echo "mds_cache_memory_limit = $limit" >>"$WEFT_CONF"
  WEFT_DIR=$weft_dir WEFT_MNT=$OUT/weft-mnt "$root/scripts/quickstart.sh" down >>"$OUT/weft.up.log" 2>&1
  WEFT_DIR=$weft_dir WEFT_MNT=$OUT/weft-mnt "$root/scripts/quickstart.sh" >>"$OUT/weft.up.log" 2>&1 ||
    die "quickstart.sh (again, with the cache limit) failed"
  mountpoint -q "$OUT/weft-mnt" || die "$OUT/weft-mnt is not mounted after quickstart.sh"
  for i in $(seq 2 "$MOUNTS"); do
    m=$OUT/weft-mnt$i; mkdir -p "$m"
    "$bin/weft-fuse" "$m" -o "conf=$WEFT_CONF,fs=weft,log=$OUT/weft-fuse$i.log" || die "weft-fuse $m failed"
    extra_mounts+=("$m"); mnts+=("$m")
    wait_mounted "$m" || die "$m is not mounted"
  done
  commands+=("WEFT_DIR=\$(mktemp -d) WEFT_MNT=$OUT/weft-mnt scripts/quickstart.sh; echo 'mds_cache_memory_limit = $limit' >> \$WEFT_DIR/weft.conf; quickstart.sh down; quickstart.sh; weft-fuse $OUT/weft-mntI -o conf=\$WEFT_DIR/weft.conf,fs=weft (I = 2..$MOUNTS)")
  port=$(sed -n 's/^mds_metrics_port *= *//p' "$WEFT_CONF")
  sample weft "$weft_dir/run/mds.pid" "http://127.0.0.1:$port/metrics"
  storm weft "${mnts[@]}"
  stop_storm_sampler
  weft_peak=$(awk '/^VmHWM:/ { print $2 }' "/proc/$(cat "$weft_dir/run/mds.pid")/status" 2>/dev/null || true)
  "$bin/weft" fs status weft >"$OUT/weft.fs_status.txt" 2>&1 || true
  "$bin/weft" client ls >"$OUT/weft.client_ls.txt" 2>&1 || true
  unmount_extra
  weft_purge
}

ceph_part() {
  local m i mnts=("$MNT/rep3") pidfile=$CDIR/run/mds.a.pid
  anchor_clear 0 ||
    die "the Ceph anchor in $CDIR is running (not started by this script): stop it with $anchor/down.sh first"
  anchor_up "$OUT/ceph.up.log" || die "ceph up.sh failed"
  mountpoint -q "$MNT" || die "$MNT is not mounted after up.sh"
  ceph -c "$ceph_conf" config set mds mds_cache_memory_limit "$limit" >>"$OUT/ceph.up.log" 2>&1 ||
    die "ceph config set mds mds_cache_memory_limit failed"
  for i in $(seq 2 "$MOUNTS"); do
    m=$OUT/ceph-mnt$i
    mount_ceph_fuse "$m" "ceph-fuse$i" || die "ceph-fuse $m failed"
    extra_mounts+=("$m"); mnts+=("$m/rep3")
  done
  commands+=("$anchor/up.sh; ceph config set mds mds_cache_memory_limit $limit; ceph-fuse -c $ceph_conf --id admin --pid-file ... --admin-socket ... $OUT/ceph-mntI (I = 2..$MOUNTS)")
  sample ceph "$pidfile"
  storm ceph "${mnts[@]}"
  stop_storm_sampler
  ceph_peak=$(awk '/^VmHWM:/ { print $2 }' "/proc/$(cat "$pidfile")/status" 2>/dev/null || true)
  unmount_extra
  anchor_down
}

weft_peak="" ceph_peak=""
if [[ $do_weft == 1 ]]; then weft_part; fi
if [[ $do_ceph == 1 ]]; then ceph_part; fi
commands+=("$OUT/storm create MOUNT/storm.I $DIRS $FILES (each mount at once); then $WALKS x: echo 3 > /proc/sys/vm/drop_caches; $OUT/storm walk MOUNT/storm.I (each mount at once)")

# ----------------------------------------------------------------- report --
# rate SIDE PHASE: the sum over the mounts of their entries/s in PHASE.
rate() { { cat "$OUT/$1.$2".*.txt 2>/dev/null || true; } | awk '/entries/ { s += $(NF) + 0; n++ } END { if (n) printf "%.0f", s }'; }
errs() { { cat "$OUT/$1".create.*.txt "$OUT/$1".walk*.txt 2>/dev/null || true; } | awk '/entries/ { s += $4; n++ } END { if (n) print s }'; }
# peak SIDE: VmHWM in MiB, else the highest sample.
peak() {
  local v=${1}_peak
  if [[ -n ${!v} ]]; then awk -v k="${!v}" 'BEGIN { printf "%.0f", k / 1024 }'
  elif [[ -f $OUT/$1.samples.tsv ]]; then awk 'NR > 1 && $2 ~ /^[0-9]+$/ && $2 > m { m = $2 } END { if (m) printf "%.0f", m / 1024 }' "$OUT/$1.samples.tsv"
  fi
}
row() { printf '%-34s %12s %12s %12s\n' "$@"; }
verdicts=()
wp=$(peak weft) cp=$(peak ceph)
{
  echo
  echo "commands (Weft first, purged before Ceph starts):"
  for c in "${commands[@]}"; do echo "  $c"; done
  echo
  echo "ratio: ceph / weft for RSS (above 1: Weft smaller), weft / ceph for rates"
  row "figure" "ceph" "weft" "ratio"
  row "----------------------------------" "------------" "------------" "------------"
  row "MDS peak RSS, MiB (limit $LIMIT_MIB)" "${cp:--}" "${wp:--}" "$(ratio "$wp" "$cp")"
  row "peak RSS / limit" "$(fixed "$(calc "${cp:-0} / $LIMIT_MIB")" 2)" "$(fixed "$(calc "${wp:-0} / $LIMIT_MIB")" 2)" ""
  row "create, files/s (all mounts)" "$(rate ceph create)" "$(rate weft create)" "$(ratio "$(rate ceph create)" "$(rate weft create)")"
  for w in $(seq "$WALKS"); do
    row "walk $w, entries/s (all mounts)" "$(rate ceph "walk$w")" "$(rate weft "walk$w")" "$(ratio "$(rate ceph "walk$w")" "$(rate weft "walk$w")")"
  done
  row "client errors" "$(errs ceph)" "$(errs weft)" ""
  if [[ -f $OUT/weft.samples.tsv ]]; then
    echo
    step=$(( $(wc -l <"$OUT/weft.samples.tsv") / 20 + 1 ))
    echo "weft over the run (every ${step}th sample; all in weft.samples.tsv):"
    awk -v step="$step" 'NR == 1 { for (i = 1; i <= NF; i++) { $i = substr($i, 1, 1) == "w" ? substr($i, 10) : $i } }
         NR == 1 || NR % step == 2 { for (i = 1; i <= NF; i++) printf "%-14s", $i; print "" }' "$OUT/weft.samples.tsv"
  fi
  if [[ -f $OUT/weft.samples.tsv ]]; then
    # Caps: the most alive at once, and the counters at the end.
    read -r peak_caps peak_caps_mib granted recalled released < <(awk '
      NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      { a = $col["weft_mds_attr_caps"] + $col["weft_mds_dir_leases"]; if (a > pc) pc = a
        b = $col["weft_mds_caps_bytes"]; if (b > pb) pb = b
        g = $col["weft_mds_caps_granted"]; r = $col["weft_mds_caps_recalled"]; d = $col["weft_mds_caps_released"] }
      END { printf "%d %.1f %d %d %d\n", pc, pb / 1048576, g, r, d }' "$OUT/weft.samples.tsv")
    echo
    echo "weft caps: at most $peak_caps alive at once ($peak_caps_mib MiB as estimated); granted $granted, recalled $recalled, given back $released"
    if [[ $recalled -gt 0 ]]; then
      v=$(awk -v r="$recalled" -v d="$released" 'BEGIN { print (d >= 0.9 * r) ? "PASS" : "MISS" }')
      verdicts+=("$v  recalls answered: $released of $recalled caps asked back were given back")
    fi
  fi
  if [[ -n $wp ]]; then
    v=$(awk -v p="$wp" -v l="$LIMIT_MIB" 'BEGIN { print (p <= 1.5 * l) ? "PASS" : "MISS" }')
    verdicts+=("$v  MDS peak RSS <= 1.5 x mds_cache_memory_limit: weft $wp MiB against $LIMIT_MIB MiB (ceph ${cp:--} MiB)")
    e=$(errs weft)
    v=$( [[ ${e:-1} == 0 ]] && echo PASS || echo MISS )
    verdicts+=("$v  no client error: weft ${e:--} (ceph $(errs ceph))")
  fi
  echo
  print_verdicts
} | tee "$OUT/report.txt"

need_pkg python3:matplotlib python3-matplotlib
if "$plot_py" "$root/bench/storm_plot.py" "$OUT" "$LIMIT_MIB" "$OUT/storm.png" >"$OUT/plot.log" 2>&1; then
  log "plot: $OUT/storm.png"
else
  failures+=("storm_plot.py failed (see $OUT/plot.log)"); cat "$OUT/plot.log" >&2
fi

[[ ${#failures[@]} == 0 ]]
