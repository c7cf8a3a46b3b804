#!/usr/bin/env python3
"""The search's figures from a ccltune-bench JSON of --mode compare,oracle, as a Markdown report.

Per collective: geometric means of default/tuned and default/oracle over the rows, and the share of the
headroom captured, log(geomean default/tuned) / log(geomean default/oracle). Two measurements of the
tuned side:
  - two communicators: default_us (communicator A, NCCL's default) against tuned_us (B, tuned by ccltune,
    its whole runtime included), each call alternating between them; on a testbed where two communicators
    of the same ranks run at different speeds this carries that difference too;
  - one communicator: oracle_default_us against tuned_same_comm_us, ccltune's final config forced on A and
    re-timed in the oracle's confirmation rounds next to NCCL's default and the oracle's candidates.
The oracle is oracle_default_us / oracle_us (one communicator) in both.
Per row also the calls to converge, and tuned/default and tuned/oracle. With --runs, several JSON files
of compare runs (no oracle) add their two-communicator default/tuned per row.

Usage: bench/search_report.py ORACLE.json [--runs R1.json R2.json ...] [--labels L0 L1 ...]
"""
import argparse
import json
import math


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def share(gain, headroom):
    if not (headroom > 1):
        return float("nan")
    return math.log(gain) / math.log(headroom)


def cfg(c):
    if not c or c.get("algorithm") in (None, "default"):
        return "default"
    return "%s/%s/nc%d" % (c["algorithm"], c["protocol"], c.get("channels", 0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("oracle")
    ap.add_argument("--runs", nargs="*", default=[])
    ap.add_argument("--labels", nargs="*", default=[])
    a = ap.parse_args()
    rows = json.load(open(a.oracle))["results"]
    extra = [{(r["collective"], r["bytes"]): r for r in json.load(open(p))["results"]} for p in a.runs]
    labels = a.labels or (["this run"] + ["run %d" % (i + 2) for i in range(len(extra))])

    print("| collective | bytes | config | converge calls | 2 comms: default/tuned | 1 comm: default/tuned "
          "| 1 comm: default/oracle | 1 comm: tuned/oracle | oracle config |" +
          "".join(" %s: default/tuned (config) |" % l for l in labels[1:]))
    print("|---|---:|---|---:|---:|---:|---:|---:|---|" + "---|" * len(extra))
    per = {}
    for r in rows:
        d, t = r.get("default_us"), r.get("tuned_us")
        od, ts, o = r.get("oracle_default_us"), r.get("tuned_same_comm_us"), r.get("oracle_us")
        two = d / t if d and t else float("nan")
        one = od / ts if od and ts else float("nan")
        hr = od / o if od and o else float("nan")
        to = ts / o if ts and o else float("nan")
        p = per.setdefault(r["collective"], {"two": [], "one": [], "head": [], "calls": [], "runs": [[] for _ in extra]})
        p["two"].append(two)
        p["one"].append(one)
        p["head"].append(hr)
        if r.get("converge_calls"):
            p["calls"].append(r["converge_calls"])
        cells = []
        for i, e in enumerate(extra):
            x = e.get((r["collective"], r["bytes"]))
            v = x["default_us"] / x["tuned_us"] if x and x.get("default_us") and x.get("tuned_us") else float("nan")
            p["runs"][i].append(v)
            cells.append(" %.3f (%s) |" % (v, cfg(x.get("config")) if x else "?"))
        print("| %s | %d | %s | %s | %.3f | %.3f | %.3f | %.3f | %s |%s" % (
            r["collective"], r["bytes"], cfg(r.get("config")), r.get("converge_calls") or "n/a", two, one, hr, to,
            cfg(r.get("oracle_config")), "".join(cells)))
    print()
    print("| collective | geomean default/oracle | 2 comms: default/tuned, share | 1 comm: default/tuned, share "
          "| mean converge calls |" + "".join(" %s: default/tuned, share |" % l for l in labels[1:]))
    print("|---|---:|---:|---:|---:|" + "---:|" * len(extra))
    for coll, p in per.items():
        head = geomean(p["head"])
        two, one = geomean(p["two"]), geomean(p["one"])
        calls = sum(p["calls"]) / len(p["calls"]) if p["calls"] else float("nan")
        cells = "".join(" %.3f, %.3f |" % (geomean(v), share(geomean(v), head)) for v in p["runs"])
        print("| %s | %.3f | %.3f, %.3f | %.3f, %.3f | %.0f |%s" % (coll, head, two, share(two, head), one,
                                                                 share(one, head), calls, cells))


if __name__ == "__main__":
    main()
