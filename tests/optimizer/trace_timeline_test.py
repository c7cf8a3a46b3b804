"""Unit tests of bench/trace_timeline.py: a search's calls per workload as one line of role characters.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main  # noqa: E402  (also puts bench/ on the path)

trace_timeline = import_script("trace_timeline")

HEADER = "comm,workload,call,unit,config,us,role\n"


def line(workload, call, role, config="ring/simple/nc1"):
    return f"0x1,{workload},{call},{100 + call},{'default' if role == 'default' else config},10.0,{role}\n"


class Timeline(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "trace.csv")
        # w1: calls 0 and 3 untimed; a guard probe (default) after the first monitoring call. The file is in
        # arrival order, not call order.
        rows = [line("w1", 1, "default"), line("w1", 2, "candidate"), line("w1", 5, "incumbent"),
                line("w1", 4, "candidate"), line("w1", 6, "monitor"), line("w1", 7, "default"),
                line("w2", 0, "default"), line("w2", 1, "candidate"), line("w2-longer-name", 0, "default")]
        with open(self.path, "w") as f:
            f.write(HEADER + "".join(rows))

    def tearDown(self):
        self.dir.cleanup()

    def test_lines_and_milestones(self):
        rc, out = run_main(trace_timeline, [self.path])
        self.assertEqual(rc, 0)
        self.assertIn("w1             .dc.cimd | last asked 4, first monitor 6", out)
        self.assertIn("w2             dc | last asked 1, first monitor -", out)

    def test_calls_period_and_match(self):
        rc, out = run_main(trace_timeline, [self.path, "--calls", "10", "--period", "4", "--match", "w1"])
        self.assertEqual(rc, 0)
        self.assertIn("w1 .dc. cimd .. |", out)  # padded to the longest name shown, not to w2-longer-name
        self.assertNotIn("w2", out)

    def test_no_match(self):
        rc, out = run_main(trace_timeline, [self.path, "--match", "w9"])
        self.assertEqual(rc, 1)
        self.assertIn("no workload matches", out)

    def test_empty_trace(self):
        empty = os.path.join(self.dir.name, "empty.csv")
        with open(empty, "w") as f:
            f.write(HEADER)
        rc, out = run_main(trace_timeline, [empty])
        self.assertEqual(rc, 1)
        self.assertIn("no trace lines", out)


if __name__ == "__main__":
    unittest.main()
