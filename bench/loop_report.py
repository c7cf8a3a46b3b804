#!/usr/bin/env python3
"""The training loops of ccltune-bench --mode loop: per file, the iteration after which every workload had settled,
the workload that settled last, the converged loop's median iteration against NCCL's default's (default/tuned > 1:
the tuned loop is faster), and what the iterations cost while searching (their total over as many of NCCL's
default's median). With --group, files whose names differ only in a trailing -N (l1-new-1.json, l1-new-2.json) are
also pooled: the mean iteration, and the geometric mean of default/tuned and of the searching cost.

Usage: bench/loop_report.py RUN1.json [RUN2.json ...] [--group]
"""
import argparse
import json
import math
import os
import re
import sys


def loop_of(path):
    """The file's loop figures as a dict, or None when it has no loop section with both medians."""
    with open(path) as f:
        loop = json.load(f).get("loop")
    if not loop or not loop.get("default_iter_us") or not loop.get("tuned_iter_us"):
        return None
    ws = loop.get("workloads", [])
    last = max(ws, key=lambda w: w["settled_at"] if w["settled_at"] > 0 else math.inf, default=None)
    tuning = [us for us in loop.get("tuning_iter_us", []) if us and us > 0]
    d, t = loop["default_iter_us"], loop["tuned_iter_us"]
    return {
        "repeat": loop.get("repeat", 1),
        "settled": loop.get("all_settled_at", 0),
        "last": last,
        "speedup": d / t,
        "cost": sum(tuning) / (len(tuning) * d) if tuning else None,
        "default_us": d,
        "tuned_us": t,
    }


def group_name(path):
    return re.sub(r"-\d+$", "", os.path.splitext(os.path.basename(path))[0])


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--group", action="store_true", help="pool files named alike but for a trailing -N")
    a = ap.parse_args()
    status = 0
    groups = {}
    for path in a.files:
        name = os.path.basename(path)
        r = loop_of(path)
        if r is None:
            print("%s: no loop section with both medians (ccltune-bench --mode loop, preloaded)" % name,
                  file=sys.stderr)
            status = 1
            continue
        groups.setdefault(group_name(path), []).append(r)
        last = r["last"]
        where = ("%s %d B at %d" % (last["collective"], last["bytes"], last["settled_at"])) if last else "none"
        settled = str(r["settled"]) if r["settled"] > 0 else "not all"
        cost = "%.3f" % r["cost"] if r["cost"] is not None else "n/a"
        print("%s: %d per iteration, all settled after %s (last: %s); per iteration default %.1f us, tuned %.1f us, "
              "default/tuned %.3f; while searching %s x the default's" %
              (name, r["repeat"], settled, where, r["default_us"], r["tuned_us"], r["speedup"], cost))
    if a.group:
        for g, rs in groups.items():
            done = [r["settled"] for r in rs if r["settled"] > 0]
            costs = [r["cost"] for r in rs if r["cost"] is not None]
            mean = "%.1f" % (sum(done) / len(done)) if done else "n/a"
            print("%s: %d runs, %d settled, mean iteration %s, geomean default/tuned %.3f, while searching %s" %
                  (g, len(rs), len(done), mean, geomean([r["speedup"] for r in rs]),
                   "%.3f" % geomean(costs) if costs else "n/a"))
    return status


if __name__ == "__main__":
    sys.exit(main())
