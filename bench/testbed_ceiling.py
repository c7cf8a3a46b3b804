#!/usr/bin/env python3
"""What one fixed config per row, known from other runs, scores on each recorded oracle run.

The testbed's done-when is judged on one run's oracle rounds: per collective the share of the headroom
(log geomean default/tuned over log geomean default/oracle) at least 0.85, every row tuned/default at most
1.02. Where two configs are within a few percent, the rounds of one run can order them either way, so even
a search that always ends on the config that is best over many runs can miss the row bar. This script
reads `ccltune-bench --mode compare,oracle --json` files that carry `oracle_candidates` (each candidate's
median over the oracle's rounds, NCCL's default among them) and asks, for each run, what a fixed choice would
have scored there: for every row, the config whose geomean ratio to the default over the *other* runs is
lowest (leave one out, so a run does not choose for itself; among the configs that run timed, so it can be
scored), kept only where that pooled gain exceeds --keep-default-below (else NCCL's default). A search that
adapts within a run can do better or worse than this; the figure says how much of a done-when miss the rounds'
own spread explains.

usage: bench/testbed_ceiling.py [--keep-default-below PCT ...] FILE.json...
"""
import argparse
import json
import math
import os
import statistics
import sys

COLLECTIVES = ("allreduce", "allgather", "reducescatter")
SHARE_BAR, ROW_BAR = 0.85, 1.02


def config_name(c):
    if c["algorithm"] == "default":
        return "default"
    return f"{c['algorithm']}/{c['protocol']}/nc{c['channels']}"


def config_or_default_name(c):
    """config_name of a JSON config that may be absent (None or empty: NCCL's default), as `default` then."""
    return config_name(c or {"algorithm": "default"})


def load(paths):
    """{run name: {(collective, bytes): {config: us}}} for the files whose rows carry oracle candidates."""
    runs = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        rows = {}
        for r in doc.get("results", []):
            cands = {config_name(c["config"]): c["us"] for c in r.get("oracle_candidates", [])}
            if "default" in cands:
                rows[(r["collective"], r["bytes"])] = cands
        if rows:
            runs[os.path.basename(path)] = rows
    return runs


def choose(runs, exclude, row, keep_default_below):
    """The config with the lowest geomean ratio to the default over the runs other than `exclude`, among those
    timed in at least half of them (and, when a run is excluded, timed in that run: it is scored there)."""
    logs = {}
    scored = runs[exclude][row] if exclude is not None else None
    for name, rows in runs.items():
        if name == exclude or row not in rows:
            continue
        d = rows[row]["default"]
        for c, us in rows[row].items():
            if scored is None or c in scored:
                logs.setdefault(c, []).append(math.log(us / d))
    if not logs:
        return "default", 1.0
    most = max(len(v) for v in logs.values())
    pooled = {c: statistics.fmean(v) for c, v in logs.items() if 2 * len(v) >= most}
    best = min(pooled, key=pooled.get)
    gain = math.exp(pooled[best])
    return (best if gain < 1 - keep_default_below / 100 else "default"), gain


def score(runs, keep_default_below):
    met = 0
    lines = []
    for name, rows in runs.items():
        shares, misses = {}, []
        for coll in COLLECTIVES:
            log_tuned = log_oracle = 0.0
            for row in sorted(r for r in rows if r[0] == coll):
                cands = rows[row]
                pick, _ = choose(runs, name, row, keep_default_below)
                us = cands[pick]
                log_tuned += math.log(cands["default"] / us)
                log_oracle += math.log(cands["default"] / min(cands.values()))
                if us / cands["default"] > ROW_BAR:
                    misses.append(f"{coll} {row[1]} {pick} t/d {us / cands['default']:.3f}")
            if log_oracle > 0:
                shares[coll] = log_tuned / log_oracle
        ok = not misses and all(s >= SHARE_BAR for s in shares.values())
        met += ok
        share_text = " / ".join(f"{shares[c]:.3f}" if c in shares else "-" for c in COLLECTIVES)
        verdict = "  meets" if ok else ""
        lines.append(f"  {name}: share {share_text}{verdict}" + "".join("; " + m for m in misses))
    return met, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep-default-below", type=float, action="append",
                    help="keep NCCL's default unless the pooled gain exceeds this many percent (repeatable; "
                    "default: 0, 3, 5)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    runs = load(args.files)
    if not runs:
        sys.exit("no file has rows with oracle_candidates")
    print(f"{len(runs)} runs with oracle candidates; share bar {SHARE_BAR}, row bar tuned/default {ROW_BAR}")
    rows = sorted({r for rs in runs.values() for r in rs})
    print("per row, over all runs: the best pooled config, its geomean ratio to the default, the spread of that "
          "ratio from run to run (sd of log)")
    for row in rows:
        pick, gain = choose(runs, None, row, 0)
        per_run = [math.log(rs[row][pick] / rs[row]["default"])
                   for rs in runs.values() if row in rs and pick in rs[row]]
        sd = statistics.stdev(per_run) if len(per_run) > 1 else 0.0
        print(f"  {row[0]:<14} {row[1]:>9} {pick:<16} {gain:.3f}  sd {sd:.3f}  runs {len(per_run)}")
    for keep in args.keep_default_below or [0.0, 3.0, 5.0]:
        met, lines = score(runs, keep)
        print(f"fixed choice, NCCL's default kept unless the pooled gain exceeds {keep:g}%: "
              f"{met} of {len(runs)} runs meet the done-when")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
