#!/usr/bin/env python3
"""Where a search's timed calls went, by algorithm/protocol (CCLTUNE_TRACE: one CSV line per timed call on the
leader, comm,workload,call,unit,config,us,role): per trace file, per subspace (ring/ll, tree/simple, ...; NCCL's
default apart), the timed calls made while searching (monitoring calls after convergence left out), their time
in ms, and how many of them read at least --slow times the median of the same workload's default calls. What a
subspace costs a job while it is screened and raced, e.g. to weigh a rule that leaves it out (tree/ll at
all-reduce 256 KiB-16 MiB on the one-GPU testbed). Untimed calls (a config's first, the idle-stream ones) have no
line, so the figures are a lower bound of the time spent.

With --workload TEXT only the workloads whose key contains TEXT; with --rows also one line per workload and
subspace. A trace holds the leader's communicators; each file is one run.

Usage: bench/trace_subspaces.py TRACE.csv [TRACE.csv ...] [--slow K] [--workload TEXT] [--rows]
"""
import argparse
import collections
import csv
import os
import statistics
import sys

from trace_default_context import subspace  # 'ring/ll/nc2' -> 'ring/ll'; NCCL's default stays 'default'


def read(path, match):
    """(comm, workload) -> [(subspace, us)] of the calls timed while searching, and the workload's default times."""
    calls = collections.OrderedDict()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["role"] == "monitor" or (match and match not in r["workload"]):
                continue
            calls.setdefault((r["comm"], r["workload"]), []).append((subspace(r["config"]), float(r["us"])))
    return calls


def tally(calls, slow):
    """{subspace: [timed calls, ms, calls at >= slow x the workload's default median]} over every workload, and the
    same per workload: {(comm, workload): {subspace: [...]}}."""
    total = collections.OrderedDict()
    per = collections.OrderedDict()
    for key, lines in calls.items():
        defaults = [us for s, us in lines if s == "default"]
        ref = statistics.median(defaults) if defaults else None
        row = per.setdefault(key, collections.OrderedDict())
        for s, us in lines:
            for t in (total.setdefault(s, [0, 0.0, 0]), row.setdefault(s, [0, 0.0, 0])):
                t[0] += 1
                t[1] += us / 1000.0
                if ref and s != "default" and us >= slow * ref:
                    t[2] += 1
    return total, per


def fmt(s, t, slow):
    return "%-14s %5d calls %10.1f ms  %4d at >= %gx the default" % (s, t[0], t[1], t[2], slow)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--slow", type=float, default=2.0, help="a call this many times the default's median is slow")
    ap.add_argument("--workload", default="", help="only workloads whose key contains this text")
    ap.add_argument("--rows", action="store_true", help="one line per workload and subspace too")
    a = ap.parse_args()
    status = 0
    for path in a.traces:
        calls = read(path, a.workload)
        name = os.path.basename(path)
        if not calls:
            print("%s: no trace lines while searching%s" % (name, " for " + a.workload if a.workload else ""),
                  file=sys.stderr)
            status = 1
            continue
        total, per = tally(calls, a.slow)
        others = sum(t[1] for s, t in total.items() if s != "default")
        print("%s: %d workloads, %d timed calls while searching, %.1f ms (NCCL's default %.1f ms, other configs %.1f "
              "ms)" % (name, len(per), sum(t[0] for t in total.values()), sum(t[1] for t in total.values()),
                       total.get("default", [0, 0.0])[1], others))
        for s, t in sorted(total.items(), key=lambda kv: -kv[1][1]):
            print("  " + fmt(s, t, a.slow))
        if a.rows:
            for (_, workload), row in per.items():
                for s, t in row.items():
                    print("    %-40s %s" % (workload, fmt(s, t, a.slow)))
    return status


if __name__ == "__main__":
    sys.exit(main())
