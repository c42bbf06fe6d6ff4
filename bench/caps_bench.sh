#!/usr/bin/env bash
# bench/caps_bench.sh: coherence across two mounts of one filesystem, Weft
# against CephFS (the anchor in ../shared/anchors/ceph/), on this machine,
# one after the other: bench/coherence.c through mount A and mount B (two
# clients, as two hosts would have), N rounds of each phase:
#   attr    B chmods a file whose attributes A holds (the revoke of A's
#           caps), then A stats it and must see the new mode
#   name    A finds a name absent, B creates it, A must find it
#   data    A keeps a file open for reading, B writes 4 KiB, A must read it
#   append  A and B append 64-byte records in turn, O_APPEND; none lost
# Every call is timed: p50, p99 and max per kind, and the stale answers
# ("violations", 0 is the only right figure). Weft: a fresh quickstart
# cluster (scripts/quickstart.sh, mounted at $OUT/weft-mnt) and a second
# weft-fuse at $OUT/weft-mnt2. Ceph: the anchor's up.sh (ceph-fuse at $MNT)
# and a second ceph-fuse at $OUT/ceph-mnt2, in rep3/. Target (issue 46):
# Weft's revoke latency (attr B chmod) p99 <= 20 ms, and no violations.
#
#   bench/caps_bench.sh [--skip-ceph] [--skip-weft]
#
# Environment: N (500, rounds per phase), RUNS (1; with RUNS > 1 every
#   figure is the median over the runs), OUT (raw outputs; default a new
#   /tmp/weft-capsbench.XXXXXX, kept), ANCHORS (../shared/anchors).
# Needs root (apt-get, FUSE mounts, the Ceph anchor). See bench/README.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
anchors=$(cd "${ANCHORS:-$root/../shared/anchors}" && pwd)
anchor=$anchors/ceph
bin=${WEFT_BUILD_DIR:-$root/build}/bin

N=${N:-500}
RUNS=${RUNS:-1}
export CDIR=${CDIR:-/tmp/cephanchor}   # up.sh/down.sh read them too
export MNT=${MNT:-/mnt/cephanchor}

side_options "[--skip-ceph] [--skip-weft]" "$@"
need_positive_int N RUNS

OUT=${OUT:-$(mktemp -d /tmp/weft-capsbench.XXXXXX)}
mkdir -p "$OUT"
ceph_conf=$CDIR/ceph.conf
weft_mnt=$OUT/weft-mnt weft_mnt2=$OUT/weft-mnt2 ceph_mnt2=$OUT/ceph-mnt2

# The second mounts go before the clusters (the exit trap, lib.sh).
unmount_second() {
  local m
  for m in "$weft_mnt2" "$ceph_mnt2"; do
    if mountpoint -q "$m" 2>/dev/null; then fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true; fi
  done
}
ceph_started=0 weft_dir="" sampler_pid="" failures=() commands=()
trap_exit unmount_second

started_at=$(date +%s)
if [[ $do_ceph == 1 ]]; then install_ceph; fi
command -v gcc >/dev/null || apt_install gcc
gcc -O2 -o "$OUT/coherence" "$root/bench/coherence.c" || die "compiling coherence.c failed"
commands+=("gcc -O2 -o $OUT/coherence bench/coherence.c")
{
  echo "# Coherence across two mounts, Weft vs CephFS, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  machine_lines
  echo "weft: $(weft_version)"
  echo "ceph: $(ceph --version 2>/dev/null | awk '{ print $3, $5 }' || echo 'not installed')"
  echo "workload: bench/coherence.c A B $N, runs: $RUNS"
  echo "raw outputs: $OUT"
} | tee "$OUT/header.txt"
note_foreign OSD/MDS ceph-osd weft-osd weft-mds ceph-mds

weft_part() {
  wait_for_build
  weft_up /tmp/weft-capsbench-cluster.XXXXXX "$OUT/weft.up.log" "" WEFT_MNT="$weft_mnt" ||
    die "quickstart.sh failed"
  mountpoint -q "$weft_mnt" || die "$weft_mnt is not mounted after quickstart.sh"
  mkdir -p "$weft_mnt2"
  "$bin/weft-fuse" "$weft_mnt2" -o "conf=$WEFT_CONF,fs=weft,log=$OUT/weft-fuse2.log" ||
    die "the second weft-fuse mount failed"
  wait_mounted "$weft_mnt2" || die "$weft_mnt2 is not mounted"
  commands+=("WEFT_DIR=\$(mktemp -d) WEFT_MNT=$weft_mnt scripts/quickstart.sh; weft-fuse $weft_mnt2 -o conf=\$WEFT_DIR/weft.conf,fs=weft")
  for r in $(seq "$RUNS"); do
    mkdir "$weft_mnt/coh.$r"
    run_tool "weft (run $r)" "$OUT/weft.$r.txt" "$OUT/coherence" "$weft_mnt/coh.$r" "$weft_mnt2/coh.$r" "$N"
  done
  commands+=("$OUT/coherence $weft_mnt/coh.R $weft_mnt2/coh.R $N")
  "$bin/weft" fs status weft >"$OUT/weft.fs_status.txt" 2>&1 || true
  fusermount3 -u "$weft_mnt2" || true
  weft_purge
}

ceph_part() {
  anchor_clear 0 ||
    die "the Ceph anchor in $CDIR is running (not started by this script): stop it with $anchor/down.sh first"
  anchor_up "$OUT/ceph.up.log" || die "ceph up.sh failed"
  mountpoint -q "$MNT" || die "$MNT is not mounted after up.sh"
  mount_ceph_fuse "$ceph_mnt2" ceph-fuse2 || die "the second ceph-fuse mount failed"
  commands+=("$anchor/up.sh   # ceph-fuse at $MNT; ceph-fuse -c $ceph_conf --id admin --pid-file ... --admin-socket ... $ceph_mnt2")
  for r in $(seq "$RUNS"); do
    mkdir "$MNT/rep3/coh.$r"
    run_tool "ceph (run $r)" "$OUT/ceph.$r.txt" "$OUT/coherence" "$MNT/rep3/coh.$r" "$ceph_mnt2/rep3/coh.$r" "$N"
  done
  commands+=("$OUT/coherence $MNT/rep3/coh.R $ceph_mnt2/rep3/coh.R $N")
  fusermount3 -u "$ceph_mnt2" || umount -l "$ceph_mnt2" || true
  anchor_down
}

if [[ $do_weft == 1 ]]; then weft_part; fi
if [[ $do_ceph == 1 ]]; then ceph_part; fi

# ----------------------------------------------------------------- report --
# figure FIELD NAME FILE: column FIELD (2 p50, 3 p99, 4 max) of line NAME.
figure() { awk -v n="$2" -v f="$1" '$1 == n { print $f; exit }' "$3"; }
metric() { median_runs "$OUT/$1" figure "$2" "$3"; }  # SIDE FIELD NAME
ms() { [[ -n $1 ]] && awk -v v="$1" 'BEGIN { printf "%.2f", v / 1000 }' || printf -- '-'; }

verdicts=()
row() { printf '%-22s %19s %19s %12s\n' "$@"; }
{
  echo
  echo "commands (Weft first, purged before Ceph starts; R = run number):"
  for c in "${commands[@]}"; do echo "  $c"; done
  echo
  echo "latency in ms, p50 / p99 (median of $RUNS run(s)); ratio of p99: ceph / weft (above 1: Weft faster)"
  row "call" "ceph p50 / p99" "weft p50 / p99" "ceph/weft p99"
  row "----------------------" "-------------------" "-------------------" "------------"
  for name in attr_B_chmod attr_A_stat name_B_create name_A_stat data_B_write data_A_read append_A_write append_B_write; do
    c50=$(metric ceph 2 "$name"); c99=$(metric ceph 3 "$name")
    w50=$(metric weft 2 "$name"); w99=$(metric weft 3 "$name")
    row "$name" "$(ms "$c50") / $(ms "$c99")" "$(ms "$w50") / $(ms "$w99")" "$(ratio "$w99" "$c99")"
  done
  cv=$(metric ceph 2 violations); wv=$(metric weft 2 violations)
  row "violations (stale)" "${cv:--}" "${wv:--}" ""
  w99=$(metric weft 3 attr_B_chmod)
  if [[ -n $w99 ]]; then
    v=$(awk -v x="$w99" 'BEGIN { print (x <= 20000) ? "PASS" : "MISS" }')
    verdicts+=("$v  revoke latency (attr B chmod with A holding the caps) p99 <= 20 ms: weft $(ms "$w99") ms, max $(ms "$(metric weft 4 attr_B_chmod)") ms")
  fi
  if [[ -n $wv ]]; then
    v=$( [[ $wv == 0 ]] && echo PASS || echo MISS )
    verdicts+=("$v  no stale answer through the other mount: weft $wv violations (ceph ${cv:--})")
  fi
  echo
  print_verdicts
} | tee "$OUT/report.txt"

[[ ${#failures[@]} == 0 ]]
