#!/usr/bin/env python3
"""Reads the leader's search trace (CCLTUNE_DEBUG=TRACE CCLTUNE_DEBUG_SUBSYS=OPT) from a bench log and says,
per workload, how much slower the timed call right after a sync op is than the others, and the noise the
search measured.

A line `sample <workload> unit <u> <config> <us> us` is one timed call, issued when the communicator had
completed u units; `search of <workload> done: ... noise <x>; incumbent <config> ...` ends a search. With
sync points every `--interval` units after the first at unit 1 (CCLTUNE_MIN_INTERVAL in a loop of one
workload: the bench's compare mode), the call issued at unit u follows a sync op when (u - 1) % interval == 0.
Per config of a workload: median of those calls minus median of the others; the report gives the median
of that difference over configs that have both kinds, and the number of such configs.

Usage: bench/sample_trace.py [--interval 2] LOG...
"""
import argparse
import re
import statistics
from collections import defaultdict

SAMPLE = re.compile(r"sample (\w+) unit (\d+) (\S+)( \(monitor\))? ([\d.]+) us")
DONE = re.compile(r"search of (\w+) done: .*?; noise ([\d.]+); incumbent (\S+)")


def analyse(path, interval):
    per = defaultdict(lambda: defaultdict(lambda: ([], [])))  # workload -> config -> (after sync, other)
    noise = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = SAMPLE.search(line)
            if m:
                w, u, cfg, us = m.group(1), int(m.group(2)), m.group(3), float(m.group(5))
                per[w][cfg][0 if (u - 1) % interval == 0 else 1].append(us)
                continue
            m = DONE.search(line)
            if m:
                noise[m.group(1)] = (float(m.group(2)), m.group(3))
    out = []
    for w, cfgs in per.items():
        diffs = [statistics.median(a) - statistics.median(b) for a, b in cfgs.values() if a and b]
        meds = [statistics.median(a + b) for a, b in cfgs.values()]
        n, inc = noise.get(w, (float("nan"), "?"))
        out.append((w, statistics.median(meds), statistics.median(diffs) if diffs else float("nan"), len(diffs),
                    n, inc))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--interval", type=int, default=2, help="units between sync points while searching")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    print("| log | workload | median µs | after sync − other, µs | configs | search noise | incumbent |")
    print("|---|---|---:|---:|---:|---:|---|")
    for path in a.logs:
        for w, med, d, n, noise, inc in analyse(path, a.interval):
            print(f"| {path} | {w[:8]} | {med:.1f} | {d:+.2f} | {n} | {noise:.4f} | {inc} |")


if __name__ == "__main__":
    main()
