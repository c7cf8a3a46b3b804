"""Statistics of the PyTorch A/B evaluation (bench/torch/driver.py): per-run step medians, the speed-up of
interleaved A/B pairs with a bootstrap interval, ccltune's tuning phase from its per-step summaries, the cost of
that phase, and loss deviations; and the stop and capture rules train.py applies to those summaries. Standard
library only: CI has no torch, and the unit test (tests/torch/ab_stats_test.py) runs there.
"""
import math
import random
import statistics


def median(xs):
    """Median of a non-empty sequence; None for an empty one."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def steady_median(step_ms, warmup):
    """Median step time after the first `warmup` steps (all steps when fewer remain)."""
    rest = step_ms[warmup:] if len(step_ms) > warmup else step_ms
    return median(rest)


def abba_order(pairs):
    """Job order of `pairs` interleaved A/B pairs: A B, B A, A B, ... (ABBA), so that a linear drift adds the
    same to A and B over every two pairs. Returns [(pair, "A"|"B"), ...]."""
    order = []
    for p in range(pairs):
        order += [(p, "A"), (p, "B")] if p % 2 == 0 else [(p, "B"), (p, "A")]
    return order


def pair_ratios(pairs):
    """Speed-up of each pair [default_ms, tuned_ms]: default / tuned (above 1: ccltune faster). Pairs with a
    missing or non-positive time are left out."""
    return [a / b for a, b in pairs if a is not None and b is not None and a > 0 and b > 0]


def bootstrap_ci(values, stat=None, level=0.95, resamples=10000, seed=1):
    """Percentile bootstrap interval of stat(values) (default: the median), reproducible from `seed`.
    Returns (low, high); (v, v) for a single value; (None, None) for none."""
    stat = stat or statistics.median
    n = len(values)
    if n == 0:
        return None, None
    if n == 1:
        return values[0], values[0]
    rng = random.Random(seed)
    est = sorted(stat([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    lo_i = int(math.floor((1 - level) / 2 * resamples))
    hi_i = min(resamples - 1, int(math.ceil((1 + level) / 2 * resamples)) - 1)
    return est[lo_i], est[hi_i]


def speedup_summary(pairs, level=0.95, resamples=10000, seed=1):
    """The speed-up of a list of pairs [default_ms, tuned_ms]: median of the per-pair ratios, its bootstrap
    interval and spread_pct, the interval's half-width in percent (of a ratio of 1)."""
    ratios = pair_ratios(pairs)
    lo, hi = bootstrap_ci(ratios, level=level, resamples=resamples, seed=seed)
    return {
        "pairs_used": len(ratios),
        "speedup": median(ratios),
        "ci_low": lo,
        "ci_high": hi,
        "spread_pct": None if lo is None else (hi - lo) / 2 * 100.0,
    }


def tuning_phase(summaries, settle=1, base_changes=0):
    """ccltune's tuning phase from one run's per-step summaries (dicts with "searching" and "changes", or None
    where ccltune was absent), one per step, recorded after the step.

    converge_step: the number of steps after which a search never ran again and the count of schedule updates no
    longer grew; 0 when neither ever happened. None when ccltune was absent, or when the last search or change was
    within the last `settle` steps (the run ended before it could show convergence). base_changes: the process-wide
    count of updates when the run (phase) started, since earlier phases' communicators count too.
    searching_steps: steps that ended with a search running. change_steps: steps during which updates applied."""
    if not summaries or any(s is None for s in summaries):
        return {"converge_step": None, "searching_steps": None, "change_steps": None}
    last_busy = -1
    searching_steps = change_steps = 0
    prev_changes = base_changes
    for i, s in enumerate(summaries):
        grew = s["changes"] > prev_changes
        prev_changes = s["changes"]
        searching_steps += 1 if s["searching"] > 0 else 0
        change_steps += 1 if grew else 0
        if s["searching"] > 0 or grew:
            last_busy = i
    step = last_busy + 1
    if last_busy >= 0 and len(summaries) - step < settle:
        step = None
    return {"converge_step": step, "searching_steps": searching_steps, "change_steps": change_steps}


# The decisions train.py takes from ccltune's per-step summaries. Every rank takes them from its own summaries and
# sends the verdict in the step's all-reduce; a step acts on it only when every rank agrees.


def quiet(summaries, n):
    """The last n summaries show no search running, and no update applied, no workload newly seen and none leaving
    the pending state between them."""
    last = summaries[-n:]
    if len(last) < n or None in last or any(s["searching"] > 0 for s in last):
        return False
    return all(len({s[k] for s in last}) == 1 for k in ("changes", "workloads", "pending"))


def settled(summaries, base_changes, settle, steps_done, tune_min):
    """Tune mode, this rank's opinion: ccltune has converged on this phase's workloads."""
    if steps_done < tune_min or not quiet(summaries, settle):
        return False
    # Before the first update nothing has been searched yet: not converged (unless tuning never starts).
    return summaries[-1]["changes"] > base_changes or steps_done >= 3 * tune_min


def ready_to_capture(summaries, base_changes, steps_done, eager_min, eager_max):
    """tp_graph, fixed mode, this rank's opinion: capture now. Without ccltune after eager_min steps; with it once
    what it imported is in place (an update applied or nothing pending) and nothing changes, or at eager_max."""
    if steps_done < eager_min:
        return False
    if steps_done >= eager_max or not summaries or summaries[-1] is None:
        return True
    last = summaries[-1]
    return quiet(summaries, 2) and (last["changes"] > base_changes or last["pending"] == 0)


def tuning_cost(tune_ms, converge_step, ref_ms_per_step, ref_steady_ms, tuned_steady_ms):
    """Time lost while tuning and recovered after it.

    tune_ms: the tuning run's step times; ref_ms_per_step: the default's step time at each step index (median over
    the default runs; shorter than tune_ms is fine: ref_steady_ms stands in for later steps). lost_ms: sum over the
    tuning steps of (tuning run - default). gain_ms_per_step: default - tuned in steady state. breakeven_steps: steps
    after convergence until the loss is paid back (None if there is no gain)."""
    if converge_step is None or ref_steady_ms is None:
        return {"lost_ms": None, "gain_ms_per_step": None, "breakeven_steps": None}
    lost = 0.0
    for i in range(min(converge_step, len(tune_ms))):
        ref = ref_ms_per_step[i] if i < len(ref_ms_per_step) and ref_ms_per_step[i] is not None else ref_steady_ms
        lost += tune_ms[i] - ref
    gain = None if tuned_steady_ms is None else ref_steady_ms - tuned_steady_ms
    breakeven = None
    if gain is not None and gain > 0:
        breakeven = max(0.0, lost) / gain
    return {"lost_ms": lost, "gain_ms_per_step": gain, "breakeven_steps": breakeven}


def per_step_median(runs):
    """Element-wise median of several step-time lists (of different lengths): index i over the runs that have it."""
    n = max((len(r) for r in runs), default=0)
    return [median([r[i] for r in runs if i < len(r)]) for i in range(n)]


def loss_deviation(ref, other):
    """Largest |other - ref| over the steps both have; inf if a value is not finite in one but not the other;
    None if they share no step."""
    n = min(len(ref), len(other))
    if n == 0:
        return None
    worst = 0.0
    for a, b in zip(ref[:n], other[:n]):
        if a is None or b is None:
            continue
        fa, fb = math.isfinite(a), math.isfinite(b)
        if not fa or not fb:
            if fa != fb or (a != b and not (math.isnan(a) and math.isnan(b))):
                return math.inf
            continue
        worst = max(worst, abs(a - b))
    return worst


def losses_match(ccltune_dev, nccl_spread):
    """ccltune's losses match when they are identical to the default's, or deviate no more than NCCL's own
    algorithm and protocol choices (and the default's run-to-run differences) do. None without data."""
    if ccltune_dev is None:
        return None
    if ccltune_dev == 0:
        return True
    if nccl_spread is None:
        return None
    return ccltune_dev <= nccl_spread
