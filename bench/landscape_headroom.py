#!/usr/bin/env python3
"""How much of a recorded landscape's headroom is real: NCCL's default against the best config of each row,
in-sample and held out.

In-sample, the best config is picked and timed on the same samples (the median of every sample of each config),
which is what the oracle and the replay's truth do: with per-call noise of 10-30% and dozens of configs per
row, the best median is partly the luckiest one. Held out, the config is picked on all rounds but one and
timed on the round left out (NCCL's default too), once per round, and the ratios are averaged (geometric
mean): what a search could expect from the best pick those samples allow.

Usage: bench/landscape_headroom.py FILE.samples   (bench/landscape.hpp's samples format; min over ranks)
"""
import collections
import math
import statistics
import sys

from landscape_samples import read_samples


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    data = collections.defaultdict(lambda: collections.defaultdict(list))
    for s in read_samples(sys.argv[1]):
        data[(s.coll, s.bytes)][(s.config, s.round)].append(s.min_us)
    per_coll = collections.defaultdict(list)
    print(f"{'collective':15s} {'bytes':>9s} {'in-sample':>10s} {'held-out':>9s}")
    for (coll, size), cells in sorted(data.items()):
        configs = sorted({c for c, _ in cells})
        rounds = sorted({r for _, r in cells})

        def median(config, rs):
            v = [x for r in rs for x in cells.get((config, r), [])]
            return statistics.median(v) if v else math.inf

        inside = median("default", rounds) / min(median(c, rounds) for c in configs)
        held = []
        for r in rounds:
            rest = [x for x in rounds if x != r]
            best = min(configs, key=lambda c: median(c, rest))
            held.append(median("default", [r]) / median(best, [r]))
        outside = math.exp(sum(math.log(x) for x in held) / len(held))
        per_coll[coll].append((inside, outside))
        print(f"{coll:15s} {size:9d} {inside:10.3f} {outside:9.3f}")
    for coll, rows in per_coll.items():
        g = [math.exp(sum(math.log(r[i]) for r in rows) / len(rows)) for i in (0, 1)]
        print(f"{coll:15s} geomean in-sample {g[0]:.3f}, held-out {g[1]:.3f}")


if __name__ == "__main__":
    main()
