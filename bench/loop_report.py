#!/usr/bin/env python3
"""The training loops of ccltune-bench --mode loop: per file, the iteration after which every workload had settled,
the workload that settled last, the converged loop's median iteration against NCCL's default's (default/tuned > 1:
the tuned loop is faster), and what the iterations cost while searching (their total over as many of NCCL's
default's median), and what the first N iterations cost (the mean of their timed iterations over NCCL's default's
median; N is --window, by default as many as the shortest searching loop of the files ran): the searching cost of each
loop covers its own iterations, so a loop that settles later averages in more converged ones, and two libraries' loops
compare on a window common to both. With --group, files whose names differ only in a trailing -N (l1-new-1.json,
l1-new-2.json) are also pooled: the mean iteration, and the geometric means of default/tuned, of the searching cost and
of the window's cost.

With --model TABLE (a landscape table, tests/data/landscapes/*.txt), each loop's final configs are also priced on the
table's times: the sum over its workloads of the default's time over the sum of the picked configs' (one call each),
which tells a worse set of picks from a converged loop's timing spread (with --group, their geometric mean). A
workload the table cannot price (no row, a config it lacks) is left out of both sums and counted.

Usage: bench/loop_report.py RUN1.json [RUN2.json ...] [--group] [--window N] [--model TABLE]
"""
import argparse
import json
import math
import os
import re
import sys

from check_results import TABLE_NAMES  # the JSON's collective names -> a landscape table's
from search_tally import load_table, table_name


def timed_over_default(iter_us, default_us):
    """The mean of the timed iterations (an untimed one reads 0 or less) over the default's median; None if none."""
    timed = [us for us in iter_us if us and us > 0]
    return sum(timed) / (len(timed) * default_us) if timed else None


def loop_of(path):
    """The file's loop figures as a dict, or None when it has no loop section with both medians."""
    with open(path) as f:
        loop = json.load(f).get("loop")
    if not loop or not loop.get("default_iter_us") or not loop.get("tuned_iter_us"):
        return None
    ws = loop.get("workloads", [])
    last = max(ws, key=lambda w: w["settled_at"] if w["settled_at"] > 0 else math.inf, default=None)
    d, t = loop["default_iter_us"], loop["tuned_iter_us"]
    return {
        "repeat": loop.get("repeat", 1),
        "settled": loop.get("all_settled_at", 0),
        "last": last,
        "speedup": d / t,
        "cost": timed_over_default(loop.get("tuning_iter_us", []), d),
        "tuning_iter_us": loop.get("tuning_iter_us", []),
        "default_us": d,
        "tuned_us": t,
        "workloads": ws,
    }


def picks_on_table(r, table):
    """(default / tuned summed over the loop's workloads on the table's times, workloads left unpriced), or
    (None, unpriced) when none could be priced. A workload's config is as the loop writes it: `default` or
    ALGO/PROTO/ncN."""
    default_sum = tuned_sum = 0.0
    unpriced = 0
    for w in r["workloads"]:
        times = table.get((TABLE_NAMES.get(w["collective"], w["collective"]), w["bytes"]), {})
        parts = w.get("config", "").split("/")
        if len(parts) == 3 and parts[2].startswith("nc") and parts[2][2:].isdigit():
            name = table_name({"algorithm": parts[0], "protocol": parts[1], "channels": int(parts[2][2:])})
        else:
            name = table_name({"algorithm": w.get("config")})
        if "default" not in times or name not in times:
            unpriced += 1
            continue
        default_sum += times["default"]
        tuned_sum += times[name]
    return (default_sum / tuned_sum if tuned_sum > 0 else None), unpriced


def window_cost(r, n):
    """The mean of the timed iterations among the loop's first n over the default's median; None when the loop ran
    fewer than n searching iterations or timed none of them."""
    first = r["tuning_iter_us"][:n]
    return timed_over_default(first, r["default_us"]) if len(first) >= n else None


def group_name(path):
    return re.sub(r"-\d+$", "", os.path.splitext(os.path.basename(path))[0])


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--group", action="store_true", help="pool files named alike but for a trailing -N")
    ap.add_argument("--window", type=int, default=0,
                    help="the first N searching iterations (default: as many as the shortest loop of the files)")
    ap.add_argument("--model", help="a landscape table: each loop's final configs priced on its times too")
    a = ap.parse_args()
    table = load_table(a.model) if a.model else None
    status = 0
    loops = []
    for path in a.files:
        r = loop_of(path)
        if r is None:
            print("%s: no loop section with both medians (ccltune-bench --mode loop, preloaded)" % os.path.basename(path),
                  file=sys.stderr)
            status = 1
            continue
        loops.append((path, r))
    window = a.window if a.window > 0 else min((len(r["tuning_iter_us"]) for _, r in loops), default=0)
    groups = {}
    for path, r in loops:
        r["window"] = window_cost(r, window)
        groups.setdefault(group_name(path), []).append(r)
        last = r["last"]
        where = ("%s %d B at %d" % (last["collective"], last["bytes"], last["settled_at"])) if last else "none"
        settled = str(r["settled"]) if r["settled"] > 0 else "not all"
        cost = "%.3f" % r["cost"] if r["cost"] is not None else "n/a"
        first = "%.3f" % r["window"] if r["window"] is not None else "n/a"
        print("%s: %d per iteration, all settled after %s (last: %s); per iteration default %.1f us, tuned %.1f us, "
              "default/tuned %.3f; while searching %s x the default's; first %d iterations %s x" %
              (os.path.basename(path), r["repeat"], settled, where, r["default_us"], r["tuned_us"], r["speedup"], cost,
               window, first))
        if table is not None:
            r["model"], unpriced = picks_on_table(r, table)
            print("  picks on %s: default/tuned %s (%d workloads not in it)" %
                  (os.path.basename(a.model), "%.3f" % r["model"] if r["model"] is not None else "n/a", unpriced))
    if a.group:
        for g, rs in groups.items():
            done = [r["settled"] for r in rs if r["settled"] > 0]
            costs = [r["cost"] for r in rs if r["cost"] is not None]
            firsts = [r["window"] for r in rs if r["window"] is not None]
            mean = "%.1f" % (sum(done) / len(done)) if done else "n/a"
            print("%s: %d runs, %d settled, mean iteration %s, geomean default/tuned %.3f, while searching %s, "
                  "first %d iterations %s" %
                  (g, len(rs), len(done), mean, geomean([r["speedup"] for r in rs]),
                   "%.3f" % geomean(costs) if costs else "n/a", window,
                   "%.3f" % geomean(firsts) if firsts else "n/a"))
            models = [r["model"] for r in rs if r.get("model") is not None]
            if table is not None:
                print("  picks on %s: geomean default/tuned %s" %
                      (os.path.basename(a.model), "%.3f" % geomean(models) if models else "n/a"))
    return status


if __name__ == "__main__":
    sys.exit(main())
