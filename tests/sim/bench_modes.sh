#!/usr/bin/env bash
# ccltune-bench's overhead mode and --interference on the simulated 4-rank cluster: the overhead
# report has host and GPU times of the default, converged and forced communicators (C forced to
# B's converged config) and the idle-stream check's host cost, and --interference is accepted with "no
# effect" recorded in meta (its phase too), while a JSON name without "interference" is refused;
# --settle-calls is recorded in meta; --search-cost 1 gives every row both wall times (bench/search_cost.py reads
# them), and without it they are null; --mode landscape --landscape-switch 1 times every config next to
# NCCL's default (seq 0-4 per config and round in the samples, one "# switch" line per config); --mode loop runs the
# sweep's rows as one training loop until every workload settled, then times the converged loop against NCCL's default.
# Usage: bench_modes.sh LIBCCLTUNE SIMNCCL_DIR BENCH OUTDIR
set -euo pipefail
lib="$1" simdir="$2" bench="$3" out="$4"
mkdir -p "$out"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
# run [PREFIX...] -- BENCH_ARGS...: the bench on 4 simulated ranks, each started through PREFIX if given.
# env sets the preload for the bench alone: a sanitizer build's libccltune.so cannot load into PREFIX.
run() {
  local prefix=()
  if [[ " $* " == *" -- "* ]]; then
    while [ "$1" != -- ]; do prefix+=("$1"); shift; done
    shift
  fi
  mpirun -np 4 --oversubscribe "${root[@]}" -x LD_LIBRARY_PATH="$simdir:${LD_LIBRARY_PATH:-}" \
    -x SIMNCCL_TIMEOUT_S=120 -x SIMNCCL_SEED=1 "${prefix[@]}" env LD_PRELOAD="$lib" "$bench" "$@"
}
run -c allreduce -b 64K -e 64K --mode overhead --overhead-calls 100 --json "$out/overhead.json"
# Rank 0 starts a second late, as a slow start under a sanitizer once made it: mpirun kills it as soon as
# another rank exits on the bad option, so the message must come from every rank, not from rank 0 alone.
late0=(bash -c '[ "${OMPI_COMM_WORLD_RANK:-0}" != 0 ] || sleep 1; exec "$@"' late0)
if run "${late0[@]}" -- -c allreduce -b 1M -e 1M -n 5 --interference gemm,mem --json "$out/plain.json" \
  >"$out/refused.log" 2>&1; then
  echo "FAIL: --interference with a JSON name lacking 'interference' was accepted"
  exit 1
fi
grep -q "must have 'interference' in its name" "$out/refused.log"
run -c allreduce -b 1M -e 1M -n 5 --interference gemm,mem --json "$out/sim-interference.json" | tee "$out/load.log"
grep -q "no effect on the simulated backend" "$out/load.log"
# --interference-phase compare (the load only while the converged calls are timed) is recorded; an unknown phase
# is refused.
run -c allreduce -b 1M -e 1M -n 5 --interference gemm --interference-phase compare \
  --json "$out/sim-interference-compare.json" >/dev/null
if run -c allreduce -b 1M -e 1M -n 5 --interference gemm --interference-phase tuning \
  --json "$out/sim-interference-bad.json" >"$out/bad-phase.log" 2>&1; then
  echo "FAIL: --interference-phase tuning was accepted"
  exit 1
fi
grep -q "unknown phase 'tuning'" "$out/bad-phase.log"
# --settle-calls: B runs on after it converged, before the timing; recorded in meta.
run -c allreduce -b 1M -e 1M -n 5 --settle-calls 64 --json "$out/settle.json" >/dev/null
# --search-cost 1: each row's tuning loop and the same loop on NCCL's default timed on the host; bench/search_cost.py
# reads them (host time of the simulation here: only that the figures are there and read is checked).
run -c allreduce,allgather -b 256K -e 1M -n 5 --search-cost 1 --json "$out/search-cost.json" >/dev/null
python3 "$(dirname "$0")/../../bench/search_cost.py" "$out/search-cost.json" --rows | tee "$out/search-cost.log"
grep -q "^search-cost.json: 4 rows, " "$out/search-cost.log"
python3 - "$out/overhead.json" "$out/sim-interference.json" "$out/sim-interference-compare.json" \
  "$out/settle.json" "$out/search-cost.json" <<'PY'
import json, sys
ov = json.load(open(sys.argv[1]))
assert ov["meta"]["modes"] == ["overhead"], ov["meta"]["modes"]
assert ov["mismatches"] == 0
(row,) = ov["overhead"]["rows"]
for side in ("default", "converged", "forced"):
    h = row["host_us"][side]
    assert h["calls"] >= 100 and 0 < h["p10_us"] <= h["median_us"] <= h["p90_us"], (side, h)
    assert len(h["rank_median_us"]) == 4, h
    assert row["gpu_us"][side] and row["gpu_us"][side] > 0, (side, row["gpu_us"])
assert row["config"] not in (None, "default"), row["config"]
# C ran B's config: the same simulated GPU time within the model's noise.
assert abs(row["gpu_us"]["forced"] / row["gpu_us"]["converged"] - 1) < 0.1, row["gpu_us"]
(res,) = ov["results"]
assert res["converged"] and res["tuned_us"] == row["gpu_us"]["converged"], res
# The idle-stream check's cost: 21 batches a side; the simulated backend is never idle and has no hold kernel.
ic = ov["overhead"]["idle_check"]
assert ic["held"] is False and ic["checks_per_side"] == 21000, ic
for side in ("busy_ns", "idle_ns"):
    assert ic[side]["batches"] == 21 and 0 < ic[side]["p10"] <= ic[side]["median"] <= ic[side]["p90"], ic
assert ic["busy_said_idle"] == 0 and ic["idle_said_busy"] == 21000, ic
inter = json.load(open(sys.argv[2]))
assert inter["meta"]["interference"] is False
assert inter["meta"]["interference_load"]["kinds"] == "gemm,mem"
assert inter["meta"]["interference_load"]["phase"] == "all"
assert "no GPU kernels" in inter["meta"]["interference_load"]["effect"]
assert json.load(open(sys.argv[3]))["meta"]["interference_load"]["phase"] == "compare"
settle = json.load(open(sys.argv[4]))
assert settle["meta"]["settle_calls"] == 64, settle["meta"]
(res,) = settle["results"]
assert res["converged"] and res["tuned_us"] > 0, res
assert res["tune_wall_us"] is None and res["default_wall_us"] is None, res  # off unless asked for
cost = json.load(open(sys.argv[5]))["results"]
assert len(cost) == 4, cost
for res in cost:
    assert res["converged"] and res["tune_calls"] > 0, res
    assert res["tune_wall_us"] > 0 and res["default_wall_us"] > 0, res
print("bench modes: ok")
PY
# The training loop: 6 workloads, each twice per iteration, until all settled; --mode loop with another mode is refused.
run -c allreduce,allgather -b 64K -e 1M -n 10 --mode loop --loop-repeat 2 --json "$out/loop.json" >"$out/loop.log"
grep -q "every workload settled after iteration" "$out/loop.log"
if run -c allreduce -b 64K -e 64K --mode loop,compare >"$out/loop-refused.log" 2>&1; then
  echo "FAIL: --mode loop,compare was accepted"
  exit 1
fi
grep -q "loop runs alone" "$out/loop-refused.log"
python3 - "$out/loop.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["meta"]["modes"] == ["loop"] and doc["results"] == [] and doc["mismatches"] == 0, doc["meta"]
loop = doc["loop"]
assert loop["repeat"] == 2 and loop["tuning"] is True and loop["timed_iters"] == 10, loop
n = loop["all_settled_at"]
assert 0 < n <= loop["max_iters"], n
# One device time per tuning iteration, and the last iteration is the one after which all had settled.
assert len(loop["tuning_iter_us"]) == n and all(us > 0 for us in loop["tuning_iter_us"]), loop["tuning_iter_us"]
ws = loop["workloads"]
assert [(w["collective"], w["bytes"]) for w in ws] == [
    (c, b) for c in ("allreduce", "allgather") for b in (65536, 262144, 1048576)], ws
assert max(w["settled_at"] for w in ws) == n, ws
for w in ws:
    assert 0 < w["settled_at"] <= n and w["converge_calls"] > 0 and w["config"], w
assert loop["default_iter_us"] > 0 and loop["tuned_iter_us"] > 0, loop
for side in ("timed_default_us", "timed_tuned_us"):
    assert len(loop[side]) == 10 and min(loop[side]) > 0, (side, loop[side])
# Converged: the tuned loop is no slower than NCCL's default's beyond the model's noise.
assert loop["tuned_iter_us"] < 1.05 * loop["default_iter_us"], loop
print("loop: ok")
PY
# The first workload of every iteration starts on an idle stream (the loop synchronizes the host after each, and the
# simulated NCCL says so: simncclHostSync): its samples are kept, since it starts idle every time, and it converges
# with the others instead of searching on, its idle samples marked, long after them (the one-GPU testbed, NCCL 2.28.9:
# all-reduce 64 KiB settled after 100-135 iterations, the others after at most 55).
land="$(dirname "$0")/../data/landscapes"
run -x SIMNCCL_MODEL_FILE="$land/testbed-4r.txt" -x SIMNCCL_NOISE_MODEL="$land/noise-testbed-4r.txt" -- \
  -c allreduce,allgather -b 64K -e 1M -n 10 --mode loop --loop-iters 150 --json "$out/loop-idle.json" >/dev/null
python3 - "$out/loop-idle.json" <<'PY'
import json, sys
loop = json.load(open(sys.argv[1]))["loop"]
first, *others = [w["settled_at"] for w in loop["workloads"]]
assert loop["all_settled_at"] > 0 and first > 0, loop["workloads"]
assert first <= 1.3 * max(others), (first, others)
print("loop, first workload idle: ok", first, others)
PY
# The switch pattern: 3 rounds of every distinct config (the communicator's 2 channels: ring/ll, ring/simple, pat/simple
# x nc1, nc2 for all-gather), 5 samples each: 3 of the config, 2 of the default after it.
run -c allgather -b 256K -e 256K --mode landscape --landscape-out "$out/switch" --landscape-rounds 3 \
  --landscape-channels 2 --landscape-switch 1 >"$out/switch.log"
python3 - "$out/switch.samples" "$out/switch.log" <<'PY'
import collections, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
# collective bytes config round pos seq min_us max_us ran
seqs = collections.Counter((r[4], r[5]) for r in rows)
configs = {r[4] for r in rows}
assert len(configs) >= 4, configs
assert all(seqs[(p, str(k))] == 3 for p in configs for k in range(5)), seqs
for r in rows:
    assert (r[2] == "default") == (int(r[5]) >= 3), r
lines = [l for l in open(sys.argv[2]) if l.startswith("# switch allgather 262144")]
assert len(lines) == len(configs), lines
print("landscape switch: ok")
PY
# SIMNCCL_SWITCH charges a change of config to the next call of the same workload: with it at 1.5 every config that
# runs otherwise than NCCL's default reads about 1.5x right after the default (seq 0 against its repeats, seq 1-2),
# and the default about 1.5x right after it (seq 3 against seq 4); a config NCCL runs as the default, 1x.
run -x SIMNCCL_SWITCH=1.5 -x SIMNCCL_NOISE=0.03 -- -c allgather -b 256K -e 256K --mode landscape \
  --landscape-out "$out/switch-cost" --landscape-rounds 3 --landscape-channels 2 --landscape-switch 1 \
  >"$out/switch-cost.log"
python3 - "$out/switch-cost.samples" <<'PY'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
us = collections.defaultdict(lambda: collections.defaultdict(list))
ran = {}
for r in rows:  # collective bytes config round pos seq min_us max_us ran
    us[r[4]][int(r[5])].append(float(r[7]))
    ran[(r[4], int(r[5]) >= 3)] = r[8]
assert len(us) >= 4, us.keys()
for pos, seq in us.items():
    x = statistics.median(seq[0]) / statistics.median(seq[1] + seq[2])
    d = statistics.median(seq[3]) / statistics.median(seq[4])
    want = 1.0 if ran[(pos, False)] == ran[(pos, True)] else 1.5
    assert abs(x - want) < 0.15 and abs(d - want) < 0.15, (pos, ran[(pos, False)], ran[(pos, True)], x, d)
print("switch cost: ok")
PY
