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
rows (sum of log gains over sum of log headrooms, per collective), and the rows past a bar. With --per-row,
then one line per collective and size over the files: how many runs, how many past each bar, mean calls.

With --model TABLE (runs on the simulated cluster: the landscape table it ran, SIMNCCL_MODEL_FILE), the same
bars on the table's own times, free of the oracle's measurement noise: the tuned config's table time over the
best table time of its row (NCCL's default included) and over the default's. The oracle's pick is the best of
several noisy medians, so a tuned config within a few percent of the best in the table can read past 1.05 in
the oracle's rounds; a row past the bar on the table's times is a pick the search really missed.

Usage: bench/search_tally.py RUN1.json [RUN2.json ...] [--calls-cap N] [--oracle-bar 1.05]
       [--default-bar 1.02] [--per-row] [--model TABLE]
"""
import argparse
import json
import math
import os
import sys

from check_results import TABLE_NAMES  # the JSON's collective names -> a landscape table's
from testbed_ceiling import config_or_default_name  # a JSON config as the trace and the logs write it


def tally_row(r):
    """A result row as the tally reads it: collective, bytes, tuned (one communicator), default, oracle, calls,
    config (the tuned config's name, `default` for NCCL's) and json_config (the JSON's config object, None where
    absent); None when tuned, default or oracle time is missing."""
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
        "json_config": r.get("config"),
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


# NCCL's algorithm and protocol numbers (the table's aA.pP.ncN names) by the names the JSON configs use.
ALGOS = {"tree": 0, "ring": 1, "collnet_direct": 2, "collnet_chain": 3, "nvls": 4, "nvls_tree": 5, "pat": 6}
PROTOS = {"ll": 0, "ll128": 1, "simple": 2}


def load_table(path):
    """{(table collective, bytes): {table config name: us}} from a landscape table (bench/landscape.hpp's format:
    `collective config bytes us busbw` lines, `#` comments)."""
    table = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#") or len(w) < 4:
                continue
            table.setdefault((w[0], int(w[2])), {})[w[1]] = float(w[3])
    return table


def table_name(c):
    """The table's name of a JSON config: `default`, or aA.pP.ncN; None where the table cannot name it (a chunk
    size, an algorithm or protocol it does not know)."""
    if not c or c.get("algorithm") == "default":
        return "default"
    if c.get("chunk_bytes") or c.get("algorithm") not in ALGOS or c.get("protocol") not in PROTOS:
        return None
    return "a%d.p%d.nc%d" % (ALGOS[c["algorithm"]], PROTOS[c["protocol"]], c.get("channels", 0))


def model_ratios(row, table):
    """(tuned / best, tuned / default) on the table's times for a tally_row, or None where the table lacks the
    row or the tuned config."""
    times = table.get((TABLE_NAMES.get(row["collective"], row["collective"]), row["bytes"]))
    name = table_name(row["json_config"])
    if not times or name not in times or "default" not in times:
        return None
    return times[name] / min(times.values()), times[name] / times["default"]


def per_row(rows, calls_cap, oracle_bar, default_bar):
    """Lines "collective bytes: runs N, t/o past P, t/d past Q, calls C" per (collective, bytes), in first-seen
    order: C is the mean converge calls over its runs (a run that never converged counts as calls_cap)."""
    by = {}
    for r in rows:
        by.setdefault((r["collective"], r["bytes"]), []).append(r)
    out = []
    for (coll, size), rs in by.items():
        p_o = sum(r["tuned"] / r["oracle"] > oracle_bar for r in rs)
        p_d = sum(r["tuned"] / r["default"] > default_bar for r in rs)
        c = sum(r["calls"] or calls_cap for r in rs) / len(rs)
        out.append("%s %d: runs %d, t/o past %d, t/d past %d, calls %.1f" % (coll, size, len(rs), p_o, p_d, c))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--calls-cap", type=int, default=300)
    ap.add_argument("--oracle-bar", type=float, default=1.05)
    ap.add_argument("--default-bar", type=float, default=1.02)
    ap.add_argument("--per-row", action="store_true", help="a line per collective and size over the files")
    ap.add_argument("--model", help="the landscape table the simulated runs used: the bars on its times too")
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
    if a.model:
        table = load_table(a.model)
        model, unknown, model_past = [], 0, []
        for path, rows in runs:
            for t in rows:
                m = model_ratios(t, table)
                if m is None:
                    unknown += 1
                    continue
                model.append(m)
                if m[0] > a.oracle_bar or m[1] > a.default_bar:
                    model_past.append("%s %s %d: %s table t/best %.3f t/d %.3f" % (
                        os.path.basename(path), t["collective"], t["bytes"], t["config"], m[0], m[1]))
        print("on the table's times (%s): rows %d (%d not in it) | tuned/best > %.2f: %d | tuned/default > %.2f: %d" %
              (os.path.basename(a.model), len(model), unknown, a.oracle_bar, sum(x > a.oracle_bar for x, _ in model),
               a.default_bar, sum(y > a.default_bar for _, y in model)))
        for line in model_past:
            print("  " + line)
    if a.per_row:
        print("per row (over the files):")
        for line in per_row(pooled, a.calls_cap, a.oracle_bar, a.default_bar):
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
