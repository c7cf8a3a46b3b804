#!/usr/bin/env python3
"""The search's timings of a config by the slowest rank and by the rank that arrived last, each against the oracle's
block timing read the same way. For each `--mode compare,oracle` JSON file whose oracle candidates carry
`rounds_min_us` and the search trace beside it with the min_us and max_us columns (CCLTUNE_TRACE:
comm,workload,call,unit,config,us,role,min_us,max_us), every config the oracle confirmed that the search sampled
gives, per run, the median of its max_us over the oracle's figure (the median of its rounds' `rounds_us`) and the
median of its min_us over the median of its `rounds_min_us`, and the median of max_us - min_us (the spread over ranks,
µs). Printed per collective, size and config, pooled over the runs (median of the per-run figures, number of runs):
a config whose max ratio is high and whose min ratio is not reads slow in the search through the other ranks'
waiting, not through its own time.

With --by-position, each config's samples are split by their position in the run of consecutive timed calls of that
config (bench/trace_run_position.py): `p0` for a call whose previous call ran another config or was not timed, `p1+`
for the later calls of a run: whether a config reads its block time once it runs in a row.

With --winners (not with --by-position), per run and row, the config with the lowest median in the search by each reading (over the configs
the oracle confirmed and the search sampled at least --min-samples times) and by the oracle's own two readings.

Usage: bench/trace_over_ranks.py RUN.json [RUN.json ...] [--trace PATTERN] [--by-position] [--winners]
       [--min-samples 2]
PATTERN (default "{dir}/trace-{stem}-*.csv") names each file's trace; a file without a trace with the two columns, or
whose oracle has no rounds_min_us, is skipped (said on stderr).
"""
import collections
import csv
import json
import statistics
import sys

from testbed_ceiling import config_name
from trace_run_position import positions
from trace_vs_oracle import SEARCH_ROLES, run_parser, traced_runs, workload_name


def oracle_readings(row):
    """config name -> (oracle median of the rounds' max readings, of their min readings), NCCL's default as
    `default`; configs without both are left out."""
    out = {}
    for c in row.get("oracle_candidates") or []:
        hi, lo = c.get("rounds_us") or [], c.get("rounds_min_us") or []
        if hi and lo:
            out[config_name(c["config"])] = (statistics.median(hi), statistics.median(lo))
    return out


def read_min_max(path, by_position=False):
    """workload -> config -> [(min_us, max_us)] over the search's own roles, or None for a trace without the
    columns. With by_position the config is keyed with its position class, (config, "p0" or "p1+")."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if "min_us" not in (reader.fieldnames or []):
            return None
        rows = collections.defaultdict(list)
        for r in reader:
            if r["role"] in SEARCH_ROLES:
                rows[r["workload"]].append((int(r["call"]), r["config"], (float(r["min_us"]), float(r["max_us"])),
                                            r["role"]))
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for workload, calls in rows.items():
        for config, pos, mm, _ in positions(calls):
            out[workload][(config, "p0" if pos == 0 else "p1+") if by_position else config].append(mm)
    return out


def main():
    ap = run_parser(__doc__.splitlines()[0])
    ap.add_argument("--by-position", action="store_true")
    ap.add_argument("--winners", action="store_true")
    ap.add_argument("--min-samples", type=int, default=2)
    a = ap.parse_args()
    pooled = collections.defaultdict(list)
    for path, trace in traced_runs(a.runs, a.trace):
        samples = read_min_max(trace, a.by_position)
        if samples is None:
            print(f"{path}: its trace has no min_us/max_us columns: skipped", file=sys.stderr)
            continue
        with open(path) as f:
            run = json.load(f)
        nranks = run["meta"]["nranks"]
        used = False
        for row in run["results"]:
            oracle = oracle_readings(row)
            if not oracle:
                continue
            used = True
            mine = samples.get(workload_name(row, nranks), {})
            best = {}
            for key, v in mine.items():
                name = key[0] if a.by_position else key
                if name not in oracle or not v:
                    continue
                o_hi, o_lo = oracle[name]
                hi = statistics.median(x[1] for x in v)
                lo = statistics.median(x[0] for x in v)
                spread = statistics.median(x[1] - x[0] for x in v)
                label = f"{name} {key[1]}" if a.by_position else name
                pooled[(row["collective"], row["bytes"], label)].append((hi / o_hi, lo / o_lo, spread))
                if len(v) >= a.min_samples and not a.by_position:
                    best[name] = (hi, lo, o_hi, o_lo)
            if a.winners and best:  # by the whole record of each config (not with --by-position)
                pick = [min(best, key=lambda n, i=i: best[n][i]) for i in range(4)]
                print(f"{path} {row['collective']} {row['bytes']}: search by max {pick[0]}, by min {pick[1]}; "
                      f"oracle by max {pick[2]}, by min {pick[3]}")
        if not used:
            print(f"{path}: its oracle has no rounds_min_us: skipped", file=sys.stderr)
    for (coll, size, name), v in sorted(pooled.items()):
        print(f"{coll:<14} {size:>9} {name:<22} max/oracle {statistics.median(x[0] for x in v):.3f}  "
              f"min/oracle-min {statistics.median(x[1] for x in v):.3f}  spread {statistics.median(x[2] for x in v):6.1f} us"
              f"  runs {len(v)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
