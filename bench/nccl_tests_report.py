#!/usr/bin/env python3
"""The report of scripts/gpu-nccl-tests-ab.sh: nccl-tests with and without ccltune, interleaved launches.

Reads OUT/r<round>-<collective>-<off|on>.log (nccl-tests' output; with ccltune, its exit summary) and
OUT/r<round>-<collective>-on.json (ccltune's export of that launch). Per collective and size it prints the
time without ccltune and with it (each launch's time: the mean of nccl-tests' out-of-place and in-place
times, each the average over its timed calls), per round the ratio off/on of the two launches of that
round (adjacent, order alternating), their geometric mean with a 95% interval (t over the rounds' log
ratios), and the launch-to-launch noise of the same arm (A/A: the spread of one arm's times over the
rounds, as the geometric standard deviation). Then ccltune's side: per launch, how many workloads the
export holds by state, and the data checks (#wrong) of every launch.

Usage: bench/nccl_tests_report.py OUT [--json FILE]
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

# Two-sided 95% t quantiles by degrees of freedom (rounds - 1).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}

LOG_NAME = re.compile(r"r(\d+)-([a-z_]+)-(off|on)\.log$")


def parse_log(path):
    """{bytes: (oop_us, ip_us, wrong)} from one nccl-tests log, and whether it ended cleanly."""
    rows = {}
    ok = False
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("# Avg bus bandwidth"):
                ok = True
            t = line.split()
            # size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
            if len(t) >= 13 and t[0].isdigit() and t[1].isdigit():
                try:
                    oop, ip = float(t[5]), float(t[9])
                    wrong = int(t[8]) + int(t[12]) if t[8].isdigit() and t[12].isdigit() else -1
                except ValueError:
                    continue
                rows[int(t[0])] = (oop, ip, wrong)
    return rows, ok


def parse_summary(path):
    """{bytes: (tuned config, ccltune's own speed-up)} from ccltune's exit summary in a log."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            t = line.split()
            # host:pid:tid [rank] ccltune collective bytes size_class dtype op nccl_default default_us tuned ran
            #   tuned_us speedup samples state
            if len(t) >= 16 and t[2] == "ccltune" and t[4].isdigit() and t[15] in ("converged", "searching",
                                                                                   "imported", "default"):
                out[int(t[4])] = (t[10], t[13])
    return out


def export_states(path):
    """{state: count} of the workloads in one ccltune export, None where there is none."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    states = {}
    for block in doc.get("configs", []):
        for w in block.get("workloads", []):
            states[w.get("state", "?")] = states.get(w.get("state", "?"), 0) + 1
    return states


def geo_interval(log_ratios):
    n = len(log_ratios)
    g = math.exp(statistics.fmean(log_ratios))
    if n < 2:
        return g, None, None
    half = T95.get(n - 1, 2.0) * statistics.stdev(log_ratios) / math.sqrt(n)
    return g, g * math.exp(-half), g * math.exp(half)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--json", help="write the figures as JSON here")
    a = ap.parse_args()
    launches = {}
    for path in sorted(glob.glob(os.path.join(a.out, "r*-*.log"))):
        m = LOG_NAME.search(os.path.basename(path))
        if not m:
            continue
        rnd, coll, arm = int(m.group(1)), m.group(2), m.group(3)
        rows, ok = parse_log(path)
        states = export_states(path[: -len(".log")] + ".json") if arm == "on" else None
        summary = parse_summary(path) if arm == "on" else {}
        launches[(rnd, coll, arm)] = {"rows": rows, "ok": ok, "states": states, "summary": summary}
    if not launches:
        sys.exit(f"nccl_tests_report: no r<round>-<collective>-<arm>.log in {a.out}")
    colls = sorted({k[1] for k in launches})
    rounds = sorted({k[0] for k in launches})
    result = {"rounds": rounds, "collectives": {}}
    bad = 0
    for (rnd, coll, arm), l in sorted(launches.items()):
        wrong = sum(max(v[2], 0) for v in l["rows"].values())
        if not l["ok"] or wrong or any(v[2] < 0 for v in l["rows"].values()):
            bad += 1
            print(f"launch r{rnd} {coll} {arm}: {'did not finish' if not l['ok'] else ''} wrong={wrong}")
    for coll in colls:
        sizes = sorted({s for (r, c, _), l in launches.items() if c == coll for s in l["rows"]})
        print(f"\n{coll}: time per call in us (mean of out-of-place and in-place), rounds {rounds}")
        print(f"{'bytes':>10} {'off_us':>9} {'on_us':>9} {'off/on per round':>24} {'geomean':>8} "
              f"{'95% interval':>15} {'A/A off':>8} {'A/A on':>7}")
        per_size = []
        for s in sizes:
            ratios, offs, ons, same, tuned = [], [], [], [], []
            for r in rounds:
                off = launches.get((r, coll, "off"), {}).get("rows", {}).get(s)
                on = launches.get((r, coll, "on"), {}).get("rows", {}).get(s)
                if off:
                    offs.append((off[0] + off[1]) / 2)
                if on:
                    ons.append((on[0] + on[1]) / 2)
                if off and on:
                    ratios.append(((off[0] + off[1]) / 2) / ((on[0] + on[1]) / 2))
                    cfg = launches[(r, coll, "on")]["summary"].get(s, ("?", "?"))[0]
                    # Rounds where ccltune kept NCCL's default: both arms ran the same config (A/A).
                    (same if cfg == "default" else tuned).append((ratios[-1], cfg))
            if not ratios:
                continue
            g, lo, hi = geo_interval([math.log(x) for x in ratios])
            gsd = lambda xs: math.exp(statistics.stdev([math.log(x) for x in xs])) if len(xs) > 1 else float("nan")
            interval = f"{lo:.3f}-{hi:.3f}" if lo else "-"
            print(f"{s:>10} {statistics.median(offs):>9.1f} {statistics.median(ons):>9.1f} "
                  f"{' '.join(f'{x:.3f}' for x in ratios):>24} {g:>8.3f} {interval:>15} {gsd(offs):>8.3f} "
                  f"{gsd(ons):>7.3f}")
            split = {}
            for name, part in (("kept_default", same), ("tuned", tuned)):
                if part:
                    pg, plo, phi = geo_interval([math.log(x) for x, _ in part])
                    split[name] = {"rounds": len(part), "geomean": pg, "ci95": [plo, phi] if plo else None,
                                   "configs": sorted({c for _, c in part})}
                    iv = f" ({plo:.3f}-{phi:.3f})" if plo else ""
                    print(f"{'':>10}   {name}: {len(part)} rounds, off/on {pg:.3f}{iv}, configs "
                          f"{', '.join(sorted({c for _, c in part}))}")
            per_size.append({"bytes": s, "off_us": offs, "on_us": ons, "ratio_off_on": ratios, "geomean": g,
                             "ci95": [lo, hi] if lo else None, "aa_gsd_off": gsd(offs), "aa_gsd_on": gsd(ons),
                             "by_decision": split})
        allg = [math.log(p["geomean"]) for p in per_size]
        overall = math.exp(statistics.fmean(allg)) if allg else float("nan")
        print(f"{coll}: geomean over sizes of off/on {overall:.3f}")
        states = {r: launches.get((r, coll, "on"), {}).get("states") for r in rounds}
        print(f"{coll}: ccltune export states per round: "
              + "; ".join(f"r{r} {st}" for r, st in states.items()))
        result["collectives"][coll] = {"sizes": per_size, "geomean_off_on": overall,
                                       "export_states": {str(r): st for r, st in states.items()}}
    print(f"\nlaunches: {len(launches)}, failed or with wrong data: {bad}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
