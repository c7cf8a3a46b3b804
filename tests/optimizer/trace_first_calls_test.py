"""Unit tests of bench/trace_first_calls.py: a config's first timed call against its later ones in a search trace.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main  # noqa: E402  (also puts bench/ on the path)

trace_first_calls = import_script("trace_first_calls")

HEADER = "comm,workload,call,unit,config,us,role\n"


def line(workload, unit, config, us):
    role = "default" if config == "default" else "candidate"
    return f"0x1,{workload},{unit},{unit},{config},{us},{role}\n"


class FirstCalls(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "trace.csv")
        rows = [line("w1", 1, "default", 100), line("w1", 2, "a", 120), line("w1", 3, "b", 90)]
        # Out of unit order in the file (the trace is in arrival order): a's later calls at 100, b's at 90.
        rows += [line("w1", 6, "a", 100), line("w1", 4, "a", 100), line("w1", 5, "a", 100)]
        rows += [line("w1", 7, "b", 90), line("w1", 8, "b", 90)]
        # A second workload whose first candidate never ran again.
        rows += [line("w2", 9, "default", 50), line("w2", 10, "c", 40)]
        with open(self.path, "w") as f:
            f.write(HEADER + "".join(rows))

    def tearDown(self):
        self.dir.cleanup()

    def test_ratios(self):
        rc, out = run_main(trace_first_calls, [self.path, "--min-samples", "3"])
        self.assertEqual(rc, 0)
        self.assertIn("w1 first candidate a: 1.200 of its later calls", out)
        self.assertIn("w2 first candidate c: no later call", out)
        # a: 120 / 100, b: 90 / 90 (3 samples each); c has one sample.
        self.assertIn(f"geomean {1.2 ** 0.5:.4f} over 2", out)
        self.assertIn("first candidates with later calls: 1, median 1.200, range 1.200-1.200", out)
        self.assertNotIn("all files", out)

    def test_min_samples_and_pooling(self):
        rc, out = run_main(trace_first_calls, [self.path, self.path, "--min-samples", "4"])
        self.assertEqual(rc, 0)
        self.assertIn("geomean 1.2000 over 1", out)  # only a has 4 samples
        self.assertIn("all files: first candidates with later calls: 2, median 1.200", out)


if __name__ == "__main__":
    unittest.main()
