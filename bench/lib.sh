# shellcheck shell=bash disable=SC2154  # the variables the caller sets, below
# bench/lib.sh: shell helpers shared by the benchmark scripts (sourced).
# The caller sets: root (the checkout), OUT (raw output directory) and the
# array `failures` (run_tool appends to it); for the cluster helpers also
# bin (Weft's binaries), anchor (the Ceph anchor's directory), CDIR (its data
# directory), and weft_dir, ceph_started and sampler_pid (empty, 0, empty).

log() { echo "[$(date +%T)] $*" >&2; }

die() { log "ERROR: $*"; exit 1; }

# print_help: the script's header comment (line 2 up to the first line that
# is not a comment), without the "# ".
print_help() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }

# side_options USAGE ARG...: the options every benchmark takes: --skip-ceph
# and --skip-weft (do_ceph and do_weft, 1 unless skipped), -h/--help; any
# other ARG exits 2 with "usage: SCRIPT USAGE".
# shellcheck disable=SC2034  # do_ceph and do_weft are the caller's
side_options() {
  local usage=$1 a; shift
  do_ceph=1 do_weft=1
  for a in "$@"; do
    case "$a" in
      --skip-ceph) do_ceph=0 ;;
      --skip-weft) do_weft=0 ;;
      -h|--help) print_help; exit 0 ;;
      *) echo "usage: $0 $usage" >&2; exit 2 ;;
    esac
  done
}

# need_positive_int VAR...: exits 2 unless every VAR holds a positive integer.
need_positive_int() {
  local v
  for v in "$@"; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer" >&2; exit 2; }
  done
}

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

# settle_disk DIR [LOG]: waits (at most SETTLE_MAX_S, default 120 s) until the
# block device under DIR (a local directory on the disk the clusters use,
# not a FUSE mount) has been quiet for 3 s in a row: no discards and
# under 8 MiB/s written. Deleting gigabytes (a cleanup between runs, the
# other system's teardown) on an ext4 mounted with `discard` kept the disk
# discarding at 400+ MB/s for tens of seconds, and a write run started then
# measured the deletes: 123 against 183 MB/s the same minute. Appends
# "settled after N s (device D)" to LOG.
settle_disk() {
  local dir=$1 logf=${2:-/dev/null} dev stat=""
  dev=$(df --output=source "$dir" 2>/dev/null | tail -1)
  dev=$(basename "$(readlink -f "$dev")")
  stat=/sys/class/block/$dev/stat
  [[ -r $stat ]] || { echo "disk not settled: no $stat" >>"$logf"; return 0; }
  local max=${SETTLE_MAX_S:-120} waited=0 quiet=0 prev now dw dd
  # Fields: 7 sectors written, 14 sectors discarded (Documentation/block/stat.rst).
  prev=$(awk '{ print $7, $14 }' "$stat")
  while (( quiet < 3 && waited < max )); do
    sleep 1; waited=$((waited + 1))
    now=$(awk '{ print $7, $14 }' "$stat")
    dw=$(( ${now% *} - ${prev% *} )); dd=$(( ${now#* } - ${prev#* } ))
    if (( dd == 0 && dw < 16384 )); then quiet=$((quiet + 1)); else quiet=0; fi
    prev=$now
  done
  echo "settled after $waited s (device $dev$( (( quiet < 3 )) && echo ', still busy at the limit'))" >>"$logf"
}

# The disk's own read rate at a benchmark's shape, measured right before a
# read run: on this machine's virtual disk the same fio job moved by half
# within minutes, so a ratio between two systems measured minutes apart says
# little without it. disk_probe_setup DIR JOBS BLOCK writes JOBS files of
# DISK_PROBE_MIB (512) MiB under DIR (on the disk the clusters use);
# disk_probe NAME OUTFILE reads them with JOBS psync readers of BLOCK bytes,
# O_DIRECT, for DISK_PROBE_S (8) seconds and appends "NAME MiB/s" to
# $OUT/disk_probe.txt (nothing with DISK_PROBE=0 or when the setup failed;
# the setup installs fio when it is missing).
disk_probe_dir="" disk_probe_jobs="" disk_probe_block=""
disk_probe_setup() {
  [[ ${DISK_PROBE:-1} == 1 ]] || return 0
  command -v fio >/dev/null || apt_install fio
  disk_probe_dir=$1 disk_probe_jobs=$2 disk_probe_block=$3
  mkdir -p "$disk_probe_dir"
  log "disk probe: writing $disk_probe_jobs x ${DISK_PROBE_MIB:-512} MiB under $disk_probe_dir"
  fio --name=probe --directory="$disk_probe_dir" --rw=write --bs=4M --direct=1 \
    --size="${DISK_PROBE_MIB:-512}M" --numjobs="$disk_probe_jobs" --end_fsync=1 \
    >"$OUT/disk_probe.setup.txt" 2>&1 || { log "warning: disk probe setup failed"; disk_probe_dir=""; }
}
disk_probe() {
  local name=$1 out=$2 bw
  [[ -n $disk_probe_dir ]] || return 0
  fio --name=probe --directory="$disk_probe_dir" --rw=read --bs="$disk_probe_block" --direct=1 \
    --ioengine=psync --size="${DISK_PROBE_MIB:-512}M" --numjobs="$disk_probe_jobs" \
    --time_based --runtime="${DISK_PROBE_S:-8}" --group_reporting --output-format=json >"$out" 2>"$out.err" || true
  bw=$(python3 -c 'import json, sys; print("%.1f" % (json.load(open(sys.argv[1]))["jobs"][0]["read"]["bw"] / 1024))' "$out" 2>/dev/null) || bw=""
  echo "$name ${bw:-FAILED}" >>"$OUT/disk_probe.txt"
}
disk_probe_remove() { [[ -z $disk_probe_dir ]] || rm -rf "$disk_probe_dir"; disk_probe_dir=""; }
# disk_probe_median PATTERN: the median MiB/s of the probes whose name matches.
disk_probe_median() {
  [[ -f $OUT/disk_probe.txt ]] || return 0
  awk -v p="$1" '$1 ~ p && $2 ~ /^[0-9.]+$/ { print $2 }' "$OUT/disk_probe.txt" | median
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

# apt_install PKG...: apt-get install, after an apt-get update when the first
# try fails; the output goes to $OUT/apt.log.
apt_install() {
  log "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "$@" >>"$OUT/apt.log" 2>&1 || {
    apt-get update -q >>"$OUT/apt.log" 2>&1
    apt-get install -y -q "$@" >>"$OUT/apt.log" 2>&1
  } || die "apt-get install $* failed (see $OUT/apt.log)"
}

# need_pkg CMD|python3:MODULE PACKAGE: installs PACKAGE when it is missing. On
# demand, not in scripts/install-deps.sh: only benchmarks need fio and
# matplotlib. The Debian module goes to the system python3, which need not be
# the first python3 on PATH (a pyenv here): the plot runs with $plot_py.
plot_py=/usr/bin/python3
[[ -x $plot_py ]] || plot_py=python3
need_pkg() {
  local cmd=$1 pkg=$2
  if [[ $cmd == python3:* ]]; then "$plot_py" -c "import ${cmd#python3:}" 2>/dev/null && return 0
  else command -v "$cmd" >/dev/null && return 0; fi
  apt_install "$pkg"
}

# wait_mounted DIR: up to 30 s for DIR to be a mount point.
wait_mounted() {
  for _ in $(seq 150); do mountpoint -q "$1" && return 0; sleep 0.2; done
  return 1
}

# mount_ceph_fuse DIR NAME: one more ceph-fuse mount of the anchor at DIR,
# with its own pid file, admin socket and logs ($OUT/NAME.*: the anchor's
# own mount holds the defaults), waited for.
mount_ceph_fuse() {
  local dir=$1 name=$2
  mkdir -p "$dir"
  ceph-fuse -c "$CDIR/ceph.conf" --id admin --pid-file "$OUT/$name.pid" \
    --admin-socket "$OUT/$name.asok" --log-file "$OUT/$name.client.log" \
    "$dir" >"$OUT/$name.log" 2>&1 || return 1
  wait_mounted "$dir"
}

install_ceph() {  # up.sh also needs setfattr (package attr) for its CephFS layouts
  local c
  for c in ceph rados ceph-mon ceph-osd ceph-mgr ceph-mds ceph-fuse setfattr gcc; do
    command -v "$c" >/dev/null || { apt_install ceph ceph-mds ceph-fuse attr gcc; return; }
  done
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

# ceph_pgs_clean: every PG of the Ceph anchor in $CDIR active+clean.
ceph_pgs_clean() {
  ceph -c "$CDIR/ceph.conf" pg stat -f json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); d = d.get("pg_summary", d)
states = {s["name"]: s["num"] for s in d["num_pg_by_state"]}
sys.exit(0 if states and list(states) == ["active+clean"] else 1)'
}

# anchor_running: some daemon of the Ceph anchor in $CDIR is alive (by its
# pid files).
anchor_running() {
  local f
  for f in "$CDIR"/run/*.pid; do
    [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null && return 0
  done
  return 1
}

# anchor_clear FORCE: a leftover $CDIR is cleared with the anchor's down.sh,
# then reap_anchor. An anchor that is running may be someone else's
# benchmark: left alone (status 1) unless FORCE is 1.
anchor_clear() {
  [[ -e $CDIR ]] || return 0
  if [[ $1 != 1 ]] && anchor_running; then return 1; fi
  log "$CDIR exists: running the anchor's down.sh first"
  "$anchor/down.sh" >>"$OUT/ceph.predown.log" 2>&1 || true
  reap_anchor
}

# anchor_up LOG [PREFIX]: the anchor's up.sh, its output in LOG (the tail
# shown and status 1 when it fails); PREFIX starts the log lines.
anchor_up() {
  local up_log=$1 prefix=${2:-} t0
  log "${prefix}starting the Ceph anchor (about 70 s)"
  ceph_started=1
  t0=$(date +%s)
  "$anchor/up.sh" >"$up_log" 2>&1 || { tail -20 "$up_log" >&2; return 1; }
  log "${prefix}Ceph anchor up in $(( $(date +%s) - t0 )) s"
}

# anchor_down [PREFIX]: the anchor's down.sh, then reap_anchor.
# shellcheck disable=SC2120  # PREFIX is optional
anchor_down() {
  log "${1:-}stopping the Ceph anchor"
  "$anchor/down.sh" >>"$OUT/ceph.down.log" 2>&1 || true
  reap_anchor
  ceph_started=0
}

# weft_up TEMPLATE LOG [PREFIX [VAR=VALUE...]]: a fresh
# scripts/quickstart.sh cluster (6 OSDs unless WEFT_OSDS=N is among the
# VAR=VALUEs) in a new `mktemp -d TEMPLATE` (weft_dir; WEFT_CONF is
# exported), VAR=VALUE in its environment, its output in LOG (the tail shown
# and status 1 when it fails). quickstart.sh also runs install-deps.sh and
# build.sh (a no-op when the build is up to date).
weft_up() {
  local template=$1 up_log=$2 prefix=${3:-} t0 osds=6 a
  shift 2; [[ $# == 0 ]] || shift
  for a in "$@"; do [[ $a != WEFT_OSDS=* ]] || osds=${a#WEFT_OSDS=}; done
  weft_dir=$(mktemp -d "$template") || return 1
  export WEFT_CONF=$weft_dir/weft.conf
  log "${prefix}starting Weft ($osds OSDs) in $weft_dir"
  t0=$(date +%s)
  env WEFT_DIR="$weft_dir" WEFT_OSDS="$osds" "$@" "$root/scripts/quickstart.sh" >"$up_log" 2>&1 \
    || { tail -20 "$up_log" >&2; return 1; }
  log "${prefix}Weft up in $(( $(date +%s) - t0 )) s"
}

# pg_total [STATUS]: the PG count of all pools in `weft status` (or STATUS).
pg_total() {
  sed -n 's/^ *pools: *[0-9]* pools, \([0-9]*\) pgs.*/\1/p' <<<"${1:-$("$bin/weft" status 2>&1 || true)}"
}

# weft_wait_clean MIN [CMD...]: waits up to 300 s until `weft status` shows
# at least MIN PGs (count the quickstart's own pools: pg_total before
# creating yours, plus theirs), every one active+clean, and CMD (when
# given) succeeds. The last status goes to $OUT/weft.status.txt; status 1
# on timeout.
weft_wait_clean() {
  local min=$1 st="" total pgs; shift
  for _ in $(seq 300); do
    st=$("$bin/weft" status 2>&1 || true)
    total=$(pg_total "$st")
    pgs=$(sed -n 's/^ *pgs: *//p' <<<"$st")
    if [[ -n $total && $total -ge $min && $pgs == "$total active+clean" ]] && { [[ $# == 0 ]] || "$@"; }; then
      echo "$st" >"$OUT/weft.status.txt"; return 0
    fi
    sleep 1
  done
  echo "$st" >"$OUT/weft.status.txt"
  return 1
}

# weft_fs_active FS: rank 0 of filesystem FS answers as active.
weft_fs_active() { "$bin/weft" fs status "$1" 2>/dev/null | grep -q '^  state: active'; }

# weft_purge [PREFIX]: `quickstart.sh purge` of the cluster in $weft_dir, if
# any.
# shellcheck disable=SC2120  # PREFIX is optional
weft_purge() {
  [[ -n $weft_dir ]] || return 0
  log "${1:-}purging the Weft cluster in $weft_dir"
  WEFT_DIR=$weft_dir "$root/scripts/quickstart.sh" purge >>"$OUT/weft.down.log" 2>&1 || true
  weft_dir=""
}

# trap_exit [FUNC...]: on exit, also after INT (130) or TERM (143), runs the
# FUNCs, then stops what is still running of what the script started (the
# RSS sampler, the Weft cluster, the Ceph anchor), keeping the exit status.
# shellcheck disable=SC2120  # the FUNCs are optional
trap_exit() {
  # shellcheck disable=SC2064  # the FUNCs are named now
  trap "on_exit $*" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
on_exit() {
  local rc=$? f
  trap - EXIT INT TERM
  for f in "$@"; do "$f" || true; done
  disk_probe_remove
  stop_sampler
  weft_purge
  if [[ $ceph_started == 1 ]]; then anchor_down; fi
  exit "$rc"
}

# machine_lines: the header's host and disk lines.
machine_lines() {
  echo "host: $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)),"\
       "memory $(free -m | awk '/^Mem:/ { print $2 " MiB total, " $7 " MiB available" }'),"\
       "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "disk: $(df -h /tmp | awk 'NR == 2 { print $1 " mounted at " $6 }') (both clusters store under /tmp)"
}

weft_version() { git -C "$root" --no-optional-locks describe --always --dirty 2>/dev/null || echo '?'; }

# note_foreign WHAT COMM...: notes in the header how many processes named
# COMM (other clusters', which take CPU) were running at the start.
note_foreign() {
  local what=$1 n c; shift
  n=$(for c in "$@"; do pgrep -x "$c" || true; done | wc -l)
  [[ $n == 0 ]] || echo "note: $n $what processes of other clusters were running at the start" | tee -a "$OUT/header.txt"
}

# value FILE LABEL: the text after LABEL on the first line starting with it.
value() {
  awk -v k="$2" 'index($0, k) == 1 { v = substr($0, length(k) + 1); gsub(/^[ \t]+|[ \t]+$/, "", v); print v; exit }' "$1"
}

# median_runs PREFIX CMD...: the median over the runs' outputs PREFIX.*.txt
# of the figure `CMD... FILE` prints for each (the files without one left
# out), "" when there is none.
median_runs() {
  local prefix=$1 f v vals=(); shift
  for f in "$prefix".*.txt; do
    [[ -f $f ]] || continue
    v=$("$@" "$f")
    [[ $v =~ ^[0-9.eE+-]+$ ]] && vals+=("$v")
  done
  [[ ${#vals[@]} -gt 0 ]] || return 0
  printf '%s\n' "${vals[@]}" | median
}

# fixed NUMBER [DIGITS]: NUMBER with DIGITS decimals (1), "-" when empty.
fixed() { [[ -n $1 ]] && printf "%.${2:-1}f" "$1" || printf -- '-'; }

# ratio CEPH WEFT: "WEFT/CEPHx", "-" when either is missing or CEPH is 0.
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$2" -v b="$1" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }' || printf -- '-'; }

# print_verdicts: the report's end: the verdicts, the failed runs and the
# wall time (since started_at).
print_verdicts() {
  local v f
  echo "verdicts:"
  [[ ${#verdicts[@]} -gt 0 ]] || echo "  (none: a side was skipped)"
  for v in "${verdicts[@]}"; do echo "  $v"; done
  for f in "${failures[@]}"; do echo "  FAILED RUN: $f"; done
  echo
  echo "wall time: $(( $(date +%s) - started_at )) s; raw outputs in $OUT"
}
