#!/usr/bin/env python3
"""The searches that kept NCCL's default while an arm read faster than it, from the search's own closing lines.

The leader logs one line per finished search at CCLTUNE_DEBUG=INFO with CCLTUNE_DEBUG_SUBSYS=OPT:
  ccltune INFO search of WORKLOAD [LO..HI B] done: STATE, A arms, S samples (Q asked of N, ...), relative to
  default: CFG=REL/N ... *default=1.000/N ...; noise X; [other fields; ]incumbent CFG ...
For every such line in the given log files (the testbed runs' .txt files), the searches whose incumbent is NCCL's
default are counted (N is the search's budget of entries), and of those the ones whose best other arm (the lowest relative time; at least --min-samples
samples) read under --bar of the default: a gain the search had seen and did not take. Of those, how many closed
before the budget was spent (fewer entries asked than the budget): the search chose to stop, it was not made to.
Each such search gives one line: file, workload, the best arm with its relative time and samples, entries asked of
the budget. The workload is ccltune's: all-gather and reduce-scatter are named by one rank's share, a quarter of
the bench row's bytes on 4 ranks (all-reduce by the row's bytes).

Usage: bench/search_kept_gains.py LOG [LOG ...] [--bar 0.95] [--min-samples 1]
A line that names a finished search (`search of ... done:`) in a form this script cannot read is counted and said on
stderr, with the first such line, rather than passed over. Exits 1 when no closing line was read.
"""
import argparse
import os
import re
import sys

from search_vs_oracle import ARM  # one arm of the closing line: CONFIG=RELATIVE/SAMPLES, NCCL's default starred

LINE = re.compile(r"search of (?P<workload>\S+) \[[^\]]*\] done: [^,]*, \d+ arms, \d+ samples "
                  r"\((?P<asked>\d+) asked of (?P<budget>\d+)[^)]*\), relative to default: (?P<arms>[^;]*); "
                  r"noise [^;]*; (?:[a-z]+ [^;]*; )*incumbent (?P<incumbent>\S+)")

DONE = re.compile(r"search of \S+ \[[^\]]*\] done:")


def parse_line(text):
    """One closing line as a dict (workload, asked, budget, incumbent, arms: [(name, relative, samples)]), or None."""
    m = LINE.search(text)
    if not m:
        return None
    arms = [(a.group(1), float(a.group(2)), int(a.group(3))) for a in ARM.finditer(m.group("arms"))]
    return {"workload": m.group("workload"), "asked": int(m.group("asked")), "budget": int(m.group("budget")),
            "incumbent": m.group("incumbent"), "arms": arms}


def best_other(search, min_samples):
    """The arm other than NCCL's default with the lowest relative time on at least min_samples samples, or None."""
    others = [a for a in search["arms"] if a[0] != "default" and a[2] >= min_samples]
    return min(others, key=lambda a: a[1]) if others else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--bar", type=float, default=0.95, help="an arm under this relative time counts as a gain")
    ap.add_argument("--min-samples", type=int, default=1, help="samples an arm needs to count")
    args = ap.parse_args(argv)
    searches = kept = unread = 0
    first_unread = None
    gains = []
    for path in args.logs:
        with open(path, errors="replace") as f:
            for text in f:
                s = parse_line(text)
                if s is None:
                    if DONE.search(text):
                        unread += 1
                        first_unread = first_unread or f"{os.path.basename(path)}: {text.strip()}"
                    continue
                searches += 1
                if s["incumbent"] != "default":
                    continue
                kept += 1
                b = best_other(s, args.min_samples)
                if b is not None and b[1] < args.bar:
                    gains.append((os.path.basename(path), s, b))
    if unread:
        print(f"{unread} closing search lines not in the expected form, not counted; the first: {first_unread}",
              file=sys.stderr)
    if searches == 0:
        print("no closing search line read", file=sys.stderr)
        return 1
    for name, s, b in gains:
        print(f"{name} {s['workload']}: {b[0]}={b[1]:.3f}/{b[2]} asked {s['asked']} of {s['budget']}")
    early = sum(1 for _, s, _ in gains if s["asked"] < s["budget"])
    print(f"{searches} searches, {kept} kept the default; {len(gains)} of those with an arm under {args.bar} "
          f"(at least {args.min_samples} samples), {early} before the budget was spent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
