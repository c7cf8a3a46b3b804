#!/usr/bin/env bash
# A kept default whose time drifts, through the whole runtime (leader, syncs, schedule book) on the simulated
# 4-rank cluster: reduce-scatter 16 MiB on the one-GPU testbed's recorded landscape, where ccltune keeps NCCL's
# default (the closest config, ring/simple/nc1, reads about 1.1x). --settle-calls 512 lets the monitoring take
# its first window, then SIMNCCL_DRIFT slows every call 1.3x from call 700 on. With the guard (the default),
# the drift goes to a check: the leader ships probes of one config (the reference) before the final default
# entry, and the default is kept. With CCLTUNE_GUARD=0 the same drift re-opens the search. The sync intervals
# grow to 65536 calls while all is converged, so the drift is seen some 30000 calls after it: the rows are long.
# Usage: guard_drift.sh LIBCCLTUNE SIMNCCL_DIR BENCH OUTDIR
set -euo pipefail
lib="$1" simdir="$2" bench="$3" out="$4"
land="$(cd "$(dirname "$0")/../data/landscapes" && pwd)"
mkdir -p "$out"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
for guard in 1 0; do
  rm -f "$out"/trace-"$guard"-*.csv
  mpirun -np 4 --oversubscribe "${root[@]}" -x LD_PRELOAD="$lib" -x LD_LIBRARY_PATH="$simdir:${LD_LIBRARY_PATH:-}" \
    -x SIMNCCL_TIMEOUT_S=120 -x SIMNCCL_SEED=1 -x SIMNCCL_MODEL_FILE="$land/testbed-4r.txt" \
    -x SIMNCCL_NOISE_MODEL="$land/noise-testbed-4r.txt" -x SIMNCCL_DRIFT=700,1.3 -x CCLTUNE_GUARD="$guard" \
    -x CCLTUNE_DEBUG=INFO -x CCLTUNE_DEBUG_SUBSYS=OPT -x CCLTUNE_TRACE="$out/trace-$guard-%p.csv" \
    "$bench" -c reducescatter -b 16M -e 16M -n 80000 --settle-calls 512 --mode compare \
    --json "$out/guard-$guard.json" >"$out/guard-$guard.log" 2>&1
done
python3 - "$out" <<'PY'
import csv, glob, json, sys
out = sys.argv[1]
def probes(guard):
    (trace,) = glob.glob(f"{out}/trace-{guard}-*.csv")
    rows = list(csv.DictReader(open(trace)))
    # After the drift (call 700), candidates of a converged workload are the guard's probes.
    return [r["config"] for r in rows if r["role"] == "candidate" and int(r["call"]) > 1000]
on_log = open(f"{out}/guard-1.log").read()
off_log = open(f"{out}/guard-0.log").read()
(on,) = json.load(open(f"{out}/guard-1.json"))["results"]
p = probes(1)
print(f"guard on: {len(p)} probes of {sorted(set(p))}; final config {on['config']}")
assert len(p) >= 8, p
assert len(set(p)) == 1 and p[0] != "default", p
assert "re-opened" not in on_log, [l for l in on_log.splitlines() if "re-opened" in l]
assert on["converged"] and on["config"]["algorithm"] == "default", on
assert "re-opened: its time moved away from what it was" in off_log, "guard off: the drift did not re-open"
print("guard drift: ok")
PY
