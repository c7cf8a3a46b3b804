#!/usr/bin/env python3
"""NCCL's default's timings in a search's trace (CCLTUNE_TRACE: comm,workload,call,unit,config,us,role) by what
ran before them. Each default sample is read over the median of its workload's default samples (same communicator)
and grouped by the collective, the gap in units to the workload's previous timed call (1: right after it; 2: one
untimed call between, the warm-up ccltune gives the default after another config when the workload runs back to
back; 3+: more) and that call's algorithm/protocol ("default" when it was the default). A group reading above 1
is a context that makes the default look slow, which makes every config compared with it look fast.

Per group: count, geometric mean and 75th percentile (nearest rank) of the ratios. Workloads with fewer than
--min-defaults default samples are skipped.

With --period P, also every timed call (configs with at least --min-defaults samples in the workload) over its
config's median, grouped by whether the call's unit falls on the workload's slowest phase modulo P (the phase whose
calls read highest by geometric mean) or elsewhere, for the default and the other configs: a loop that synchronizes
every P calls (ccltune-bench's tuning steps, --tune-step 8) makes the first call of each step absorb the ranks'
arrival skew. The phase is chosen on the same calls, so the "phase" group reads somewhat high by construction.

Usage: bench/trace_default_context.py TRACE.csv [TRACE.csv ...] [--min-defaults 5] [--min-group 5] [--period P]
"""
import argparse
import collections
import csv
import math

from trace_quantiles import quantile


def subspace(config):
    return "default" if config == "default" else "/".join(config.split("/")[:2])


def groups(paths, min_defaults):
    """{(collective, gap, previous subspace): [sample / workload's default median, ...]}"""
    out = collections.defaultdict(list)
    for path in paths:
        by = collections.defaultdict(list)
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                by[(r["comm"], r["workload"])].append((int(r["unit"]), r["config"], float(r["us"])))
        for (_, workload), calls in by.items():
            calls.sort()
            defaults = sorted(us for _, c, us in calls if c == "default")
            if len(defaults) < min_defaults:
                continue
            median = quantile(defaults, 0.5)
            for (pu, pc, _), (u, c, us) in zip(calls, calls[1:]):
                if c != "default":
                    continue
                gap = u - pu
                out[(workload.split("/")[0], "3+" if gap >= 3 else str(gap), subspace(pc))].append(us / median)
    return out


def phases(paths, min_samples, period):
    """{("phase" | "other", "default" | "config"): [call / its config's median, ...]}"""
    out = collections.defaultdict(list)
    for path in paths:
        by = collections.defaultdict(list)
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                by[(r["comm"], r["workload"], r["config"])].append((int(r["unit"]), float(r["us"])))
        calls = collections.defaultdict(list)  # (comm, workload) -> [(unit, ratio, is default)]
        for (comm, workload, config), v in by.items():
            if len(v) < min_samples:
                continue
            median = quantile(sorted(us for _, us in v), 0.5)
            calls[(comm, workload)] += [(u, us / median, config == "default") for u, us in v]
        for v in calls.values():
            logs = collections.defaultdict(list)
            for u, x, _ in v:
                logs[u % period].append(math.log(x))
            slow = max(logs, key=lambda p: sum(logs[p]) / len(logs[p]))
            for u, x, d in v:
                out[("phase" if u % period == slow else "other", "default" if d else "config")].append(x)
    return out


def summary(v):
    v.sort()
    gm = math.exp(sum(math.log(x) for x in v) / len(v))
    return f"n {len(v)}, geomean {gm:.3f}, p75 {quantile(v, 0.75):.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--min-defaults", type=int, default=5)
    ap.add_argument("--min-group", type=int, default=5)
    ap.add_argument("--period", type=int, default=0)
    a = ap.parse_args()
    for (coll, gap, prev), v in sorted(groups(a.traces, a.min_defaults).items()):
        if len(v) >= a.min_group:
            print(f"{coll} gap {gap} after {prev}: {summary(v)}")
    if a.period > 1:
        for (where, who), v in sorted(phases(a.traces, a.min_defaults, a.period).items()):
            print(f"period {a.period}, {who} on the {'slowest phase' if where == 'phase' else 'other phases'}: {summary(v)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
