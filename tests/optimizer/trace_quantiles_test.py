"""Unit tests of bench/trace_quantiles.py: each config's timings in a search trace as a distribution.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main  # noqa: E402  (also puts bench/ on the path)

trace_quantiles = import_script("trace_quantiles")

HEADER = "comm,workload,call,unit,config,us,role\n"


def line(workload, unit, config, us, role="candidate"):
    return f"0x1,{workload},{unit},{unit},{config},{us},{role}\n"


class Quantiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "trace.csv")
        # w1: the default's floor is lower (9) but half its calls read 15; "a" reads 10 every time.
        rows = [line("w1", u, "default", 9 if u % 2 else 15, "default") for u in range(1, 9)]
        rows += [line("w1", 100 + u, "a", 10, "monitor") for u in range(8)]
        rows += [line("w1", 200, "b", 1)]  # one sample: below --min-samples
        rows += [line("w2", 300 + u, "default", 20 + u) for u in range(8)]
        with open(self.path, "w") as f:
            f.write(HEADER + "".join(rows))

    def tearDown(self):
        self.dir.cleanup()

    def test_quantile(self):
        self.assertEqual(trace_quantiles.quantile([1, 2, 3, 4], 0.25), 1)
        self.assertEqual(trace_quantiles.quantile([1, 2, 3, 4], 0.5), 2)
        self.assertEqual(trace_quantiles.quantile([1, 2, 3, 4, 5], 0.5), 3)
        self.assertEqual(trace_quantiles.quantile([7], 0.25), 7)

    def test_ranking(self):
        rc, out = run_main(trace_quantiles, [self.path])
        self.assertEqual(rc, 0)
        # Sorted: 9 9 9 9 15 15 15 15: p25 9 (rank 2), median 9 (rank 4).
        self.assertIn("w1 default: n 8, min 9.00, p25 9.00, median 9.00 us", out)
        self.assertIn("w1 a: n 8, min 10.00, p25 10.00, median 10.00 us", out)
        self.assertNotIn("w1 b:", out)
        self.assertIn("w1 lowest by p25 default, by median default (same)", out)
        self.assertIn("w2 default: n 8, min 20.00, p25 21.00, median 23.00 us", out)

    def test_median_and_p25_disagree(self):
        with open(self.path, "a") as f:
            f.write(line("w1", 9, "default", 15, "default") + line("w1", 10, "default", 15, "default"))
        rc, out = run_main(trace_quantiles, [self.path])
        self.assertEqual(rc, 0)
        # Ten samples, six at 15: the median (rank 5) reads 15, the 25th percentile (rank 3) 9.
        self.assertIn("w1 default: n 10, min 9.00, p25 9.00, median 15.00 us", out)
        self.assertIn("w1 lowest by p25 default, by median a (differ)", out)


if __name__ == "__main__":
    unittest.main()
