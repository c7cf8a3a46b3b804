#!/usr/bin/env python3
"""Each config's timings in a search's trace (CCLTUNE_TRACE: one CSV line per timed call on the leader,
comm,workload,call,unit,config,us,role) as a distribution: per workload and config with at least --min-samples
samples, the count, the minimum, the 25th percentile and the median (nearest rank, over every role: candidate,
incumbent, monitor, default), and per workload the config lowest by each. Where calls are short and their timings
heavy-tailed, the median can rank configs differently from the low percentiles, which follow the config.

Usage: bench/trace_quantiles.py TRACE.csv [TRACE.csv ...] [--min-samples 8]
"""
import argparse
import collections
import csv


def quantile(sorted_us, p):
    """Nearest-rank quantile of a sorted list: the value at rank ceil(p * n), 1-based (p = 0: the minimum)."""
    n = len(sorted_us)
    k = max(1, -(-int(round(p * n * 1000)) // 1000))  # ceil(p * n) without float surprises
    return sorted_us[min(n, k) - 1]


def distributions(path, min_samples):
    """{workload: {config: (n, min, p25, median)}} for configs with at least min_samples timings."""
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            by[r["workload"]][r["config"]].append(float(r["us"]))
    out = {}
    for w, configs in by.items():
        rows = {}
        for c, us in configs.items():
            if len(us) < min_samples:
                continue
            us.sort()
            rows[c] = (len(us), us[0], quantile(us, 0.25), quantile(us, 0.5))
        if rows:
            out[w] = rows
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--min-samples", type=int, default=8)
    a = ap.parse_args()
    for path in a.traces:
        for w, rows in sorted(distributions(path, a.min_samples).items()):
            for c, (n, lo, p25, med) in sorted(rows.items(), key=lambda kv: kv[1][2]):
                print(f"{path}: {w} {c}: n {n}, min {lo:.2f}, p25 {p25:.2f}, median {med:.2f} us")
            by_p25 = min(rows, key=lambda c: rows[c][2])
            by_median = min(rows, key=lambda c: rows[c][3])
            agree = "same" if by_p25 == by_median else "differ"
            print(f"{path}: {w} lowest by p25 {by_p25}, by median {by_median} ({agree})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
