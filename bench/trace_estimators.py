#!/usr/bin/env python3
"""What a search's samples would pick under three estimators of a config's time, judged by the oracle. For each
`--mode compare,oracle` JSON file and the search trace beside it (CCLTUNE_TRACE: comm,workload,call,unit,config,us,
role), every row's samples in the trace (candidate, incumbent and default roles; monitoring excluded) are read in call
order, and each sample of a config other than NCCL's default is divided by the median of the 5 default samples
nearest to it in call number (ties: the earlier first), as the search reads a config relative to the local default
(optimizer/samples.cc, LocalDefault, kLocal = 5). For each config with at least --min-samples samples:
  pooled  the median of all its normalised samples;
  asked   the median of its candidate-role samples (the calls the search asked for); pooled with fewer than 2;
  offset  the median of all of them after its incumbent-role samples (the waiting config's calls) are multiplied by
          median(candidate) / median(incumbent), where it has at least --min-each of each role; else pooled.
Each estimator picks the config with the lowest value, NCCL's default at 1.0 (on a tie, the default); the line
`search` is the search's own final config in the row, judged the same way. A pick is judged by the oracle's time for
it (its confirmation rounds, or its screening time for a candidate without them) over the oracle's best time in the
row and over the oracle's time for NCCL's default; a pick the oracle has no time for counts as unknown. Per estimator:
rows, known, the geometric mean of pick/best over the known, the rows past --bar and the rows whose pick is slower
than the default by more than --default-bar; with --detail, the rows past --bar. A row without the oracle's default
time, or with fewer than 2 default samples in the trace, is skipped. The estimators read every sample in the trace,
those after the search converged included (the guard's probes of the default and of the runner-up), which the
search's own decision did not have.

Usage: bench/trace_estimators.py RUN.json [RUN.json ...] [--trace PATTERN] [--min-each 3] [--min-samples 4]
       [--bar 1.05] [--default-bar 1.02] [--detail]
PATTERN (default "{dir}/trace-{stem}-*.csv") names each file's trace; {dir} and {stem} are the JSON file's folder
and name without ".json"; a file for which it matches no trace or several is skipped (said on stderr). Exits 1 when
no row was read.
"""
import bisect
import collections
import math
import os
import statistics

from testbed_ceiling import config_or_default_name  # a JSON config as the trace writes it
from trace_vs_oracle import oracle_times, rows_with_samples, run_parser, traced_runs

LOCAL = 5  # default samples behind each normalised sample, as optimizer/samples.cc's kLocal
ESTIMATORS = ("pooled", "offset", "asked")
JUDGED = ESTIMATORS + ("search",)  # the search's own final config, judged as the estimators' picks are


def local_default(calls, us, call):
    """The median of the LOCAL default samples (calls, sorted, and their times us) nearest to `call` (ties: the
    earlier first)."""
    hi = bisect.bisect_left(calls, call)
    lo = hi - 1
    near = []
    while len(near) < LOCAL and (lo >= 0 or hi < len(calls)):
        if hi >= len(calls) or (lo >= 0 and call - calls[lo] <= calls[hi] - call):
            near.append(us[lo])
            lo -= 1
        else:
            near.append(us[hi])
            hi += 1
    return statistics.median(near)


def normalised(samples):
    """{config: [(role, sample / local default)]} for one workload's TraceRows in call order, NCCL's default's own
    left out; None with fewer than 2 default samples."""
    defaults = [r for r in samples if r.config == "default"]
    if len(defaults) < 2:
        return None
    calls, us = [r.call for r in defaults], [r.us for r in defaults]
    out = collections.defaultdict(list)
    for r in samples:
        if r.config != "default":
            out[r.config].append((r.role, r.us / local_default(calls, us, r.call)))
    return out


def estimate(values, how, min_each):
    """One config's estimate from its (role, normalised sample) pairs."""
    everything = [v for _, v in values]
    asked = [v for role, v in values if role == "candidate"]
    waiting = [v for role, v in values if role == "incumbent"]
    if how == "asked" and len(asked) >= 2:
        return statistics.median(asked)
    if how == "offset" and len(asked) >= min_each and len(waiting) >= min_each:
        scale = statistics.median(asked) / statistics.median(waiting)
        return statistics.median(asked + [v * scale for v in waiting])
    return statistics.median(everything)


def picks(by_config, min_samples, min_each):
    """{estimator: the config it picks}, NCCL's default at 1.0 and picked on a tie."""
    out = {}
    eligible = [(config, values) for config, values in sorted(by_config.items()) if len(values) >= min_samples]
    for how in ESTIMATORS:
        best, best_value = "default", 1.0
        for config, values in eligible:
            v = estimate(values, how, min_each)
            if v < best_value:
                best, best_value = config, v
        out[how] = best
    return out


def run_picks(json_path, trace_path, min_samples, min_each):
    """[(row, {estimator or "search": (pick, oracle time of the pick / oracle's best, and / oracle's default; both
    None when the oracle has no time for the pick)})] for one run's rows that are not skipped."""
    out = []
    for row, samples in rows_with_samples(json_path, trace_path):
        by_config = normalised(samples) if row.get("oracle_default_us") else None
        if by_config is None:
            continue
        oracle = oracle_times(row)
        best = min(oracle.values())
        chosen = picks(by_config, min_samples, min_each)
        chosen["search"] = config_or_default_name(row.get("config"))
        out.append((row, {how: (pick, oracle[pick] / best if pick in oracle else None,
                                oracle[pick] / oracle["default"] if pick in oracle else None)
                          for how, pick in chosen.items()}))
    return out


def main():
    ap = run_parser(__doc__.splitlines()[0])
    ap.add_argument("--min-each", type=int, default=3, help="offset: candidate and incumbent samples needed of each")
    ap.add_argument("--min-samples", type=int, default=4, help="samples a config needs to be picked")
    ap.add_argument("--bar", type=float, default=1.05, help="pick/best above which a row is counted")
    ap.add_argument("--default-bar", type=float, default=1.02, help="pick/default above which a row is counted")
    ap.add_argument("--detail", action="store_true", help="print the rows past the bar")
    a = ap.parse_args()
    runs = traced_runs(a.runs, a.trace)
    rows = [(os.path.basename(path), row, judged) for path, trace in runs
            for row, judged in run_picks(path, trace, a.min_samples, a.min_each)]
    if not rows:
        print("no row with the oracle's default time and 2 or more default samples in a trace")
        return 1
    print("%d runs; per estimator: rows, known (the oracle timed the pick), geometric mean of the pick's oracle time "
          "over the row's best, rows past %.2f, rows whose pick is past %.2f of the default" % (len(runs), a.bar,
                                                                                               a.default_bar))
    for how in JUDGED:
        known = [(name, row, judged[how]) for name, row, judged in rows if judged[how][1] is not None]
        geo = math.exp(statistics.fmean(math.log(r) for _, _, (_, r, _) in known)) if known else float("nan")
        past = [k for k in known if k[2][1] > a.bar]
        slower = sum(1 for k in known if k[2][2] > a.default_bar)
        print("%-6s rows %d known %d geo %.4f >%.2f: %d, t/d >%.2f: %d" %
              (how, len(rows), len(known), geo, a.bar, len(past), a.default_bar, slower))
        if a.detail:
            for name, row, (pick, ratio, _) in past:
                print("  %s %s %d: %s %.3f" % (name, row["collective"], row["bytes"], pick, ratio))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
