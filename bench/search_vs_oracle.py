#!/usr/bin/env python3
"""How the search's reading of a config relative to NCCL's default compares with the oracle's. For each
`--mode compare,oracle` JSON file and the bench's text output beside it (the same name with ".txt", holding the
leader's "search of WORKLOAD [...] done: ... relative to default: CONFIG=RELATIVE/SAMPLES ..." lines, written with
CCLTUNE_DEBUG=INFO CCLTUNE_DEBUG_SUBSYS=OPT), every config of a row that the search measured on at least
--min-samples samples and the oracle timed in its blocks gives one pair: the search's relative time (its samples,
each over the default measured next to it) and the oracle's (the config's block time over the default's). The
pairs are pooled per config and size, and their medians printed, with the median of search / oracle: above 1, the
search reads the config slower against the default than the oracle's blocks do, and keeps the default where the
oracle's gain is that small. A workload searched more than once (a re-opened search) counts its last search.
The sizes of several collectives pool together; --collective keeps one (allreduce, allgather, reducescatter).

Usage: bench/search_vs_oracle.py RUN.json [RUN.json ...] [--config NAME] [--collective NAME] [--min-samples N]
       [--min-bytes B]
"""
import argparse
import collections
import json
import re
import statistics

from testbed_ceiling import config_name  # a JSON config as the logs write it
from trace_vs_oracle import workload_name  # a result row's workload as the leader names it

DONE = re.compile(r"search of (\S+) \[[^\]]*\] done: .*?relative to default: (.*?); noise")
ARM = re.compile(r"\*?(\S+)=([0-9.]+|inf)/(\d+)")


def readings(text):
    """{workload: {config: (relative, samples)}} from a run's "done" lines; the last line of a workload wins."""
    out = {}
    for m in DONE.finditer(text):
        out[m.group(1)] = {a.group(1): (float(a.group(2)), int(a.group(3))) for a in ARM.finditer(m.group(2))}
    return out


def pairs(json_path, text_path, min_samples=3, only=None, collective=None):
    """[(config, bytes, search relative, oracle relative)] for one run (only `collective`'s rows when given)."""
    with open(json_path) as f:
        run = json.load(f)
    with open(text_path) as f:
        read = readings(f.read())
    nranks = run["meta"]["nranks"]
    out = []
    for row in run["results"]:
        default = row.get("oracle_default_us")
        if not default or (collective and row.get("collective") != collective):
            continue
        searched = read.get(workload_name(row, nranks), {})
        for c in row.get("oracle_candidates") or []:
            name = config_name(c["config"])
            if name == "default" or (only and name != only) or not c.get("us"):
                continue
            rel, n = searched.get(name, (None, 0))
            if rel is not None and n >= min_samples:
                out.append((name, row["bytes"], rel, c["us"] / default))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--config", default=None, help="only this config (as the logs write it: ring/simple/nc1)")
    ap.add_argument("--collective", default=None, help="only this collective's rows (as the JSON names it)")
    ap.add_argument("--min-samples", type=int, default=3)
    ap.add_argument("--min-bytes", type=int, default=0)
    a = ap.parse_args()
    pooled = collections.defaultdict(list)
    for path in a.runs:
        text = path[: -len(".json")] + ".txt"
        try:
            found = pairs(path, text, a.min_samples, a.config, a.collective)
        except FileNotFoundError:
            print(f"{path}: no {text}, skipped")
            continue
        for name, size, s, o in found:
            if size >= a.min_bytes:
                pooled[(name, size)].append((s, o))
    for (name, size), v in sorted(pooled.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"{size} {name}: n {len(v)}, search {statistics.median(s for s, _ in v):.3f}, "
              f"oracle {statistics.median(o for _, o in v):.3f}, "
              f"search/oracle {statistics.median(s / o for s, o in v):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
