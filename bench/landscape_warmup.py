#!/usr/bin/env python3
"""How many consecutive calls a config needs to reach its block time, from a recorded landscape's samples
(`ccltune-bench --mode landscape`, the PREFIX.samples file: one line per timed call, `coll bytes config round
block seq min_us max_us ran`, where seq counts the block's timed calls from 0 after its untimed warm-up calls).

Per row and config (what NCCL ran; NCCL's default as `default`): the median over blocks of the per-call maximum over
ranks at each of the first --positions seq positions, and the warm-up ratio, the median of the block's first --first
timed calls over the median of its last --last: a ratio well above 1 means the config reads slow for several calls
after a change of config, so a search that samples it in short runs reads it slower than a block (or a job that runs
it call after call) does. With --min-ratio R only configs whose ratio is at least R are shown. A row and config whose
blocks are too short for --first and --last is skipped (said on stderr).

Usage: bench/landscape_warmup.py PREFIX.samples [--first 3] [--last 12] [--positions 12] [--min-ratio 0]
"""
import argparse
import collections
import statistics
import sys

from landscape_samples import read_samples


def times_by_seq(path):
    """(coll, bytes, config) -> {seq: [max over ranks, one per block]}; config is what ran, or `default`."""
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for s in read_samples(path):
        out[(s.coll, s.bytes, "default" if s.config == "default" else s.ran)][s.seq].append(s.max_us)
    return out


def warmup_ratio(by_seq, first, last):
    """Median of the first `first` positions' samples over the median of the last `last` positions' (None when the
    blocks are too short to have both without overlap)."""
    seqs = sorted(by_seq)
    if len(seqs) < first + last:
        return None
    head = [x for s in seqs[:first] for x in by_seq[s]]
    tail = [x for s in seqs[-last:] for x in by_seq[s]]
    return statistics.median(head) / statistics.median(tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples")
    ap.add_argument("--first", type=int, default=3, help="a block's first timed calls")
    ap.add_argument("--last", type=int, default=12, help="a block's last timed calls, the block time")
    ap.add_argument("--positions", type=int, default=12, help="seq positions printed")
    ap.add_argument("--min-ratio", type=float, default=0.0, help="only configs with at least this warm-up ratio")
    a = ap.parse_args()
    data = times_by_seq(a.samples)
    if not data:
        print("%s: no samples" % a.samples)
        return 1
    shown = skipped = 0
    for (coll, nbytes, config), by_seq in sorted(data.items()):
        ratio = warmup_ratio(by_seq, a.first, a.last)
        if ratio is None:
            print("%s: %s %d %s skipped: blocks of %d timed calls are too short for --first %d --last %d" %
                  (a.samples, coll, nbytes, config, len(by_seq), a.first, a.last), file=sys.stderr)
            skipped += 1
            continue
        if ratio < a.min_ratio:
            continue
        shown += 1
        medians = " ".join("%.0f" % statistics.median(by_seq[s]) for s in sorted(by_seq)[:a.positions])
        print("%-15s %10d %-18s warm-up %.3f | %s" % (coll, nbytes, config, ratio, medians))
    if skipped == len(data):
        print("%s: every row's blocks are too short for --first %d --last %d" % (a.samples, a.first, a.last))
        return 1
    if shown == 0:
        print("no config with a warm-up ratio of at least %.3f" % a.min_ratio)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
