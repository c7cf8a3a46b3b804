#!/usr/bin/env python3
"""How a config's timings in a search depend on how many calls of it came right before. For each `--mode
compare,oracle` JSON file and the search trace beside it (CCLTUNE_TRACE: comm,workload,call,unit,config,us,role),
every sample of a config the oracle confirmed (candidate, incumbent and default roles; monitoring excluded) is
divided by the oracle's figure for that config in the same run (its median over the confirmation rounds, each a
block of calls in a row; its screening time for a candidate without one) and filed under its position in its run of calls: 0 for a call whose previous call of the
workload ran another config or was not timed (the trace cannot say what an untimed call ran), k for the k-th call of
the same config after such a call, positions from --max-position on pooled. Per collective, size and config, the
median ratio and the sample count at each position: a config whose ratio stays above 1 at high positions reads slower
in the search's context than in the oracle's blocks however long it runs; one whose ratio falls to 1 after a few
calls only needs calls in a row. With --by-role the samples are filed by their role instead: `candidate` (a call the
search asked for, most often right after another config) or `incumbent` (the waiting config's calls while nothing is
scheduled, in runs of calls), and `default`.

With --by-previous the samples are filed by what ran in the call right before: `itself`, `default` (NCCL's default),
`same subspace` (other channels of its algorithm/protocol), `other subspace`, or `untimed` (that call was not timed).
With --tail R, a last line gives, pooled over the configs shown other than NCCL's default, the share of samples at
each position (or role, or what ran before) that read more than R times the oracle's time: how often one call reads
far slow there.

Usage: bench/trace_run_position.py RUN.json [RUN.json ...] [--trace PATTERN] [--max-position 8] [--config NAME]
       [--by-role | --by-previous] [--tail R]
PATTERN (default "{dir}/trace-{stem}-*.csv") names each file's trace; {dir} and {stem} are the JSON file's folder
and name without ".json"; a file for which it matches no trace or several is skipped (said on stderr). --config
limits the output to configs whose name contains NAME.
"""
import argparse
import collections
import json
import statistics

from trace_default_context import subspace
from trace_vs_oracle import oracle_times, read_trace, trace_of, workload_name


def positions(rows):
    """[(config, position, us, role)] for one workload's trace rows (call, config, us, role): position in the run of
    consecutive timed calls of the same config."""
    out = []
    prev_call, prev_config, pos = None, None, 0
    for call, config, us, role in sorted(rows):
        pos = pos + 1 if prev_call is not None and call == prev_call + 1 and config == prev_config else 0
        prev_call, prev_config = call, config
        out.append((config, pos, us, role))
    return out


def previous(rows):
    """[(config, what ran in the call before, us, role)] for one workload's trace rows (call, config, us, role): `itself`,
    `default` (NCCL's default before another config), `same subspace` (other channels or chunk of its
    algorithm/protocol), `other subspace`, or `untimed` (the call before was not timed, or none)."""
    out = []
    prev_call, prev_config = None, None
    for call, config, us, role in sorted(rows):
        if prev_call is None or call != prev_call + 1:
            before = "untimed"
        elif prev_config == config:
            before = "itself"
        elif prev_config == "default":
            before = "default"
        else:
            before = "same subspace" if subspace(prev_config) == subspace(config) else "other subspace"
        prev_call, prev_config = call, config
        out.append((config, before, us, role))
    return out


def run_ratios(json_path, trace_path, max_position, file_by="position"):
    """[((collective, bytes, config), position (or role, or what ran before), sample / oracle)] for one run;
    `file_by`: position, role or previous."""
    with open(json_path) as f:
        run = json.load(f)
    nranks = run["meta"]["nranks"]
    by = collections.defaultdict(list)
    for r in read_trace(trace_path):
        by[r.workload].append((r.call, r.config, r.us, r.role))
    out = []
    for row in run["results"]:
        oracle = oracle_times(row)
        calls = by.get(workload_name(row, nranks), [])
        for (config, pos, us, role), (_, before, _, _) in zip(positions(calls), previous(calls)):
            if config in oracle:
                where = {"role": role, "previous": before}.get(file_by, min(pos, max_position))
                out.append(((row["collective"], row["bytes"], config), where, us / oracle[config]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--trace", default="{dir}/trace-{stem}-*.csv")
    ap.add_argument("--max-position", type=int, default=8)
    ap.add_argument("--config", default="")
    ap.add_argument("--by-role", action="store_true", help="file samples by role instead of position")
    ap.add_argument("--by-previous", action="store_true",
                    help="file samples by what ran in the call before instead of position")
    ap.add_argument("--tail", type=float, default=0,
                    help="also print, pooled over the configs shown other than NCCL's default, the share of samples "
                         "that read more than this many times the oracle's time, per position (or role, or what ran "
                         "before)")
    a = ap.parse_args()
    pooled = collections.defaultdict(lambda: collections.defaultdict(list))
    used = 0
    mode = "role" if a.by_role else "previous" if a.by_previous else "position"
    for path in a.runs:
        trace = trace_of(path, a.trace)
        if trace is None:
            continue
        used += 1
        for key, pos, ratio in run_ratios(path, trace, a.max_position, mode):
            pooled[key][pos].append(ratio)
    if not pooled:
        print("no samples of a config the oracle confirmed")
        return 1
    named = a.by_role or a.by_previous  # cells named by role or by what ran before, not by position
    if a.by_role:
        print("%d runs; per role: median of sample / oracle, samples" % used)
    elif a.by_previous:
        print("%d runs; per what ran in the call before: median of sample / oracle, samples" % used)
    else:
        print("%d runs; per position in a run of calls of the config (%d+ pooled): median of sample / oracle, samples" %
              (used, a.max_position))
    for (coll, nbytes, config), by_pos in sorted(pooled.items()):
        if a.config not in config:
            continue
        cells = " ".join("%s %.3f/%d" % (p if named else "p%d" % p, statistics.median(v), len(v))
                         for p, v in sorted(by_pos.items()))
        print("%-14s %9d %-18s %s" % (coll, nbytes, config, cells))
    if a.tail > 0:
        tails = collections.defaultdict(lambda: [0, 0])  # position (or role) -> [samples over the bar, samples]
        for (coll, nbytes, config), by_pos in pooled.items():
            if a.config not in config or config == "default":
                continue
            for p, v in by_pos.items():
                tails[p][0] += sum(1 for r in v if r > a.tail)
                tails[p][1] += len(v)
        cells = " ".join("%s %.3f/%d" % (p if named else "p%d" % p, k / n, n) for p, (k, n) in sorted(tails.items()))
        print("share over %g x the oracle's time, every config shown but NCCL's default: %s" % (a.tail, cells or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
