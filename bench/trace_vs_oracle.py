#!/usr/bin/env python3
"""How a search's own timings of a config compare with the oracle's block timing of the same config. For each
`--mode compare,oracle` JSON file and the search trace beside it (CCLTUNE_TRACE, one CSV line per timed call on
the leader: comm,workload,call,unit,config,us,role), every config the oracle confirmed (its candidates and NCCL's
default, each timed in blocks of back-to-back calls) that the search also sampled gives one ratio: the median (the
mean of the middle two for an even count: most configs have one to three samples) of the search's timings of it (candidate, incumbent and default roles) over the oracle's figure for it. The ratios
are pooled per group (a file's name without its trailing run number: keep-1, keep-2 -> keep), kind (NCCL's
default or another config) and size, and their median printed. A config whose ratio is far above NCCL's default's
is read slower in the search's context than on its own, which biases the search toward the default.

Usage: bench/trace_vs_oracle.py RUN.json [RUN.json ...] [--trace PATTERN]
PATTERN (default "{dir}/trace-{stem}-*.csv") names each file's trace; {dir} and {stem} are the JSON file's folder
and name without ".json"; a file for which it matches no trace or several is skipped (said on stderr).
"""
import argparse
import collections
import csv
import glob
import json
import os
import re
import statistics
import sys

from testbed_ceiling import config_name  # a JSON config as the trace writes it


def workload_name(row, nranks):
    """The trace's workload for a result row: all-gather and reduce-scatter are keyed by one rank's share."""
    coll, size = row["collective"], row["bytes"]
    if coll == "allreduce":
        return f"allreduce/{row['dtype']}/{row['op']}/{size}"
    if coll == "allgather":
        return f"allgather/{row['dtype']}/{size // nranks}"
    return f"{coll}/{row['dtype']}/{row['op']}/{size // nranks}"


def group_of(path):
    return re.sub(r"-?\d+$", "", os.path.basename(path)[: -len(".json")])


# The trace's roles of the search's own timings (its monitoring calls are left out).
SEARCH_ROLES = ("candidate", "incumbent", "default")

TraceRow = collections.namedtuple("TraceRow", "workload call config us role")


def read_trace(path, roles=SEARCH_ROLES):
    """A search trace's timed calls whose role is among `roles`, as TraceRows (call an int, us a float), in order."""
    with open(path, newline="") as f:
        return [TraceRow(r["workload"], int(r["call"]), r["config"], float(r["us"]), r["role"])
                for r in csv.DictReader(f) if r["role"] in roles]


def trace_of(json_path, pattern):
    """The trace of a run JSON file: the one file that `pattern` ({dir}: the file's folder, {stem}: its name without
    ".json") matches; None, said on stderr, when none or several do."""
    name = os.path.basename(json_path)
    stem = name[: -len(".json")] if name.endswith(".json") else name
    traces = sorted(glob.glob(pattern.format(dir=os.path.dirname(json_path) or ".", stem=stem)))
    if len(traces) != 1:
        print(f"{json_path}: {len(traces)} traces match, skipped", file=sys.stderr)
        return None
    return traces[0]


def run_parser(description):
    """An argument parser for runs with a trace beside each: `runs` (RUN.json ...) and --trace PATTERN."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--trace", default="{dir}/trace-{stem}-*.csv")
    return ap


def traced_runs(paths, pattern):
    """[(json_path, trace_path)] for the runs that `pattern` matches exactly one trace of (trace_of)."""
    return [(path, trace) for path in paths for trace in [trace_of(path, pattern)] if trace is not None]


def rows_with_samples(json_path, trace_path):
    """[(result row, the TraceRows of its workload in call order)] for one run and its trace."""
    with open(json_path) as f:
        run = json.load(f)
    by = collections.defaultdict(list)
    for r in read_trace(trace_path):
        by[r.workload].append(r)
    nranks = run["meta"]["nranks"]
    return [(row, sorted(by.get(workload_name(row, nranks), []), key=lambda r: r.call)) for row in run["results"]]


def oracle_times(row):
    """config name -> the oracle's time for it in a result row (its confirmation rounds, or its screening time when
    a candidate has no round time), NCCL's default as `default`."""
    out = {}
    for c in row.get("oracle_candidates") or []:
        us = c.get("us") or c.get("screen_us")
        if us:
            out[config_name(c["config"])] = us
    if row.get("oracle_default_us"):
        out["default"] = row["oracle_default_us"]
    return out


def ratios(json_path, trace_path):
    """[(kind, bytes, config, search median / oracle us)] for one run."""
    out = []
    for row, samples in rows_with_samples(json_path, trace_path):
        sampled = collections.defaultdict(list)
        for r in samples:
            sampled[r.config].append(r.us)
        for name, us in sorted(oracle_times(row).items()):
            if sampled.get(name):
                kind = "default" if name == "default" else "config"
                out.append((kind, row["bytes"], name, statistics.median(sampled[name]) / us))
    return out


def main():
    a = run_parser(__doc__.splitlines()[0]).parse_args()
    pooled = collections.defaultdict(list)
    for path, trace in traced_runs(a.runs, a.trace):
        for kind, size, _, r in ratios(path, trace):
            pooled[(group_of(path), kind, size)].append(r)
    for (group, kind, size), v in sorted(pooled.items()):
        print(f"{group} {kind} {size}: n {len(v)}, median search/oracle {statistics.median(v):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
