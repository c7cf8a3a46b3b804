"""Unit tests of bench/trace_subspaces.py: a search's timed calls, their time and the slow ones, by subspace.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main, run_main_stderr  # noqa: E402  (also puts bench/ on the path)

trace_subspaces = import_script("trace_subspaces")

HEADER = "comm,workload,call,unit,config,us,role\n"


def line(workload, call, config, us, role):
    return f"0x1,{workload},{call},{100 + call},{config},{us},{role}\n"


class Subspaces(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "trace.csv")
        # w1: default median 100 us; tree/ll at 250 and 150 (one slow at 2x), ring/ll/nc1 and nc2 (one subspace),
        # a monitoring call (not counted). w2: default median 1000; its tree/ll at 1500 is not slow there.
        rows = [line("w1", 1, "default", 90, "default"), line("w1", 2, "tree/ll/nc2", 250, "candidate"),
                line("w1", 3, "default", 100, "default"), line("w1", 4, "tree/ll/nc1", 150, "candidate"),
                line("w1", 5, "ring/ll/nc1", 80, "candidate"), line("w1", 6, "ring/ll/nc2", 70, "incumbent"),
                line("w1", 7, "default", 110, "default"), line("w1", 9, "ring/ll/nc2", 60, "monitor"),
                line("w2", 0, "default", 1000, "default"), line("w2", 1, "tree/ll/nc2", 1500, "candidate")]
        with open(self.path, "w") as f:
            f.write(HEADER + "".join(rows))

    def tearDown(self):
        self.dir.cleanup()

    def test_subspace_of_a_config(self):
        self.assertEqual(trace_subspaces.subspace("tree/simple/nc2"), "tree/simple")
        self.assertEqual(trace_subspaces.subspace("pat/simple/nc1/c65536"), "pat/simple")
        self.assertEqual(trace_subspaces.subspace("default"), "default")

    def test_totals_leave_out_monitoring_and_judge_slow_per_workload(self):
        total, per = trace_subspaces.tally(trace_subspaces.read(self.path, ""), 2.0)
        self.assertEqual(total["tree/ll"][0], 3)
        self.assertAlmostEqual(total["tree/ll"][1], (250 + 150 + 1500) / 1000.0)
        self.assertEqual(total["tree/ll"][2], 1)  # 250 >= 2 x 100 in w1; 1500 < 2 x 1000 in w2
        self.assertEqual(total["ring/ll"][0], 2)  # the monitoring call is not a searching call
        self.assertEqual(total["default"], [4, 1.3, 0])
        self.assertEqual(per[("0x1", "w2")]["tree/ll"][0], 1)

    def test_main_lines_and_filter(self):
        rc, out = run_main(trace_subspaces, [self.path, "--workload", "w1", "--rows"])
        self.assertEqual(rc, 0)
        self.assertIn("trace.csv: 1 workloads, 7 timed calls while searching", out)
        self.assertIn("tree/ll            2 calls        0.4 ms     1 at >= 2x the default", out)
        self.assertIn("    w1", out)
        self.assertNotIn("w2", out)

    def test_no_lines(self):
        rc, _, err = run_main_stderr(trace_subspaces, [self.path, "--workload", "w9"])
        self.assertEqual(rc, 1)
        self.assertIn("no trace lines while searching for w9", err)


if __name__ == "__main__":
    unittest.main()
