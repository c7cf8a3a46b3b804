#!/usr/bin/env python3
"""The rows a search missed and how often it sampled the oracle's pick there. For each `--mode compare,oracle` JSON
file and the search trace beside it (CCLTUNE_TRACE: comm,workload,call,unit,config,us,role), every row whose
tuned/oracle, as bench/search_tally.py reads it (tuned on the default's communicator, tuned_us where a file lacks
it), exceeds --bar gives one line: run, collective, bytes, the oracle's config, the tuned config, t/o, t/d, then the
number of the search's samples (candidate, incumbent and default roles; monitoring excluded) of the oracle's config
and its first --first samples, each over the oracle's time for that config. A summary classifies the missed rows:
"default kept" (tuned is NCCL's default), "other subspace" (tuned's algorithm/protocol differs from the oracle's; of
those, how many a tree or PAT pick of the oracle lost to a ring config), "same subspace, other channels", and any
other kind (the oracle's pick is NCCL's default, or tuned is the oracle's config), then how many oracle picks had at
most 1 and at most 2 samples in the search.

Caveat: the trace names a call by the config the search asked for, so samples of the oracle's pick asked under
another name that NCCL ran the same (e.g. tree/simple/nc32 run as tree/simple/nc2 on a 2-channel communicator) are
not counted as samples of it.

Usage: bench/search_misses.py RUN.json [RUN.json ...] [--trace PATTERN] [--bar 1.05] [--first 4]
PATTERN (default "{dir}/trace-{stem}-*.csv") names each file's trace; {dir} and {stem} are the JSON file's folder
and name without ".json"; a file for which it matches no trace or several is skipped (said on stderr). Exits 1 when
no run was read or no row is past the bar.
"""
import collections
import os

from search_tally import tally_row
from testbed_ceiling import config_or_default_name
from trace_vs_oracle import oracle_times, rows_with_samples, run_parser, traced_runs

KINDS = ("default kept", "other subspace", "same subspace, other channels")


def subspace(name):
    """A config name's algorithm/protocol (NCCL's default is its own)."""
    return name.rsplit("/", 1)[0]


def kind_of(oracle, tuned):
    """The kind of a miss: how the tuned config differs from the oracle's."""
    if tuned == "default":
        return "default kept"
    if oracle == "default":
        return "oracle's pick is NCCL's default"
    if tuned == oracle:
        return "tuned is the oracle's config"
    if subspace(tuned) != subspace(oracle):
        return "other subspace"
    return "same subspace, other channels"


def misses(json_path, trace_path, bar):
    """[dict] for one run's rows past the bar: collective, bytes, oracle and tuned config names, t/o, t/d, and the
    search's samples of the oracle's config (in call order) over the oracle's time for it."""
    out = []
    for row, samples in rows_with_samples(json_path, trace_path):
        t = tally_row(row)
        if t is None or t["tuned"] / t["oracle"] <= bar:
            continue
        oracle = config_or_default_name(row.get("oracle_config"))
        us = oracle_times(row).get(oracle, t["oracle"])
        out.append({"collective": t["collective"], "bytes": t["bytes"], "oracle": oracle, "tuned": t["config"],
                    "t/o": t["tuned"] / t["oracle"], "t/d": t["tuned"] / t["default"],
                    "samples": [r.us / us for r in samples if r.config == oracle]})
    return out


def main():
    ap = run_parser(__doc__.splitlines()[0])
    ap.add_argument("--bar", type=float, default=1.05, help="tuned/oracle above which a row is a miss")
    ap.add_argument("--first", type=int, default=4, help="samples of the oracle's pick to print")
    a = ap.parse_args()
    runs = traced_runs(a.runs, a.trace)
    missed = []
    for path, trace in runs:
        for m in misses(path, trace, a.bar):
            m["run"] = os.path.basename(path)
            missed.append(m)
    if not runs:
        print("no run read: none has exactly one trace")
        return 1
    if not missed:
        print("%d runs: no row tuned/oracle > %.2f" % (len(runs), a.bar))
        return 1
    print("%d runs; rows tuned/oracle > %.2f: oracle's config, tuned config, t/o, t/d, the search's samples of the "
          "oracle's config and the first %d over the oracle's time for it" % (len(runs), a.bar, a.first))
    for m in missed:
        first = " ".join("%.3f" % s for s in m["samples"][:a.first])
        print("%s %s %d: oracle %s tuned %s t/o %.3f t/d %.3f | %d samples%s" % (
            m["run"], m["collective"], m["bytes"], m["oracle"], m["tuned"], m["t/o"], m["t/d"], len(m["samples"]),
            ": " + first if first else ""))
    kinds = collections.Counter(kind_of(m["oracle"], m["tuned"]) for m in missed)
    lost_to_ring = sum(kind_of(m["oracle"], m["tuned"]) == "other subspace" and m["oracle"].split("/")[0] in
                       ("tree", "pat") and m["tuned"].split("/")[0] == "ring" for m in missed)
    print("missed rows %d: %s" % (len(missed), "; ".join(
        "%s %d%s" % (k, kinds[k], " (tree or PAT oracle pick lost to a ring config %d)" % lost_to_ring
                     if k == "other subspace" else "")
        for k in KINDS + tuple(sorted(set(kinds) - set(KINDS))))))
    print("oracle's pick with at most 1 search sample: %d, at most 2: %d" % (
        sum(len(m["samples"]) <= 1 for m in missed), sum(len(m["samples"]) <= 2 for m in missed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
