#!/usr/bin/env python3
"""A search's calls per workload as one line of characters (CCLTUNE_TRACE: one CSV line per timed call on the
leader, comm,workload,call,unit,config,us,role), one character per call index of the workload from 0: `c` a
candidate (a config on trial, NCCL's default excluded), `d` NCCL's default, `i` the incumbent (the search's current
best, what runs while nothing else is scheduled: the waiting config), `m` a monitoring call after convergence, `.`
a call with no line (untimed). It shows where a search's calls go: screening, the waits for timings to come back,
the race, the round trip that delivers the decision.

With --period P, the characters of the P calls of each training iteration are grouped (a space between groups), for a
loop that runs each workload P times per iteration. Per workload, after the line: the last candidate or default call
asked for by the search (the last `c` or `d` before the first `m`), and the first monitoring call. The trace does
not tell a race's call of NCCL's default from a guard's probe of it, so a probe between the decision and the first
monitoring call would count as asked.

Usage: bench/trace_timeline.py TRACE.csv [--calls N] [--period P] [--match TEXT]
"""
import argparse
import collections
import csv

ROLE_CHAR = {"candidate": "c", "default": "d", "incumbent": "i", "monitor": "m"}


def timelines(path):
    """(comm, workload) -> {call index: role character}, in the order the workloads first appear."""
    out = collections.OrderedDict()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            calls = out.setdefault((r["comm"], r["workload"]), {})
            calls[int(r["call"])] = ROLE_CHAR.get(r["role"], "?")
    return out


def line(calls, n, period):
    chars = [calls.get(k, ".") for k in range(n)]
    if period <= 1:
        return "".join(chars)
    return " ".join("".join(chars[k:k + period]) for k in range(0, n, period))


def milestones(calls):
    """The last call the search asked for before its first monitoring call (None: none), and that first monitoring
    call (None: never monitored)."""
    first_m = min((k for k, ch in calls.items() if ch == "m"), default=None)
    asked = [k for k, ch in calls.items() if ch in "cd" and (first_m is None or k < first_m)]
    return (max(asked) if asked else None), first_m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--calls", type=int, default=0, help="calls shown per workload (0: up to its last line)")
    ap.add_argument("--period", type=int, default=1, help="calls per iteration, grouped")
    ap.add_argument("--match", default="", help="only workloads whose name contains this")
    a = ap.parse_args()
    tl = timelines(a.trace)
    if not tl:
        print("%s: no trace lines" % a.trace)
        return 1
    shown = [(key, calls) for key, calls in tl.items() if a.match in key[1]]
    if not shown:
        print("%s: no workload matches %r" % (a.trace, a.match))
        return 1
    width = max(len(w) for (_, w), _ in shown)
    for (comm, workload), calls in shown:
        n = a.calls if a.calls > 0 else max(calls) + 1
        last, first_m = milestones(calls)
        print("%-*s %s | last asked %s, first monitor %s" % (width, workload, line(calls, n, a.period),
                                                             "-" if last is None else last,
                                                             "-" if first_m is None else first_m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
