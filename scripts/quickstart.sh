#!/usr/bin/env bash
# A local Weft cluster on 127.0.0.1: etcd, $WEFT_MDS weft-mds daemons
# (default 2: mds.a holds rank 0, mds.b follows its journal as the
# standby-replay that takes it over if mds.a dies) and $WEFT_OSDS OSDs
# (default 6), all under ./.weft (or $WEFT_DIR), with the filesystem "weft"
# mounted at ./mnt (or $WEFT_MNT).
#
#   scripts/quickstart.sh          install, build, start (or re-start), mount, and print
#                                  `weft status` and the mount; again: harmless
#   scripts/quickstart.sh down     unmount and stop everything it started (data is kept)
#   scripts/quickstart.sh purge    down, then delete ./.weft and the (empty) mountpoint it used
#
# Run as root: it installs packages, links /sbin/mount.fuse.weft to the
# build (scripts/install-client.sh --link), and mounts with allow_other.
#
# Being one host, the cluster's failure domain is `osd`, so plain
# `weft pool create NAME --size 3` works.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${WEFT_DIR:-$root/.weft}
osds=${WEFT_OSDS:-6}
mdss=${WEFT_MDS:-2}
[[ $mdss =~ ^[1-9]$ ]] || { echo "quickstart: WEFT_MDS must be 1..9" >&2; exit 2; }
build=${WEFT_BUILD_DIR:-$root/build}
bin=$build/bin
mnt=${WEFT_MNT:-$root/mnt}
[[ "$mnt" == /* ]] || mnt=$PWD/$mnt

log() { echo "quickstart: $*"; }

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pid() {
  local pidfile=$1
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  local pid; pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

# From the kernel's table, without touching the directory (a mount whose
# client died answers every stat with ENOTCONN).
is_mounted() { awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; }

# Where this cluster's weft-fuse mounted (run/mnt), so that `down` and a
# second `up` touch only their own mount: another cluster (a benchmark's, a
# second WEFT_DIR) may be mounted at ./mnt.
our_mount() {
  if [[ -f "$dir/run/mnt" ]]; then
    cat "$dir/run/mnt"
  elif alive "$dir/run/fuse.pid"; then
    echo "$mnt"  # mounted before run/mnt was recorded
  fi
}

unmount() {
  local m
  m=$(our_mount)
  if [[ -n $m ]] && is_mounted "$m"; then
    if fusermount3 -u "$m" 2>/dev/null; then
      log "unmounted $m"
    else
      # Busy (a shell inside it) or the client is dead: detach it lazily.
      fusermount3 -u -z "$m" && log "unmounted $m (lazily: it was busy or its client was gone)"
    fi
  fi
  rm -f "$dir/run/mnt"
}

# A mount at $mnt that is not this cluster's is left alone: say so and stop.
refuse_foreign_mount() {
  if is_mounted "$mnt" && [[ "$(our_mount)" != "$mnt" ]]; then
    log "$mnt is already mounted, not by the cluster in $dir: unmount it or set WEFT_MNT" >&2
    exit 1
  fi
}

down() {
  unmount
  [[ -d "$dir/run" ]] || { log "nothing running"; return 0; }
  # Normally it exits by itself after the unmount, once it has written back
  # what closed files still buffered (close does not wait for that).
  for _ in $(seq 600); do alive "$dir/run/fuse.pid" || break; sleep 0.1; done
  stop_pid "$dir/run/fuse.pid"
  # The MDS daemons before the OSDs, all at once: a rank's holder writes its
  # journal back to the OSDs as it stops, and each daemon removes its
  # liveness record from etcd.
  for f in "$dir"/run/mds.pid "$dir"/run/mds.*.pid; do
    [[ -e "$f" ]] && alive "$f" && kill -TERM "$(cat "$f")" 2>/dev/null
  done
  for f in "$dir"/run/mds.pid "$dir"/run/mds.*.pid; do [[ -e "$f" ]] && stop_pid "$f"; done
  # All OSDs at once: each takes a second or two to leave cleanly.
  for f in "$dir"/run/osd.*.pid; do
    [[ -e "$f" ]] && alive "$f" && kill -TERM "$(cat "$f")" 2>/dev/null
  done
  for f in "$dir"/run/osd.*.pid; do [[ -e "$f" ]] && stop_pid "$f"; done
  stop_pid "$dir/run/etcd.pid"
  log "stopped"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# free_ports N: the first port from 9300 where N consecutive ports are free.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
n = int(sys.argv[1])
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
base = 9300
while base + n <= 65535 and not all(free(base + i) for i in range(n)):
    base += n
print(base)
PY
}

start() {  # start NAME LOGFILE CMD...
  local name=$1 logfile=$2; shift 2
  setsid "$@" >>"$logfile" 2>&1 < /dev/null &
  echo $! > "$dir/run/$name.pid"
}

case "${1:-up}" in
  down) down; exit 0 ;;
  purge)
    # The directory it mounted on, which need not be today's $WEFT_MNT.
    m=$(our_mount)
    down; rm -rf "$dir"
    [[ -z $m ]] || rmdir "$m" 2>/dev/null || true
    log "removed $dir"; exit 0 ;;
  up) ;;
  *) echo "usage: $0 [up|down|purge]" >&2; exit 2 ;;
esac

refuse_foreign_mount
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
mkdir -p "$dir/run" "$dir/log"
conf=$dir/weft.conf
export WEFT_CONF=$conf

if [[ ! -f "$conf" ]]; then
  fsid=$(cat /proc/sys/kernel/random/uuid)
  cat > "$conf" <<CONF
# Written by scripts/quickstart.sh
fsid = $fsid
etcd = 127.0.0.1:$(free_port)
mds = 127.0.0.1:$(free_port)
CONF
fi
if ! grep -q '^mds_metrics_port' "$conf"; then
  # Prometheus text at http://127.0.0.1:PORT/metrics: the MDS on the first
  # port, osd.N on the second plus N (room for 64 OSDs).
  base=$(free_ports 65)
  printf 'mds_metrics_port = %s\nosd_metrics_port = %s\n' "$base" $((base + 1)) >> "$conf"
fi
etcd_addr=$(sed -n 's/^etcd *= *//p' "$conf")

if ! alive "$dir/run/etcd.pid"; then
  peer_port=$(free_port)
  start etcd "$dir/log/etcd.log" etcd --name weft --data-dir "$dir/etcd" \
    --listen-client-urls "http://$etcd_addr" --advertise-client-urls "http://$etcd_addr" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "weft=http://127.0.0.1:$peer_port"
  for _ in $(seq 100); do
    ETCDCTL_API=3 etcdctl --endpoints="$etcd_addr" endpoint health >/dev/null 2>&1 && break
    sleep 0.2
  done
fi
"$bin/weft" cluster init --failure-domain osd 2>&1 | grep -v "already initialized" || true

# One address per MDS daemon in `mds =` (clients try them all); a conf
# from before standbys gets the missing ones.
mds_addrs=$(sed -n 's/^mds *= *//p' "$conf" | tr -d ' ')
while (( $(tr ',' '\n' <<<"$mds_addrs" | wc -l) < mdss )); do
  mds_addrs="$mds_addrs,127.0.0.1:$(free_port)"
done
sed -i "s/^mds *=.*/mds = ${mds_addrs//,/, }/" "$conf"
IFS=, read -ra mds_list <<<"$mds_addrs"
# mds.a first: it takes rank 0; the others wait as standbys.
for i in $(seq 0 $((mdss - 1))); do
  name=$(printf "\\x$(printf %x $((97 + i)))")
  pidfile=mds; [[ $i == 0 ]] || pidfile=mds.$name
  alive "$dir/run/$pidfile.pid" && continue
  extra=()  # mds.a serves metrics on mds_metrics_port, the others on a free port
  [[ $i == 0 ]] || extra=(--metrics "127.0.0.1:$(free_port)")
  start "$pidfile" "$dir/log/mds.$name.log" "$bin/weft-mds" --name "$name" --addr "${mds_list[$i]}" "${extra[@]}"
  for _ in $(seq 100); do "$bin/weft" osd ls >/dev/null 2>&1 && break; sleep 0.2; done
done

for i in $(seq 0 $((osds - 1))); do
  data=$dir/osd.$i
  if [[ ! -f "$data/.weft_osd_id" ]]; then
    id=$("$bin/weft" osd create --host "$(hostname)")
    rm -rf "$data"
    "$bin/weft-osd" --mkfs --id "$id" --data "$data" >/dev/null
    echo "$id" > "$data/.weft_osd_id"
  fi
  id=$(cat "$data/.weft_osd_id")
  if ! alive "$dir/run/osd.$id.pid"; then
    start "osd.$id" "$dir/log/osd.$id.log" "$bin/weft-osd" --id "$id" --data "$data"
  fi
done

for _ in $(seq 150); do
  up=$("$bin/weft" osd ls 2>/dev/null | awk '$2=="up"' | wc -l)
  [[ "$up" -ge "$osds" ]] && break
  sleep 0.2
done

# A filesystem "weft": metadata 3x, data EC 4+2 (replicated 3x below 6 OSDs).
if ! "$bin/weft" fs ls 2>/dev/null | grep -q '^name: weft,'; then
  "$bin/weft" pool ls 2>/dev/null | grep -qw meta ||
    "$bin/weft" pool create meta --size "$(( osds < 3 ? osds : 3 ))" --pg-num 32 >/dev/null
  if ! "$bin/weft" pool ls 2>/dev/null | grep -qw fsdata; then
    if [[ "$osds" -ge 6 ]]; then
      "$bin/weft" pool create fsdata --ec 4+2 --failure-domain osd --pg-num 64 >/dev/null
    else
      "$bin/weft" pool create fsdata --size "$(( osds < 3 ? osds : 3 ))" --pg-num 64 >/dev/null
    fi
  fi
  "$bin/weft" fs new weft --metadata-pool meta --data-pool fsdata >/dev/null
  log "created filesystem weft (metadata pool meta, data pool fsdata)"
fi
# With standbys started, health warns when none is left, and one of them
# follows rank 0's journal (standby-replay), so a takeover replays little.
"$bin/weft" fs set weft standby_count_wanted $(( mdss > 1 ? 1 : 0 )) >/dev/null
"$bin/weft" fs set weft allow_standby_replay $(( mdss > 1 ? 1 : 0 )) >/dev/null

# The mount: weft-fuse in the foreground of its own session (so that its
# PID is ours to stop), logging to .weft/log/weft-fuse.log.
mount_fs() {
  # WEFT_MNT changed since the last up: the old mount goes first (the
  # start of `up` already refused a foreign mount on $mnt).
  local old
  old=$(our_mount)
  [[ -z $old || $old == "$mnt" ]] || unmount
  if is_mounted "$mnt"; then
    if alive "$dir/run/fuse.pid" && stat -t "$mnt" >/dev/null 2>&1; then
      log "$mnt is already mounted"
      return 0
    fi
    log "$mnt: the mount's client is gone, clearing it"
    fusermount3 -u -z "$mnt" || true
  fi
  mkdir -p "$mnt"
  stop_pid "$dir/run/fuse.pid"
  start fuse "$dir/log/weft-fuse.log" "$bin/weft-fuse" "$mnt" -f -o "conf=$conf,fs=weft"
  for _ in $(seq 300); do
    if is_mounted "$mnt"; then
      echo "$mnt" >"$dir/run/mnt"
      log "mounted weft at $mnt"
      return 0
    fi
    alive "$dir/run/fuse.pid" || break
    sleep 0.1
  done
  log "mounting $mnt failed:" >&2
  tail -n 3 "$dir/log/weft-fuse.log" >&2
  stop_pid "$dir/run/fuse.pid"
  exit 1
}

if [[ $(id -u) -eq 0 ]]; then
  "$root/scripts/install-client.sh" --link >/dev/null
else
  log "not root: mount.fuse.weft not installed (scripts/install-client.sh)"
fi
mount_fs

# Let the PGs finish peering, so that the status shows the cluster as it is.
for _ in $(seq 100); do
  "$bin/weft" status 2>/dev/null | grep -q "not active" || break
  sleep 0.3
done
"$bin/weft" status
echo
findmnt "$mnt" || true
df -h "$mnt" || true
cat <<MSG

Weft is running in $dir and mounted at $mnt. To use it:
  ls $mnt && cp -r /etc/skel $mnt/
  export WEFT_CONF=$conf PATH=$bin:\$PATH
  weft fs status weft
  weft pool create data --size 3
  weft obj put data hello /etc/hostname && weft obj get data hello
  mount -t fuse.weft weft /mnt/other -o conf=$conf     # another mount, as mount(8) does it
Prometheus metrics: http://127.0.0.1:$(sed -n 's/^mds_metrics_port *= *//p' "$conf")/metrics (the MDS),
  http://127.0.0.1:PORT/metrics for osd.N, PORT = $(sed -n 's/^osd_metrics_port *= *//p' "$conf") + N
Stop it with: scripts/quickstart.sh down
MSG
