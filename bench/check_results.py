#!/usr/bin/env python3
"""Checks a ccltune-bench JSON against the acceptance criteria and prints a Markdown report.

Per row: tuned_us <= 1.05 x oracle_us, tuned_us <= 1.02 x default_us, converge_calls <= 300, the oracle's
confirmation stage consistent (oracle_confirmation_faults), and
mismatches == 0. With --table FILE (the reference-measurement format of shared/data), also the
geometric mean of default_us / tuned_us over 1-64 MiB per collective against the table's own
best-vs-default (configs up to --budget channels plus `default`). Exit status 1 if a check fails.

Usage: bench/check_results.py RESULTS.json [--table FILE] [--budget 24] [--oracle-slack 1.05]
       [--default-slack 1.02] [--max-converge 300] [--geo-tol 0.03]
"""
import argparse
import json
import math
import sys

TABLE_NAMES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
               "broadcast": "broadcast", "reduce": "reduce"}
MIB = 1 << 20


def table_headroom(path, budget):
    """{(collective, bytes): default/best} from a reference table."""
    default, best = {}, {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4 or line.startswith("#"):
                continue
            coll, cfg, size, us = parts[0], parts[1], int(parts[2]), float(parts[3])
            key = (coll, size)
            if cfg == "default":
                default[key] = us
            elif cfg.startswith("a") and ".nc" in cfg and int(cfg.split(".nc")[1]) <= budget:
                best[key] = min(best.get(key, math.inf), us)
            else:
                continue
    return {k: d / min(d, best.get(k, math.inf)) for k, d in default.items()}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def oracle_confirmation_faults(r):
    """The oracle's confirmation stage (ccltune-bench --oracle-confirm, on by default): NCCL's default is among the
    re-timed configs, each re-timed in 3 rounds, oracle_us is the best re-timed median and oracle_default_us the
    default's. Rows without candidates (no oracle, or --oracle-confirm 0) are not checked."""
    cands = r.get("oracle_candidates")
    if not cands or r.get("oracle_us") is None:
        return []
    faults = []
    is_default = [c["config"].get("algorithm") in (None, "default") and not c["config"].get("channels") for c in cands]
    if not any(is_default):
        faults.append("oracle: NCCL's default not re-timed")
    if any(len(c.get("rounds_us") or []) != 3 for c in cands):
        faults.append("oracle: a candidate without 3 re-timed rounds")
    timed = [c["us"] for c in cands if c.get("us") is not None]
    if not timed or abs(min(timed) - r["oracle_us"]) > 1e-9 * max(1.0, r["oracle_us"]):
        faults.append("oracle: oracle_us is not the best re-timed median")
    dflt = [c["us"] for c, d in zip(cands, is_default) if d]
    if dflt and "oracle_default_us" in r and r["oracle_default_us"] != dflt[0]:  # older files lack the field
        faults.append("oracle: oracle_default_us is not the default's re-timed median")
    return faults


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--table")
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--oracle-slack", type=float, default=1.05)
    ap.add_argument("--default-slack", type=float, default=1.02)
    ap.add_argument("--max-converge", type=int, default=300)
    ap.add_argument("--geo-tol", type=float, default=0.03)
    a = ap.parse_args()
    with open(a.results) as f:
        res = json.load(f)
    ok = True
    print(f"Results: `{a.results}` ({res['meta'].get('date', '?')}, {res['meta'].get('nranks')} ranks, "
          f"backend {res['meta'].get('backend')}, NCCL {res['meta'].get('nccl_version')}, "
          f"{res['meta'].get('iters')} iterations)\n")
    print("| collective | bytes | dtype | default µs | tuned µs | oracle µs | default/tuned | tuned/oracle "
          "| config | oracle config | converge calls | pass |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---|---:|---|")
    for r in res["results"]:
        d, t, o = r.get("default_us"), r.get("tuned_us"), r.get("oracle_us")
        conv = r.get("converge_calls")
        fails = []
        if t is None or d is None:
            fails.append("not measured")
        else:
            if t > a.default_slack * d:
                fails.append(f"tuned > {a.default_slack} x default")
            if o is not None and t > a.oracle_slack * o:
                fails.append(f"tuned > {a.oracle_slack} x oracle")
        if conv is None or conv > a.max_converge:
            fails.append(f"converge_calls {conv}")
        fails += oracle_confirmation_faults(r)
        ok &= not fails
        cfg = r.get("config") or {}
        ocfg = r.get("oracle_config") or {}

        def cs(c):
            if not c:
                return "-"
            if c.get("algorithm") in (None, "default") and not c.get("channels"):
                return "default"
            return f"{c.get('algorithm')}/{c.get('protocol')}/nc{c.get('channels')}"
        print(f"| {r['collective']} | {r['bytes']} | {r['dtype']} | {d:.2f} | {t:.2f} | "
              f"{(o if o is not None else float('nan')):.2f} | {d / t:.3f} | "
              f"{(t / o if o else float('nan')):.3f} | {cs(cfg)} | {cs(ocfg)} | {conv} | "
              f"{'yes' if not fails else 'NO: ' + '; '.join(fails)} |")
    mism = res.get("mismatches", -1)
    print(f"\nmismatches: {mism}")
    ok &= mism == 0
    if a.table:
        head = table_headroom(a.table, a.budget)
        print(f"\nGeometric mean of default/tuned over 1-64 MiB vs the table's best-vs-default "
              f"(configs up to {a.budget} channels plus default, `{a.table}`):\n")
        print("| collective | measured | table | ratio | within ±{:.0%} |".format(a.geo_tol))
        print("|---|---:|---:|---:|---|")
        for coll in sorted({r["collective"] for r in res["results"]}):
            rows = [r for r in res["results"] if r["collective"] == coll and MIB <= r["bytes"] <= 64 * MIB
                    and r.get("tuned_us") and r.get("default_us")]
            meas = geomean([r["default_us"] / r["tuned_us"] for r in rows])
            ref = geomean([head[(TABLE_NAMES[coll], r["bytes"])] for r in rows
                           if (TABLE_NAMES[coll], r["bytes"]) in head])
            within = abs(meas / ref - 1) <= a.geo_tol
            ok &= within
            print(f"| {coll} | {meas:.3f} | {ref:.3f} | {meas / ref:.3f} | {'yes' if within else 'NO'} |")
    print(f"\nall checks: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
