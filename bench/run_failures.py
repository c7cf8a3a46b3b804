#!/usr/bin/env python3
"""Which ccltune-bench --mode compare,oracle runs miss issue 12's done-when, and which single rows caused it.

A run meets the done-when when every collective's share of the headroom is >= --share-bar and every row's
tuned/default is <= --default-bar (rows and shares as bench/search_tally.py reads them: one-communicator tuned
time, the oracle's default and oracle times, share = sum of log gains over sum of log headrooms per collective).

Per run that misses it one line: the collectives below the share bar with their share and the rows past the
default bar (collective bytes t/d). Under it, per collective below the bar, the rows that each alone, with
its tuned time set to its oracle time, would lift that collective's share to the bar (collective bytes config
t/o; "none" when no single row does); a row marked "alone" would then make the whole run meet (no other
collective below the bar, no row past the default bar). At the end: runs read and meeting, and per
(collective, bytes) the runs in which that row alone lifts a failing share, and in how many it is alone.

Usage: bench/run_failures.py RUN1.json [RUN2.json ...] [--share-bar 0.85] [--default-bar 1.02]
"""
import argparse
import os

from search_tally import runs_of, shares


def below_bar(rows, bar):
    """{collective: share} of the collectives whose share is below bar (a NaN share, no headroom, is not)."""
    return {k: v for k, v in shares(rows).items() if v < bar}


def past_default(rows, bar):
    return [r for r in rows if r["tuned"] / r["default"] > bar]


def with_oracle(rows, i):
    """rows with row i's tuned time set to its oracle time."""
    fixed = dict(rows[i], tuned=rows[i]["oracle"])
    return rows[:i] + [fixed] + rows[i + 1:]


def lifts(rows, coll, share_bar, default_bar):
    """The rows of coll that each alone, at its oracle time, lift coll's share to share_bar: (row, whether the run
    would then meet the done-when)."""
    out = []
    for i, r in enumerate(rows):
        if r["collective"] != coll:
            continue
        fixed = with_oracle(rows, i)
        if shares(fixed)[coll] >= share_bar:
            out.append((r, not below_bar(fixed, share_bar) and not past_default(fixed, default_bar)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--share-bar", type=float, default=0.85)
    ap.add_argument("--default-bar", type=float, default=1.02)
    a = ap.parse_args()

    meeting, tally = 0, {}  # tally: (collective, bytes) -> [runs it lifts a failing share in, runs it is alone in]
    runs = runs_of(a.files)
    if runs is None:
        return 1
    for path, rows in runs:
        name = os.path.basename(path)
        below, past = below_bar(rows, a.share_bar), past_default(rows, a.default_bar)
        if not below and not past:
            meeting += 1
            continue
        print("%s: share < %.2f: %s | t/d > %.2f: %s" % (
            name, a.share_bar, " ".join("%s %.3f" % kv for kv in below.items()) or "none", a.default_bar,
            "; ".join("%s %d %.3f" % (r["collective"], r["bytes"], r["tuned"] / r["default"]) for r in past) or "none"))
        for coll in below:
            found = lifts(rows, coll, a.share_bar, a.default_bar)
            print("  %s lifted by one row: %s" % (coll, "; ".join(
                "%s %d %s t/o %.3f%s" % (r["collective"], r["bytes"], r["config"], r["tuned"] / r["oracle"],
                                         " alone" if alone else "") for r, alone in found) or "none"))
            for r, alone in found:
                t = tally.setdefault((r["collective"], r["bytes"]), [[], []])
                t[0].append(name)
                if alone:
                    t[1].append(name)

    print("runs read %d, meeting %d, failing %d" % (len(a.files), meeting, len(a.files) - meeting))
    print("rows whose oracle time alone lifts a failing share: runs | of them alone (the run would then meet)")
    for (coll, nbytes), (runs, alone) in sorted(tally.items(), key=lambda kv: (-len(kv[1][0]), kv[0])):
        print("  %s %d: %d | alone %d (%s)" % (coll, nbytes, len(runs), len(alone), " ".join(
            os.path.splitext(n)[0] + ("*" if n in alone else "") for n in runs)))
    if not tally:
        print("  none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
