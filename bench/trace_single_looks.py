#!/usr/bin/env python3
"""The configs a search timed only once, and how close that one reading came to the config it ended on. For each
`--mode compare,oracle` JSON file and the search trace beside it (CCLTUNE_TRACE: comm,workload,call,unit,config,us,
role), every config of a row's workload with exactly one sample in the search (candidate, incumbent and default
roles; monitoring excluded), other than NCCL's default and the config the search ended on, is read against the median
of the search's samples of the config it ended on (of the default's, where it kept the default): one ratio per such
config. For each threshold R: how many of them read under R times it (per workload: what a second look at every config
read within R of the end's would have cost in samples), and how many of those were the oracle's pick of the row (a
config the oracle timed faster than the one the search ended on, dropped on one sample). Then the oracle picks' ratios.

Caveat: the trace names a call by the config the search asked for, so two requests NCCL ran the same (tree/simple/nc32
run as tree/simple/nc2 on a 2-channel communicator) count as two configs.

Usage: bench/trace_single_looks.py RUN.json [RUN.json ...] [--trace PATTERN] [--ratios 1.1,1.2,1.3,1.5,2]
PATTERN (default "{dir}/trace-{stem}-*.csv") names each file's trace; {dir} and {stem} are the JSON file's folder
and name without ".json"; a file for which it matches no trace or several is skipped (said on stderr). Exits 1 when
no run was read.
"""
import collections
import statistics

from testbed_ceiling import config_or_default_name
from trace_vs_oracle import rows_with_samples, run_parser, traced_runs


def single_looks(json_path, trace_path):
    """(workloads with samples, [(ratio to the end's median, whether it is the oracle's pick)]) for one run."""
    workloads, out = 0, []
    for row, samples in rows_with_samples(json_path, trace_path):
        if not samples:
            continue
        workloads += 1
        ended = config_or_default_name(row.get("config"))
        oracle = config_or_default_name(row.get("oracle_config"))
        by = collections.defaultdict(list)
        for r in samples:
            by[r.config].append(r.us)
        end = by.get(ended) or by.get("default")
        if not end:
            continue
        reference = statistics.median(end)
        for name, us in sorted(by.items()):
            if len(us) == 1 and name not in ("default", ended):
                out.append((us[0] / reference, name == oracle))
    return workloads, out


def main():
    ap = run_parser(__doc__.splitlines()[0])
    ap.add_argument("--ratios", default="1.1,1.2,1.3,1.5,2")
    a = ap.parse_args()
    thresholds = [float(x) for x in a.ratios.split(",")]
    runs = traced_runs(a.runs, a.trace)
    if not runs:
        print("no run read")
        return 1
    workloads, looks = 0, []
    for path, trace in runs:
        w, l = single_looks(path, trace)
        workloads += w
        looks += l
    picks = sorted(r for r, is_pick in looks if is_pick)
    print(f"{len(runs)} runs, {workloads} workloads: {len(looks)} configs timed once (not the default, not the config "
          f"the search ended on), {len(picks)} of them the oracle's pick")
    for t in thresholds:
        n = sum(1 for r, _ in looks if r < t)
        k = sum(1 for r in picks if r < t)
        print(f"  read under {t:g} x the end's: {n} ({n / max(1, workloads):.2f} per workload), "
              f"the oracle's pick {k}")
    print("oracle picks' ratios: " + (" ".join(f"{r:.2f}" for r in picks) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
