"""Unit tests of the PyTorch evaluation's statistics and reporting (bench/torch/ab_stats.py, report.py, and the
driver's plan and aggregation), which need no torch. Exit 77 (skipped under CTest) when they cannot be imported."""
import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "torch"))
try:
    import ab_stats
    import driver
    import report
except ImportError as e:  # pragma: no cover - a Python without what these modules need
    print(f"ab_stats_test: skipped: {e}")
    sys.exit(77)


def summ(searching=0, changes=0, pending=0, converged=1):
    return {"communicators": 1, "workloads": 2, "pending": pending, "searching": searching, "converged": converged,
            "other": 0, "calls": 0, "changes": changes}


class MedianAndOrder(unittest.TestCase):
    def test_median(self):
        self.assertEqual(ab_stats.median([3, 1, 2]), 2)
        self.assertEqual(ab_stats.median([4, 1, 2, 3]), 2.5)
        self.assertIsNone(ab_stats.median([]))
        self.assertEqual(ab_stats.median([None, 5]), 5)

    def test_steady_median_skips_warmup(self):
        self.assertEqual(ab_stats.steady_median([100, 90, 10, 11, 12], 2), 11)
        self.assertEqual(ab_stats.steady_median([100, 90], 5), 95)  # too few steps: all of them

    def test_abba(self):
        self.assertEqual(ab_stats.abba_order(3), [(0, "A"), (0, "B"), (1, "B"), (1, "A"), (2, "A"), (2, "B")])

    def test_abba_cancels_linear_drift(self):
        # A job's time grows linearly with its position; A and B are equally fast. Over ABBA blocks the sums match.
        order = ab_stats.abba_order(4)
        t = {(p, s): 10.0 + 0.5 * i for i, (p, s) in enumerate(order)}
        self.assertAlmostEqual(sum(t[p, "A"] for p in range(4)), sum(t[p, "B"] for p in range(4)))


class Speedup(unittest.TestCase):
    def test_ratios(self):
        self.assertEqual(ab_stats.pair_ratios([[10, 5], [9, 9], [None, 3], [4, 0]]), [2.0, 1.0])

    def test_bootstrap_edges(self):
        self.assertEqual(ab_stats.bootstrap_ci([]), (None, None))
        self.assertEqual(ab_stats.bootstrap_ci([1.2]), (1.2, 1.2))
        self.assertEqual(ab_stats.bootstrap_ci([1.1] * 10), (1.1, 1.1))

    def test_bootstrap_contains_median_and_is_reproducible(self):
        vals = [1.00, 1.02, 1.05, 1.03, 0.99, 1.04, 1.06, 1.01, 1.02, 1.03]
        lo, hi = ab_stats.bootstrap_ci(vals, seed=7)
        self.assertLessEqual(min(vals), lo)
        self.assertLessEqual(lo, ab_stats.median(vals))
        self.assertLessEqual(ab_stats.median(vals), hi)
        self.assertLessEqual(hi, max(vals))
        self.assertEqual((lo, hi), ab_stats.bootstrap_ci(vals, seed=7))

    def test_noisier_pairs_give_a_wider_interval(self):
        tight = [1.05 + 0.001 * ((i * 7) % 5 - 2) for i in range(12)]
        loose = [1.05 + 0.05 * ((i * 7) % 5 - 2) for i in range(12)]
        lo_t, hi_t = ab_stats.bootstrap_ci(tight)
        lo_l, hi_l = ab_stats.bootstrap_ci(loose)
        self.assertLess(hi_t - lo_t, hi_l - lo_l)

    def test_summary_spread_is_half_width_in_percent(self):
        pairs = [[10.0, 10.0 / r] for r in (1.00, 1.02, 1.05, 1.03, 0.99, 1.04, 1.06, 1.01, 1.02, 1.03)]
        s = ab_stats.speedup_summary(pairs)
        self.assertEqual(s["pairs_used"], 10)
        self.assertAlmostEqual(s["speedup"], 1.025)
        self.assertAlmostEqual(s["spread_pct"], (s["ci_high"] - s["ci_low"]) / 2 * 100)
        self.assertGreater(s["spread_pct"], 0)

    def test_summary_without_pairs(self):
        s = ab_stats.speedup_summary([])
        self.assertIsNone(s["speedup"])
        self.assertIsNone(s["spread_pct"])


class TuningPhase(unittest.TestCase):
    def test_absent(self):
        self.assertIsNone(ab_stats.tuning_phase([None, None])["converge_step"])
        self.assertIsNone(ab_stats.tuning_phase([])["converge_step"])

    def test_nothing_happens(self):
        t = ab_stats.tuning_phase([summ()] * 5)
        self.assertEqual((t["converge_step"], t["searching_steps"], t["change_steps"]), (0, 0, 0))

    def test_search_then_quiet(self):
        s = [summ(searching=1, changes=i + 1) for i in range(5)] + [summ(changes=5)] * 6
        t = ab_stats.tuning_phase(s)
        self.assertEqual(t["converge_step"], 5)
        self.assertEqual(t["searching_steps"], 5)

    def test_late_change_counts(self):
        # Search ends after step 3, but an update still applies during step 7 (e.g. the new incumbent).
        s = [summ(searching=1, changes=1)] * 4 + [summ(changes=1)] * 3 + [summ(changes=2)] + [summ(changes=2)] * 4
        self.assertEqual(ab_stats.tuning_phase(s)["converge_step"], 8)

    def test_still_busy_at_the_end_is_not_converged(self):
        s = [summ(searching=1, changes=i) for i in range(6)]
        self.assertIsNone(ab_stats.tuning_phase(s)["converge_step"])
        s = [summ(searching=1, changes=1)] * 5 + [summ(changes=1)]
        self.assertIsNone(ab_stats.tuning_phase(s, settle=2)["converge_step"])
        self.assertEqual(ab_stats.tuning_phase(s, settle=1)["converge_step"], 5)

    def test_base_changes_of_earlier_phases(self):
        # The process-wide counter stood at 40 when this phase began; an import applied at step 0.
        s = [summ(changes=41)] + [summ(changes=41)] * 5
        self.assertEqual(ab_stats.tuning_phase(s, base_changes=40)["converge_step"], 1)
        self.assertEqual(ab_stats.tuning_phase(s, base_changes=41)["converge_step"], 0)

    def test_cost(self):
        c = ab_stats.tuning_cost([12, 14, 11, 9, 9], 3, [10, 10], 10.0, 9.0)
        self.assertAlmostEqual(c["lost_ms"], 2 + 4 + 1)
        self.assertAlmostEqual(c["gain_ms_per_step"], 1.0)
        self.assertAlmostEqual(c["breakeven_steps"], 7.0)
        self.assertIsNone(ab_stats.tuning_cost([1], None, [], 1.0, 1.0)["lost_ms"])
        self.assertIsNone(ab_stats.tuning_cost([12], 1, [10], 10.0, 10.5)["breakeven_steps"])

    def test_per_step_median(self):
        self.assertEqual(ab_stats.per_step_median([[1, 2, 3], [3, 4], [2]]), [2, 3, 3])


class StopRules(unittest.TestCase):
    """train.py's per-rank verdicts: tuning converged (stop after --post steps), ready to capture the graph."""

    def test_quiet(self):
        self.assertTrue(ab_stats.quiet([summ(changes=3)] * 4, 3))
        self.assertFalse(ab_stats.quiet([summ(changes=3)] * 2, 3))  # too few steps yet
        self.assertFalse(ab_stats.quiet([summ(changes=2)] + [summ(changes=3)] * 2, 3))  # an update applied
        self.assertFalse(ab_stats.quiet([summ(changes=3, searching=1)] + [summ(changes=3)] * 2, 3))
        self.assertFalse(ab_stats.quiet([summ(changes=3, pending=1)] + [summ(changes=3)] * 2, 3))
        self.assertFalse(ab_stats.quiet([None] + [summ()] * 2, 3))

    def test_settled_needs_min_steps_and_an_update(self):
        s = [summ(changes=5)] * 10
        self.assertFalse(ab_stats.settled(s, 5, 8, 10, 20))  # before --tune-min
        self.assertFalse(ab_stats.settled(s, 5, 8, 30, 20))  # no update since the start: not searched yet
        self.assertTrue(ab_stats.settled(s, 5, 8, 60, 20))  # ... unless nothing happens for 3 x --tune-min
        self.assertTrue(ab_stats.settled(s, 4, 8, 30, 20))
        self.assertFalse(ab_stats.settled(s[:-1] + [summ(changes=5, searching=1)], 4, 8, 30, 20))

    def test_ready_to_capture(self):
        self.assertFalse(ab_stats.ready_to_capture([None] * 3, 0, 3, 4, 20))  # before --eager-min
        self.assertTrue(ab_stats.ready_to_capture([None] * 4, 0, 4, 4, 20))  # no ccltune
        imported = [summ(changes=1)] * 4
        self.assertTrue(ab_stats.ready_to_capture(imported, 0, 4, 4, 20))
        waiting = [summ(changes=0, pending=2, converged=0)] * 4  # the import is not applied yet
        self.assertFalse(ab_stats.ready_to_capture(waiting, 0, 4, 4, 20))
        self.assertTrue(ab_stats.ready_to_capture(waiting, 0, 20, 4, 20))  # at --eager-max in any case
        searching = [summ(changes=1)] * 3 + [summ(changes=2, searching=1)]
        self.assertFalse(ab_stats.ready_to_capture(searching, 0, 4, 4, 20))


class Losses(unittest.TestCase):
    def test_deviation(self):
        self.assertEqual(ab_stats.loss_deviation([1.0, 2.0], [1.0, 2.0]), 0)
        self.assertAlmostEqual(ab_stats.loss_deviation([1.0, 2.0, 3.0], [1.0, 2.5]), 0.5)
        self.assertEqual(ab_stats.loss_deviation([1.0, 2.0], [1.0, float("nan")]), math.inf)
        self.assertEqual(ab_stats.loss_deviation([float("nan")], [float("nan")]), 0)
        self.assertIsNone(ab_stats.loss_deviation([], [1.0]))

    def test_match(self):
        self.assertTrue(ab_stats.losses_match(0, None))
        self.assertTrue(ab_stats.losses_match(1e-3, 2e-3))
        self.assertTrue(ab_stats.losses_match(2e-3, 2e-3))
        self.assertFalse(ab_stats.losses_match(3e-3, 2e-3))
        self.assertFalse(ab_stats.losses_match(1e-6, 0))
        self.assertIsNone(ab_stats.losses_match(None, 1))
        self.assertIsNone(ab_stats.losses_match(1e-3, None))


class DriverPlanAndReport(unittest.TestCase):
    def args(self, *extra):
        return driver.parse_args(["--dry-plan", "--nproc", "2", "--lib", "none"] + list(extra))

    def test_budget_for_ten_pairs_keeps_them_all(self):
        # With the step times measured on 2xH200, ten pairs need about 560 s (docs/pytorch.md, Known limits).
        a = self.args("--budget-s", "600")
        plan = driver.make_plan(a, driver.ESTIMATES["cuda"])
        self.assertLessEqual(plan["total_s"], a.budget_s)
        self.assertEqual(plan["pairs"], 10)
        kinds = [j.kind for j in plan["jobs"]]
        self.assertEqual(kinds[0], "tune")
        self.assertEqual(kinds.count("A"), 10)
        self.assertEqual(kinds.count("B"), 10)
        self.assertGreaterEqual(kinds.count("spread"), 1)
        self.assertIn("nonblock", kinds)
        sides = [j.side for j in plan["jobs"] if j.kind in ("A", "B")]
        self.assertEqual(sides[:4], ["A", "B", "B", "A"])

    def test_default_budget_fits_by_cutting_pairs_last(self):
        a = self.args()
        plan = driver.make_plan(a, driver.ESTIMATES["cuda"])
        self.assertLessEqual(plan["total_s"], a.budget_s)
        self.assertLess(plan["pairs"], 10)
        self.assertGreaterEqual(plan["pairs"], 5)
        self.assertTrue(any("A/B pairs" in c for c in plan["cuts"]))

    def test_small_budget_cuts_and_says_so(self):
        a = self.args("--budget-s", "150")
        plan = driver.make_plan(a, driver.ESTIMATES["cuda"])
        self.assertLess(plan["pairs"], 10)
        self.assertGreaterEqual(plan["pairs"], 3)
        self.assertTrue(any("below the 10" in c for c in plan["cuts"]))
        self.assertEqual(len(plan["spreads"]), 1)

    def test_separate_jobs(self):
        a = self.args("--separate", "--workloads", "ddp,tp", "--pairs", "2", "--budget-s", "1000")
        plan = driver.make_plan(a, driver.ESTIMATES["cuda"])
        self.assertTrue(all(len(j.workloads) == 1 for j in plan["jobs"]))
        self.assertEqual(sum(1 for j in plan["jobs"] if j.kind == "tune"), 2)

    def test_spread_parsing(self):
        self.assertEqual(driver.parse_spread("NCCL_PROTO=LL;NCCL_ALGO=allreduce:tree,NCCL_PROTO=Simple"),
                         [{"NCCL_PROTO": "LL"}, {"NCCL_ALGO": "allreduce:tree", "NCCL_PROTO": "Simple"}])
        with self.assertRaises(ValueError):
            driver.parse_spread("PROTO=LL")

    def test_aggregate_and_report(self):
        """Synthetic phase files through the driver's aggregation and the Markdown report."""
        a = self.args("--workloads", "ddp", "--pairs", "3")
        plan = driver.make_plan(a, driver.ESTIMATES["cuda"])
        with tempfile.TemporaryDirectory() as tmp:
            def phase(name, ms, losses, summaries, start_changes=0):
                p = os.path.join(tmp, name + ".json")
                steps = [{"ms": m, "loss": l, "graph": False, "summary": s} for m, l, s in zip(ms, losses, summaries)]
                with open(p, "w") as f:
                    json.dump({"steps": steps, "summary_at_start": summ(changes=start_changes),
                               "summary_at_end": summaries[-1], "comm": {"per_step": [["allreduce", 1 << 20, 4]]},
                               "capture": None, "converged_flag_at": 6}, f)
                return p

            loss = [5.0, 4.9, 4.8, 4.7, 4.6, 4.5]
            tune_s = [summ(searching=1, changes=i + 1) for i in range(4)] + [summ(changes=4)] * 6
            results = [{"kind": "tune", "pair": None, "side": None, "preload": True, "workloads": ["ddp"],
                        "phases": {"ddp": phase("tune", [30, 30, 25, 22] + [19] * 6, loss + [4.4] * 4, tune_s)}}]
            for p in range(3):
                results.append({"kind": "A", "pair": p, "side": "A", "preload": False, "workloads": ["ddp"],
                                "phases": {"ddp": phase(f"a{p}", [25, 21, 20, 20, 20, 20 + p], loss, [None] * 6)}})
                results.append({"kind": "B", "pair": p, "side": "B", "preload": True, "workloads": ["ddp"],
                                "phases": {"ddp": phase(f"b{p}", [25, 20, 19, 19, 19, 19], loss,
                                                        [summ(changes=5)] * 6, start_changes=4)}})
            results.append({"kind": "spread", "pair": None, "side": None, "preload": False, "workloads": ["ddp"],
                            "env": {"NCCL_PROTO": "LL"},
                            "phases": {"ddp": phase("s", [30] * 6, [5.0, 4.9, 4.8, 4.7001, 4.6, 4.5], [None] * 6)}})
            w = driver.aggregate(a, plan, results, {})[0]
        self.assertEqual(len(w["pairs"]), 3)
        self.assertEqual(w["default_step_ms"], 20)
        self.assertEqual(w["tuned_step_ms"], 19)
        self.assertAlmostEqual(w["speedup"], 20 / 19)
        self.assertEqual(w["converge_steps"], 4)
        self.assertEqual(w["import_converge_steps"], 1)  # the import applied during step 0
        self.assertEqual(w["reuse"]["import_searching_steps_max"], 0)
        self.assertTrue(w["losses_match"])
        self.assertAlmostEqual(w["loss"]["nccl_spread_max_abs_dev"], 1e-4, places=6)
        self.assertEqual(w["loss"]["ccltune_max_abs_dev"], 0)
        self.assertTrue(w["completed"])
        self.assertAlmostEqual(w["tuning"]["lost_ms"], (30 - 25) + (30 - 21) + (25 - 20) + (22 - 20))
        doc = {"meta": {"machine": "h200x2", "nproc": 2, "gpu": "NVIDIA H200", "device": "cuda", "plan": {},
                        "jobs": [], "nonblocking": None, "total_s": 1.0}, "workloads": [w]}
        md = report.markdown(doc)
        self.assertIn("# ccltune under PyTorch on h200x2", md)
        self.assertIn("| ddp | 3 | 20.00 | 19.00 |", md)
        self.assertIn("ddp", report.table(doc))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    n = result.testsRun
    bad = len(result.failures) + len(result.errors)
    print(f"{n - bad} passed, {bad} failed")
    sys.exit(0 if result.wasSuccessful() else 1)
