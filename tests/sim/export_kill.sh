#!/usr/bin/env bash
# A rank killed with SIGKILL in the middle of an export must leave the previous complete export.
# Usage: export_kill.sh <export file> <mpirun command running Sim.ExportKilledMidWay ...>
# The driver's rank 0 writes export 1 and copies it to <file>.first, then its export 2 pauses
# (CCLTUNE_TEST_EXPORT_PAUSE=2) after the new content is durable in the temporary file and before
# the rename, writing its pid to <file>.paused. This script kills that pid with SIGKILL and checks
# that <file> is export 1 byte for byte, parses, and that export 2 (complete) was never renamed.
set -uo pipefail
f=$1
shift
dir=$(dirname "$f")
base=$(basename "$f")
rm -rf "$dir"
mkdir -p "$dir"
"$@" >"$f.log" 2>&1 &
job=$!
for _ in $(seq 900); do  # at most 3 minutes for the pause
  [ -s "$f.paused" ] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.2
done
fail() {
  echo "export_kill: $*"
  cat "$f.log"
  kill -KILL "$job" 2>/dev/null
  exit 1
}
[ -s "$f.paused" ] || fail "export 2 never paused"
pid=$(cat "$f.paused")
kill -KILL "$pid" || fail "cannot kill rank 0 (pid $pid)"
wait "$job"
rc=$?
[ "$rc" -ne 0 ] || fail "mpirun exited 0 although rank 0 was killed"
[ -f "$f.first" ] || fail "no copy of export 1"
cmp -s "$f" "$f.first" || fail "$f is not export 1"
tmp=("$dir/.$base".ccltune-tmp.*)
[ "${#tmp[@]}" -eq 1 ] && [ -f "${tmp[0]}" ] || fail "expected one temporary file of export 2, found: ${tmp[*]}"
python3 - "$f" "${tmp[0]}" <<'PY' || fail "content check failed"
import json, sys
found, unrenamed = (json.load(open(p)) for p in sys.argv[1:3])
def workloads(doc):
    assert doc["schema"] == 1 and len(doc["configs"]) == 1, doc
    return [w["key"]["calls"][0]["bytes"] for w in doc["configs"][0]["workloads"]]
a, b = workloads(found), workloads(unrenamed)
assert a == [262144], a                   # export 1: the first workload only
assert sorted(b) == [262144, 4194304], b  # export 2: both, complete, never renamed
print(f"export_kill: found export 1 whole ({a}); export 2 ({b}) left in its temporary file")
PY
echo "export_kill: rank 0 (pid $pid) killed with SIGKILL mid-export; mpirun exit $rc; $f is the previous complete export"
