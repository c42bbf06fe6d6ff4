# bench/lib.sh: shell helpers shared by the benchmark scripts (sourced).
# The caller sets: root (the checkout), OUT (raw output directory) and the
# array `failures` (run_tool appends to it).

log() { echo "[$(date +%T)] $*" >&2; }

die() { log "ERROR: $*"; exit 1; }

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) exit; print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

calc() { awk "BEGIN { printf \"%.6g\", $* }"; }

# start_sampler OUT PIDFILES...: every second, "name VmRSS_KiB" of each pid.
start_sampler() {
  local out=$1; shift
  (
    while :; do
      for f in "$@"; do
        [[ -f $f ]] || continue
        local p n r
        p=$(cat "$f" 2>/dev/null) || continue
        n=$(basename "$f" .pid)
        r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || continue
        [[ -n $r ]] && echo "$n $r"
      done
      sleep 1
    done
  ) >"$out" &
  sampler_pid=$!
}

stop_sampler() {
  [[ -n "$sampler_pid" ]] || return 0
  kill "$sampler_pid" 2>/dev/null || true
  wait "$sampler_pid" 2>/dev/null || true
  sampler_pid=""
}

# peak_rss PREFIX PIDFILES...: writes "name VmHWM_KiB" lines to PREFIX.hwm and
# prints the largest VmHWM (peak resident set) in MiB.
peak_rss() {
  local prefix=$1; shift
  : >"$prefix.hwm"
  for f in "$@"; do
    local p; p=$(cat "$f")
    local comm; comm=$(cat "/proc/$p/comm" 2>/dev/null || echo gone)
    local hwm; hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
    echo "$(basename "$f" .pid) pid=$p comm=$comm VmHWM_KiB=${hwm:-?}" >>"$prefix.hwm"
  done
  awk -F'VmHWM_KiB=' '$2 ~ /^[0-9]+$/ && $2 > m { m = $2 } END { if (m) printf "%.0f", m / 1024 }' "$prefix.hwm"
}

# run_tool NAME OUTFILE CMD...: runs a benchmark command, keeps its output,
# records a failure in `failures`.
run_tool() {
  local name=$1 out=$2; shift 2
  echo "\$ $*" >"$out"
  log "$name: $*"
  local rc=0
  "$@" >>"$out" 2>&1 || rc=$?
  if [[ $rc != 0 ]]; then
    failures+=("$name exited $rc (see $out)")
    log "warning: $name exited $rc; tail of $out:"; tail -5 "$out" >&2
  fi
}

# wait_for_build: waits while a ninja works in the build dir quickstart.sh
# builds in ($WEFT_BUILD_DIR, default build/; the lead rebuilding).
wait_for_build() {
  local build=${WEFT_BUILD_DIR:-$root/build} waited=0
  while :; do
    local busy=0
    for p in $(pgrep -x ninja || true); do
      [[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$build"* ]] && busy=1
      tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$build" && busy=1
    done
    [[ $busy == 0 ]] && return 0
    [[ $waited == 0 ]] && log "a build is running in $build; waiting for it"
    waited=1; sleep 5
  done
}

install_ceph() {  # up.sh also needs setfattr (package attr) for its CephFS layouts
  local c missing=0
  for c in ceph rados ceph-mon ceph-osd ceph-mgr ceph-mds ceph-fuse setfattr gcc; do
    command -v "$c" >/dev/null || missing=1
  done
  [[ $missing == 1 ]] || return 0
  local pkgs=(ceph ceph-mds ceph-fuse attr gcc)
  log "installing ${pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${pkgs[@]}" >"$OUT/apt.log" 2>&1 || {
    apt-get update -q >>"$OUT/apt.log" 2>&1
    apt-get install -y -q "${pkgs[@]}" >>"$OUT/apt.log" 2>&1
  } || die "apt-get install ${pkgs[*]} failed (see $OUT/apt.log)"
}

# reap_anchor: the Ceph anchor's down.sh stops its daemons by their pid files,
# but a ceph-mds that respawns while the cluster goes down (it re-executes
# itself and forks, under a new pid) outlives it: seen here, spinning on a
# removed $CDIR. Stops what is left of the anchor in $CDIR (the caller sets
# it), found by its conf path, by pid.
reap_anchor() {
  local n p left=()
  for n in ceph-fuse ceph-mds ceph-osd ceph-mgr ceph-mon; do
    for p in $(pgrep -x "$n" || true); do
      grep -qa -- "$CDIR/ceph.conf" "/proc/$p/cmdline" 2>/dev/null && left+=("$p")
    done
  done
  [[ ${#left[@]} -gt 0 ]] || return 0
  log "stopping anchor processes down.sh left running: ${left[*]}"
  kill -TERM "${left[@]}" 2>/dev/null || true
  for _ in $(seq 20); do
    local alive=0
    for p in "${left[@]}"; do
      [[ $(awk '/^State:/ { print $2 }' "/proc/$p/status" 2>/dev/null) =~ ^[RSD]$ ]] && alive=1
    done
    [[ $alive == 0 ]] && return 0
    sleep 0.5
  done
  kill -KILL "${left[@]}" 2>/dev/null || true  # ceph-mds ignores TERM without its mon
}
