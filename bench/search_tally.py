#!/usr/bin/env python3
"""The search's figures over several ccltune-bench JSONs of --mode compare,oracle (simulated seeds, or
repeated GPU runs), against issue 12's bars: every row tuned/oracle <= 1.05 and tuned/default <= 1.02,
the share of the headroom captured per collective, and the mean calls to converge per workload.

The tuned side is one communicator (tuned_same_comm_us: ccltune's final config forced on the default's
communicator and re-timed next to NCCL's default in the oracle's rounds; tuned_us where a file lacks
it), the default is oracle_default_us and the oracle oracle_us, as in bench/search_report.py's
"1 comm" columns. A workload that never converged counts as --calls-cap calls (the bench's -n).

Per file one line: its shares, mean converge calls and the rows past either bar. Then the totals over
all files: rows past each bar, the worst ratios, mean/p90/max converge calls, shares over the pooled
rows (sum of log gains over sum of log headrooms, per collective), and the rows past a bar.

Usage: bench/search_tally.py RUN1.json [RUN2.json ...] [--calls-cap N] [--oracle-bar 1.05]
       [--default-bar 1.02]
"""
import argparse
import json
import math
import os
import sys

from testbed_ceiling import config_or_default_name  # a JSON config as the trace and the logs write it


def tally_row(r):
    """A result row as the tally reads it: collective, bytes, tuned (one communicator), default, oracle, calls and
    config (the tuned config's name, `default` for NCCL's); None when tuned, default or oracle time is missing."""
    tuned = r.get("tuned_same_comm_us") or r.get("tuned_us")
    default = r.get("oracle_default_us")
    oracle = r.get("oracle_us")
    if not (tuned and default and oracle):
        return None
    return {
        "collective": r["collective"],
        "bytes": r["bytes"],
        "tuned": tuned,
        "default": default,
        "oracle": oracle,
        "calls": r.get("converge_calls"),
        "config": config_or_default_name(r.get("config")),
    }


def rows_of(path):
    with open(path) as f:
        data = json.load(f)
    return [t for t in map(tally_row, data.get("results", [])) if t is not None]


def runs_of(paths):
    """[(path, rows_of(path))] for the files, or None (said on stderr) as soon as one has no compare,oracle rows."""
    out = []
    for path in paths:
        rows = rows_of(path)
        if not rows:
            print("%s: no compare,oracle rows" % path, file=sys.stderr)
            return None
        out.append((path, rows))
    return out


def shares(rows):
    acc = {}
    for r in rows:
        gain, room = acc.setdefault(r["collective"], [0.0, 0.0])
        acc[r["collective"]] = [gain + math.log(r["default"] / r["tuned"]), room + math.log(r["default"] / r["oracle"])]
    return {k: (g / h if h > 0 else float("nan")) for k, (g, h) in acc.items()}


def fmt_shares(s):
    return " ".join("%s %.3f" % (k, v) for k, v in s.items())  # three places: the bar is 0.85, and 0.8476 is below it


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--calls-cap", type=int, default=300)
    ap.add_argument("--oracle-bar", type=float, default=1.05)
    ap.add_argument("--default-bar", type=float, default=1.02)
    a = ap.parse_args()

    pooled, past, calls = [], [], []
    runs = runs_of(a.files)
    if runs is None:
        return 1
    for path, rows in runs:
        name = os.path.basename(path)
        mine = []
        for r in rows:
            n = r["calls"] if r["calls"] else a.calls_cap
            calls.append(n)
            t_o, t_d = r["tuned"] / r["oracle"], r["tuned"] / r["default"]
            if t_o > a.oracle_bar or t_d > a.default_bar:
                line = "%s %s %d: %s t/o %.3f t/d %.3f, %d calls" % (name, r["collective"], r["bytes"], r["config"], t_o,
                                                                    t_d, n)
                past.append(line)
                mine.append("%s %d t/o %.2f t/d %.2f" % (r["collective"], r["bytes"], t_o, t_d))
        pooled.extend(rows)
        mean = sum(r["calls"] or a.calls_cap for r in rows) / len(rows)
        print("%s: share %s | calls %.1f | past a bar: %s" % (name, fmt_shares(shares(rows)), mean,
                                                             "; ".join(mine) if mine else "none"))

    t_o = [r["tuned"] / r["oracle"] for r in pooled]
    t_d = [r["tuned"] / r["default"] for r in pooled]
    s = sorted(calls)
    print("files %d, rows %d" % (len(a.files), len(pooled)))
    print("rows tuned/oracle > %.2f: %d | rows tuned/default > %.2f: %d | worst tuned/oracle %.3f, tuned/default %.3f" %
          (a.oracle_bar, sum(x > a.oracle_bar for x in t_o), a.default_bar, sum(x > a.default_bar for x in t_d), max(t_o),
           max(t_d)))
    print("converge calls: mean %.1f, p90 %d, max %d" % (sum(s) / len(s), s[min(len(s) - 1, int(0.9 * len(s)))], s[-1]))
    print("share of the headroom (pooled rows): %s" % fmt_shares(shares(pooled)))
    for line in past:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
