#!/usr/bin/env python3
"""How much consecutive calls of one config resemble each other, in a landscape's samples file.

Reads `ccltune-bench --mode landscape` samples (PREFIX.samples: `collective bytes config round pos seq min_us
max_us ran`, the calls of a block in call order) or the simulated NCCL's `simnccl-fit-noise --simulate`
output, and prints, over blocks of exactly --block calls (12 in the recordings), of log(max over ranks):
  - the lag-1 autocorrelation of consecutive calls' deviations from their block's mean (independent calls
    give about -1/(block-1));
  - the variance of the difference between the block's two halves' means over what independent calls with
    the halves' own spread would give: how much a search that reads a stretch of calls as independent
    samples underestimates the error of its mean (the square root of this ratio).

usage: bench/serial_noise.py [--block N] [--min] FILE.samples...
"""
import argparse
import math
import statistics

from landscape_samples import read_samples


def blocks_of(path, use_min):
    """Each block's log(max over ranks) (the minimum with use_min), in call order: a block is a (collective, bytes,
    config, round, pos)."""
    blocks = {}
    for s in read_samples(path):
        blocks.setdefault(s[:5], []).append(math.log(s.min_us if use_min else s.max_us))
    return list(blocks.values())


def serial_stats(blocks, size):
    """(blocks used, lag-1 autocorrelation, variance ratio of the two halves' difference)."""
    num = den = observed = predicted = 0.0
    used = 0
    half = size // 2
    for v in blocks:
        if len(v) != size:
            continue
        used += 1
        m = statistics.fmean(v)
        d = [x - m for x in v]
        num += sum(d[i] * d[i + 1] for i in range(size - 1))
        den += sum(x * x for x in d)
        a, b = v[:half], v[half:2 * half]
        observed += (statistics.fmean(a) - statistics.fmean(b)) ** 2
        predicted += (statistics.variance(a) + statistics.variance(b)) / 2 * (2 / half)
    if used == 0 or den == 0 or predicted == 0:
        return used, float("nan"), float("nan")
    return used, num / den, observed / predicted


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--block", type=int, default=12, help="calls per block (default 12)")
    ap.add_argument("--min", action="store_true", help="the minimum over ranks instead of the maximum")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    for path in args.files:
        used, lag1, ratio = serial_stats(blocks_of(path, args.min), args.block)
        print(f"{path}: {used} blocks of {args.block}; lag-1 autocorrelation {lag1:+.2f}; "
              f"two {args.block // 2}-call means differ {ratio:.2f}x as much (variance) as independent calls "
              f"would (standard error x{math.sqrt(ratio):.2f})")


if __name__ == "__main__":
    main()
