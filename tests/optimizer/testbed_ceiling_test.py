"""Unit tests of bench/testbed_ceiling.py: what one fixed config per row, chosen from the other runs, scores
on each recorded oracle run. Standard-library Python only; exit 77 (skipped under CTest) when the script
cannot be imported."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main, write_results  # noqa: E402  (also puts bench/ on the path)

testbed_ceiling = import_script("testbed_ceiling")

DEFAULT = {"algorithm": "default", "protocol": "default", "channels": 0}
RING1 = {"algorithm": "ring", "protocol": "simple", "channels": 1}
TREE2 = {"algorithm": "tree", "protocol": "simple", "channels": 2}


def row(coll, nbytes, cands):
    return {"collective": coll, "bytes": nbytes,
            "oracle_candidates": [{"config": c, "us": us} for c, us in cands]}


def run(argv):
    return run_main(testbed_ceiling, argv)[1]


class Ceiling(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        # One row, ring/simple/nc1 at 0.90, 0.92 and 1.05 of the default in runs a, b, c; tree/simple/nc2 timed
        # in run a only: b and c cannot be scored on it, so they never choose it, and a does not choose for itself.
        runs = {"a.json": [row("allreduce", 1 << 20, [(DEFAULT, 100.0), (RING1, 90.0), (TREE2, 80.0)])],
                "b.json": [row("allreduce", 1 << 20, [(DEFAULT, 100.0), (RING1, 92.0)])],
                "c.json": [row("allreduce", 1 << 20, [(DEFAULT, 100.0), (RING1, 105.0)])],
                "old.json": [{"collective": "allreduce", "bytes": 1 << 20, "oracle_us": 50.0}]}
        self.files = write_results(self.dir.name, runs.items())

    def tearDown(self):
        self.dir.cleanup()

    def test_leave_one_out_choice_and_the_bars(self):
        out = run(["--keep-default-below", "0", "--keep-default-below", "3"] + self.files)
        self.assertIn("3 runs with oracle candidates", out)  # old.json has none
        no_margin, margin = out.split("gain exceeds 0%:")[1].split("gain exceeds 3%:")
        # No margin: a and b each see the other two runs' ring/simple/nc1 below the default (0.983, 0.972) and
        # take it; a's share is log(100/90) / log(100/80) = 0.472 (tree/simple/nc2 was its oracle), b's 1.00;
        # c takes it from a and b (0.91) and reads 1.05 of the default, past the row bar (c has no headroom: no share).
        self.assertIn("1 of 3 runs meet", no_margin)
        self.assertIn("a.json: share 0.472 / - / -\n", no_margin)
        self.assertIn("b.json: share 1.000 / - / -  meets", no_margin)
        self.assertIn("c.json: share - / - / -; allreduce 1048576 ring/simple/nc1 t/d 1.050", no_margin)
        # A 3% margin: a's and b's pooled gains (1.7%, 2.8%) keep the default (share 0); c's (9%) does not.
        self.assertIn("0 of 3 runs meet", margin)
        self.assertIn("b.json: share 0.000 / - / -\n", margin)
        self.assertIn("c.json: share - / - / -; allreduce 1048576 ring/simple/nc1 t/d 1.050", margin)

    def test_per_row_summary_over_all_runs(self):
        out = run(self.files)
        # geomean of 0.90, 0.92, 1.05 = 0.954; tree/simple/nc2 (0.80) was timed in one run of three
        self.assertRegex(out, r"allreduce\s+1048576 ring/simple/nc1\s+0\.954  sd 0\.083  runs 3")


if __name__ == "__main__":
    unittest.main()
