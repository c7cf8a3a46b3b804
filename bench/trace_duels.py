#!/usr/bin/env python3
"""Blocks of back-to-back calls of one config in a search trace, compared two by two on their settled calls, against
the oracle's rounds. For each `--mode compare,oracle` JSON file and the search trace beside it (CCLTUNE_TRACE), a
block is a run of at least --min-block timed calls of one config with consecutive call numbers (a gap of one untimed
call allowed: the bench's idle-stream call) and at least one asked for (role candidate). Blocks of two configs that
alternate (A B, A B A B) make one duel: A is the first block's config (the race's leader when the duel started), and
each side is read on its blocks' calls from the --settled-th on, by their median. Per duel one line: B's settled
median over A's, the oracle's time of B over A's, and whether the two agree on the faster one; then how many duels
agree, and of those where B read faster (the duel replaced the leader) how many the oracle agrees with.

Written for the twenty-eighth session's settled-duel experiment (docs/results/search-testbed.md), whose traces hold
such blocks; a trace without them gives no lines.

Usage: bench/trace_duels.py RUN.json [RUN.json ...] [--trace PATTERN] [--min-block 8] [--settled 5]
"""
import statistics

from trace_vs_oracle import oracle_times, rows_with_samples, run_parser, traced_runs


def blocks_of(samples, min_block):
    """[(config, [us, ...])]: the runs of at least `min_block` calls of one config in call order (consecutive call
    numbers, one missing call allowed between two), with at least one call asked for (role candidate)."""
    runs = []
    for s in samples:
        last = runs[-1] if runs else None
        if last and last["config"] == s.config and s.call - last["call"] <= 2:
            last["us"].append(s.us)
            last["call"] = s.call
            last["asked"] = last["asked"] or s.role == "candidate"
        else:
            runs.append({"config": s.config, "us": [s.us], "call": s.call, "asked": s.role == "candidate"})
    return [(r["config"], r["us"]) for r in runs if len(r["us"]) >= min_block and r["asked"]]


def duels_of(blocks, settled):
    """[(a, b, median settled b / median settled a)]: consecutive blocks of two configs alternating, up to four."""
    out = []
    i = 0
    while i + 1 < len(blocks):
        a, b = blocks[i][0], blocks[i + 1][0]
        if a == b:
            i += 1
            continue
        group = [blocks[i], blocks[i + 1]]
        while len(group) < 4 and i + len(group) < len(blocks) and blocks[i + len(group)][0] == group[-2][0]:
            group.append(blocks[i + len(group)])
        side = {c: [us for cfg, calls in group if cfg == c for us in calls[settled:]] for c in (a, b)}
        if side[a] and side[b]:
            out.append((a, b, statistics.median(side[b]) / statistics.median(side[a])))
        i += len(group)
    return out


def main():
    ap = run_parser(__doc__.splitlines()[0])
    ap.add_argument("--min-block", type=int, default=8)
    ap.add_argument("--settled", type=int, default=5)
    a = ap.parse_args()
    agree = total = replaced = replaced_right = 0
    for path, trace in traced_runs(a.runs, a.trace):
        for row, samples in rows_with_samples(path, trace):
            oracle = oracle_times(row)
            for first, second, ratio in duels_of(blocks_of(samples, a.min_block), a.settled):
                if first not in oracle or second not in oracle:
                    verdict, o = "oracle lacks one", float("nan")
                else:
                    o = oracle[second] / oracle[first]
                    same = (ratio < 1) == (o < 1)
                    verdict = "agree" if same else "disagree"
                    total += 1
                    agree += same
                    if ratio < 1:
                        replaced += 1
                        replaced_right += o < 1
                print("%s %s %d: %s then %s: duel %.3f, oracle %.3f, %s" % (
                    path, row["collective"], row["bytes"], first, second, ratio, o, verdict))
    print("duels the oracle timed both sides of: %d, agreeing with it: %d; the second config read faster (the leader "
          "replaced): %d, the oracle agreeing: %d" % (total, agree, replaced, replaced_right))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
