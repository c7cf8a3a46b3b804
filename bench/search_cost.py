#!/usr/bin/env python3
"""What the search cost in wall time, from ccltune-bench JSONs of --mode compare with --search-cost 1: per row, the
host wall time of the tuning loop on the tuned communicator (tune_calls calls in steps of --tune-step, each step a
stream synchronize and a flag exchange; ccltune's sync ops, its candidates and its waiting config included) over
that of the same loop on NCCL's default for as many calls, and the difference in ms. Per file the totals over its
rows: the time a job that ran each row's workload alone until it converged spent on top of NCCL's default (negative:
the search already paid for itself while searching). Host time: figures from the simulated cluster mean nothing.

Usage: bench/search_cost.py RUN1.json [RUN2.json ...] [--rows]
"""
import argparse
import json
import os
import sys


def cost_rows(path):
    """[(collective, bytes, tune_calls, tune_wall_us, default_wall_us)] of the rows that have both walls."""
    with open(path) as f:
        data = json.load(f)
    out = []
    for r in data.get("results", []):
        t, d = r.get("tune_wall_us"), r.get("default_wall_us")
        if t and d:
            out.append((r["collective"], r["bytes"], r.get("tune_calls", 0), t, d))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rows", action="store_true", help="one line per row too")
    a = ap.parse_args()
    status = 0
    for path in a.files:
        rows = cost_rows(path)
        name = os.path.basename(path)
        if not rows:
            print("%s: no rows with tune_wall_us and default_wall_us (run with --search-cost 1)" % name, file=sys.stderr)
            status = 1
            continue
        if a.rows:
            for coll, size, calls, t, d in rows:
                print("%s %s %d: %d calls, tuning %.1f ms, default %.1f ms, ratio %.3f, extra %+.1f ms" %
                      (name, coll, size, calls, t / 1e3, d / 1e3, t / d, (t - d) / 1e3))
        tt, dd = sum(r[3] for r in rows), sum(r[4] for r in rows)
        ratios = sorted(r[3] / r[4] for r in rows)
        print("%s: %d rows, %d calls; tuning %.1f ms against the default's %.1f ms: ratio %.3f, extra %+.1f ms; "
              "per row ratio median %.3f, max %.3f" % (name, len(rows), sum(r[2] for r in rows), tt / 1e3, dd / 1e3,
                                                       tt / dd, (tt - dd) / 1e3, ratios[len(ratios) // 2], ratios[-1]))
    return status


if __name__ == "__main__":
    sys.exit(main())
