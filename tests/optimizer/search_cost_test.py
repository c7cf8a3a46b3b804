"""Unit tests of bench/search_cost.py: the tuning loop's wall time over NCCL's default's for as many calls.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main, run_main_stderr, write_results  # noqa: E402

search_cost = import_script("search_cost")


def row(coll, nbytes, calls, tune_us, default_us):
    return {"collective": coll, "bytes": nbytes, "tune_calls": calls, "tune_wall_us": tune_us,
            "default_wall_us": default_us}


class Cost(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        a = [row("allreduce", 65536, 48, 30000.0, 20000.0),      # 1.5, +10 ms
             row("allgather", 1 << 20, 40, 40000.0, 50000.0),    # 0.8, -10 ms
             row("allgather", 4 << 20, 56, 12000.0, 10000.0),    # 1.2, +2 ms
             {"collective": "reducescatter", "bytes": 65536, "tune_calls": 8}]  # no walls: left out
        b = [{"collective": "allreduce", "bytes": 65536, "tune_calls": 40}]    # a run without --search-cost 1
        self.files = write_results(self.dir.name, (("a.json", a), ("b.json", b)))

    def tearDown(self):
        self.dir.cleanup()

    def test_totals_and_ratios_per_file(self):
        rc, out, err = run_main_stderr(search_cost, [self.files[0]])
        self.assertEqual(rc, 0, err)
        # 82 ms of tuning against 80 ms of the default over 144 calls; per row 0.8, 1.2, 1.5.
        self.assertIn("a.json: 3 rows, 144 calls; tuning 82.0 ms against the default's 80.0 ms: ratio 1.025, "
                      "extra +2.0 ms; per row ratio median 1.200, max 1.500", out)

    def test_rows(self):
        _, out = run_main(search_cost, [self.files[0], "--rows"])
        self.assertIn("a.json allgather 1048576: 40 calls, tuning 40.0 ms, default 50.0 ms, ratio 0.800, extra -10.0 ms",
                      out)
        self.assertNotIn("reducescatter", out)

    def test_a_file_without_the_walls_is_an_error(self):
        rc, out, err = run_main_stderr(search_cost, self.files)
        self.assertEqual(rc, 1)
        self.assertIn("b.json: no rows with tune_wall_us and default_wall_us", err)
        self.assertIn("a.json: 3 rows", out)


if __name__ == "__main__":
    unittest.main()
