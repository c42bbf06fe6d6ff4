#!/usr/bin/env bash
# Clang's thread-safety analysis over every source of the daemons, the object
# layer and the client library: each field annotated ABSL_GUARDED_BY is
# touched only with its mutex held, each function annotated
# ABSL_EXCLUSIVE_LOCKS_REQUIRED is called only so. A violation is an error.
# scripts/test.sh runs it on every submission, after the build (whose
# compile_commands.json gives the flags of each file).
#   scripts/thread-safety.sh            all of them
#   scripts/thread-safety.sh mds/rank.cc   some
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
jobs=${WEFT_JOBS:-2}
clang=$(command -v clang++ || true)
if [[ -z "$clang" ]]; then
  for v in 16 15 14; do
    if command -v "clang++-$v" > /dev/null; then clang=$(command -v "clang++-$v"); break; fi
  done
fi
if [[ -z "$clang" ]]; then
  echo "thread-safety: clang++ is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
db=$build/compile_commands.json
if [[ ! -f "$db" ]]; then
  echo "thread-safety: $db is missing: build first (scripts/build.sh)" >&2
  exit 1
fi
# One line per source: the directory, then the command with the compiler
# replaced by clang and every output flag dropped; analysis only.
python3 - "$db" "$root" "$clang" "$@" > "$build/thread-safety.cmds" <<'EOF'
import json, shlex, sys
db, root, clang = sys.argv[1:4]
only = set(sys.argv[4:])
rooms = ("common/", "mds/", "osd/", "fuse-client/")
for entry in json.load(open(db)):
    src = entry["file"]
    rel = src[len(root) + 1:] if src.startswith(root + "/") else src
    if not rel.startswith(rooms) or (only and rel not in only):
        continue
    args = entry.get("arguments") or shlex.split(entry["command"])
    while args and (args[0].endswith("ccache") or args[0] == "ccache"):
        args = args[1:]
    out, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    out += ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety"]
    print(entry["directory"] + "\t" + shlex.join(out))
EOF
count=$(wc -l < "$build/thread-safety.cmds")
if [[ "$count" -eq 0 ]]; then
  echo "thread-safety: no sources matched" >&2
  exit 1
fi
start=$(date +%s)
set +e
tr '\n' '\0' < "$build/thread-safety.cmds" | xargs -0 -P "$jobs" -n 1 bash -c '
  dir=${1%%$'"'"'\t'"'"'*}; cmd=${1#*$'"'"'\t'"'"'}
  cd "$dir" && eval "$cmd"' _
status=$?
set -e
if [[ $status -ne 0 ]]; then
  echo "thread-safety: the analysis found errors (above)" >&2
  exit 1
fi
echo "thread-safety: $count sources clean in $(( $(date +%s) - start )) s ($clang)"
