#!/usr/bin/env bash
# OSD memory A/B: for each setting, a fresh quickstart cluster (6 OSDs), a
# 3x pool of 128 PGs, `weft bench` write then seq (30 s each, 16 threads,
# 4 MiB), and every OSD's peak RSS (VmHWM). One line per setting.
#
#   bench/osd_rss_ab.sh "osd_memory_trim_ms=0" - "osd_memory_trim_free_bytes=67108864"
#
# A setting is KEY=VALUE[,KEY=VALUE...] written into weft.conf before the
# cluster starts; "-" runs the defaults. Interleave settings and repeat
# them: this machine is shared and rounds of the same setting differ. The
# page cache is dropped before each phase, as object_bench.sh does
# (DROP_CACHES=0: not).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${WEFT_BUILD_DIR:-$root/build}/bin
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for setting in "$@"; do
  dir=$(mktemp -d /tmp/weft-rss-ab.XXXXXX)
  {
    echo "fsid = $(cat /proc/sys/kernel/random/uuid)"
    echo "etcd = 127.0.0.1:$(free_port)"
    echo "mds = 127.0.0.1:$(free_port)"
    [[ $setting == - ]] || tr ',' '\n' <<<"$setting" | sed 's/=/ = /'
  } >"$dir/weft.conf"
  export WEFT_CONF=$dir/weft.conf
  if WEFT_DIR=$dir WEFT_MNT=$dir.mnt "$root/scripts/quickstart.sh" >"$dir.up.log" 2>&1 &&
    "$bin/weft" pool create rb --size 3 --pg-num 128 >/dev/null; then
    sleep 5
    drop() { [[ ${DROP_CACHES:-1} == 0 ]] || { sync; echo 3 >/proc/sys/vm/drop_caches; }; }
    bw() { drop; "$bin/weft" bench rb "$@" --seconds 30 --threads 16 2>&1 | sed -n 's/^Bandwidth (MB\/sec): *//p'; }
    w=$(bw write --block-size 4M) s=$(bw seq)
    hwm=$(for p in "$dir"/run/osd.*.pid; do awk '/VmHWM/ { printf "%d ", $2 / 1024 }' "/proc/$(cat "$p")/status"; done)
    echo "setting=$setting write_MBps=$w seq_MBps=$s peak_rss_MiB_per_osd=$hwm"
  else
    echo "setting=$setting: the cluster did not start, see $dir.failed.log" >&2
    cp "$dir.up.log" "$dir.failed.log"
  fi
  WEFT_DIR=$dir WEFT_MNT=$dir.mnt "$root/scripts/quickstart.sh" down >/dev/null 2>&1
  rm -rf "$dir" "$dir.mnt" "$dir.up.log"
done
