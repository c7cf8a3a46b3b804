#!/usr/bin/env python3
"""How a config's first timed call compares with its later ones in a search's trace (CCLTUNE_TRACE: one CSV line
per timed call on the leader, comm,workload,call,unit,config,us,role). Per trace file:

- per workload and config other than NCCL's default with at least --min-samples samples: its first sample (a call
  right after another config) over the median of its later ones, and the geometric mean of those ratios;
- per workload, its first candidate (the workload's first call of a forced config): that call over the median of
  the config's later samples, where there are some, and the median of those ratios over the workloads (and over
  all the files given).

Usage: bench/trace_first_calls.py TRACE.csv [TRACE.csv ...] [--min-samples 4]
"""
import argparse
import collections
import csv
import math
import statistics


def workloads(path):
    """The trace's rows per workload, in call order (units are the communicator's call count)."""
    by = collections.defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            by[r["workload"]].append((int(r["unit"]), r["config"], float(r["us"])))
    for rows in by.values():
        rows.sort()
    return by


def first_over_rest(rows, config):
    """The config's first sample over the median of its later ones (None without later ones)."""
    us = [u for _, c, u in rows if c == config]
    return us[0] / statistics.median(us[1:]) if len(us) > 1 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--min-samples", type=int, default=4)
    a = ap.parse_args()
    pooled = []
    for path in a.traces:
        by = workloads(path)
        ratios, firsts = [], []
        for w, rows in sorted(by.items()):
            counts = collections.Counter(c for _, c, _ in rows)
            for c, n in sorted(counts.items()):
                if c != "default" and n >= a.min_samples:
                    ratios.append(first_over_rest(rows, c))
            forced = [c for _, c, _ in rows if c != "default"]
            if forced:
                r = first_over_rest(rows, forced[0])
                print(f"{path}: {w} first candidate {forced[0]}: " + (f"{r:.3f} of its later calls" if r else "no later call"))
                if r:
                    firsts.append(r)
                    pooled.append(r)
        gm = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else float("nan")
        print(f"{path}: first sample over later ones, configs with >= {a.min_samples} samples: geomean {gm:.4f} "
              f"over {len(ratios)}")
        if firsts:
            print(f"{path}: first candidates with later calls: {len(firsts)}, median {statistics.median(firsts):.3f}, "
                  f"range {min(firsts):.3f}-{max(firsts):.3f}")
    if len(a.traces) > 1 and pooled:
        print(f"all files: first candidates with later calls: {len(pooled)}, median {statistics.median(pooled):.3f}, "
              f"range {min(pooled):.3f}-{max(pooled):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
