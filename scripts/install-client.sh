#!/usr/bin/env bash
# Installs the Weft client on this host so that mount(8) and /etc/fstab can
# mount Weft filesystems:
#
#   scripts/install-client.sh            copies weft and weft-fuse from ./build/bin
#                                        (or $WEFT_BUILD_DIR/bin) to $PREFIX/bin
#                                        (default /usr/local) and links
#                                        /sbin/mount.fuse.weft and /sbin/mount.weft to it
#   scripts/install-client.sh --link     links the helpers to the build's weft-fuse
#                                        instead (a rebuild is picked up; the quickstart
#                                        does this)
#   scripts/install-client.sh --remove   removes the helpers (and copies it made)
#
# mount -t fuse.weft runs /sbin/mount.fuse.weft and mount -t weft runs
# /sbin/mount.weft; both are weft-fuse under another name (see
# fuse-client/fuse/mount_helper.h). Run as root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
prefix=${PREFIX:-/usr/local}
sbin=${WEFT_SBIN:-/sbin}
mode=${1:-copy}

log() { echo "install-client: $*"; }

case "$mode" in
  copy | --copy)
    for b in weft weft-fuse; do
      [[ -x "$build/bin/$b" ]] || { log "no $build/bin/$b: run scripts/build.sh first" >&2; exit 1; }
    done
    install -d "$prefix/bin"
    install -m 0755 "$build/bin/weft" "$build/bin/weft-fuse" "$prefix/bin/"
    target=$prefix/bin/weft-fuse
    ;;
  --link)
    [[ -x "$build/bin/weft-fuse" ]] || { log "no $build/bin/weft-fuse: run scripts/build.sh first" >&2; exit 1; }
    target=$build/bin/weft-fuse
    ;;
  --remove)
    for h in mount.fuse.weft mount.weft; do rm -f "$sbin/$h"; done
    for b in weft weft-fuse; do rm -f "$prefix/bin/$b"; done
    log "removed"
    exit 0
    ;;
  *) echo "usage: $0 [--link|--remove]" >&2; exit 2 ;;
esac

for h in mount.fuse.weft mount.weft; do ln -sfn "$target" "$sbin/$h"; done
log "$sbin/mount.fuse.weft and $sbin/mount.weft -> $target"
[[ -d /etc/weft ]] || log "put the cluster's weft.conf in /etc/weft/weft.conf (or pass -o conf=FILE)"
