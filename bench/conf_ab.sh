#!/usr/bin/env bash
# bench/conf_ab.sh KEY VALUE...: compares values of one weft.conf key on the
# running quickstart cluster with the anchors' 6,200-file source tree.
#
# For each VALUE, in the order given (alternate them: 0 1000 0 1000), it sets
# `KEY = VALUE` in the quickstart's weft.conf, restarts the OSDs (so only
# osd_* keys take effect), waits until the daemons are idle, then times
# `tar -xf` of the tree onto the mount, waits idle again, drops the page
# cache and times reading every file back (`find | xargs cat`), and removes
# the tree. Per step it prints the wall seconds and the CPU-seconds (utime +
# stime) that weft-fuse, the MDS and the OSDs together used. The key is
# removed from weft.conf at the end. The machine is shared: alternate the
# values and quote the load printed beside each line.
#
# Needs `scripts/quickstart.sh` up (WEFT_DIR and WEFT_MNT as it uses them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${WEFT_DIR:-$root/.weft}
mnt=${WEFT_MNT:-$root/mnt}
conf=$dir/weft.conf
tree=/tmp/tree.tar

help() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then help; exit 0; fi
if [[ $# -lt 2 ]]; then echo "usage: $0 KEY VALUE..." >&2; exit 2; fi
key=$1; shift
[[ -f $conf ]] || { echo "no quickstart cluster at $dir (run scripts/quickstart.sh)" >&2; exit 1; }
mountpoint -q "$mnt" || { echo "$mnt is not mounted (run scripts/quickstart.sh)" >&2; exit 1; }
[[ -f $tree ]] || python3 "$root/../shared/anchors/bench/mktree.py" "$tree"

# cpu: the CPU ticks the daemons used so far, "fuse mds osds".
cpu() {
  local fuse mds osds=0 f
  fuse=$(awk '{print $14 + $15}' "/proc/$(cat "$dir/run/fuse.pid")/stat")
  mds=$(awk '{print $14 + $15}' "/proc/$(cat "$dir/run/mds.pid")/stat")
  for f in "$dir"/run/osd.*.pid; do osds=$((osds + $(awk '{print $14 + $15}' "/proc/$(cat "$f")/stat"))); done
  echo "$fuse $mds $osds"
}
# idle: waits (up to 3 min) until the daemons use under 0.1 CPU-s per second.
idle() {
  local a b t _
  for _ in $(seq 60); do
    a=0; for t in $(cpu); do a=$((a + t)); done
    sleep 3
    b=0; for t in $(cpu); do b=$((b + t)); done
    ((b - a < 30)) && return 0
  done
  echo "daemons still busy after 3 min" >&2
}
# timed LABEL CMD...: runs CMD, prints LABEL, wall seconds and CPU-seconds.
timed() {
  local label=$1 s e before after; shift
  before=$(cpu); s=$(date +%s.%N)
  "$@" >/dev/null
  e=$(date +%s.%N); after=$(cpu)
  python3 - "$label" "$s" "$e" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import sys
label, s, e, before, after, hz = sys.argv[1:]
b, a = [int(x) for x in before.split()], [int(x) for x in after.split()]
d = [(y - x) / int(hz) for x, y in zip(b, a)]
print(f"  {label}: {float(e) - float(s):.2f} s, CPU-s fuse {d[0]:.1f} mds {d[1]:.1f} osds {d[2]:.1f}")
PY
}

for value in "$@"; do
  sed -i "/^$key *=/d" "$conf"
  echo "$key = $value" >> "$conf"
  for f in "$dir"/run/osd.*.pid; do kill "$(cat "$f")"; done
  for f in "$dir"/run/osd.*.pid; do while kill -0 "$(cat "$f")" 2>/dev/null; do sleep 0.2; done; done
  "$root/scripts/quickstart.sh" >/dev/null
  idle
  echo "$key = $value (load $(cut -d' ' -f1 /proc/loadavg))"
  work=$mnt/conf_ab.$$
  mkdir -p "$work"
  timed untar tar -xf "$tree" -C "$work"
  idle
  sync; echo 3 > /proc/sys/vm/drop_caches
  timed "read all" sh -c "find '$work' -type f -print0 | xargs -0 cat"
  rm -rf "$work"
  idle
done
sed -i "/^$key *=/d" "$conf"
