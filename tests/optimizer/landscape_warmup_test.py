"""Unit tests of bench/landscape_warmup.py: per config, a landscape block's first timed calls over its last.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main, run_main_stderr  # noqa: E402  (also puts bench/ on the path)

landscape_warmup = import_script("landscape_warmup")


def block(coll, nbytes, config, ran, rnd, times):
    """One block's lines: seq 0.. with the given maxima (the minimum over ranks 1 us lower)."""
    return "".join(f"{coll} {nbytes} {config} {rnd} 0 {k} {t - 1:.3f} {t:.3f} {ran}\n" for k, t in enumerate(times))


class Warmup(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "land.samples")
        # tree warms up: 130, 120, 110 then 100 for good, in two blocks; the default is flat at 300 (its line names
        # what it ran, shown as `default`); ring is flat at 200 with one outlier among its first calls.
        warm = [130, 120, 110] + [100] * 5
        lines = ["# ccltune-bench --mode landscape: header\n",
                 block("all_reduce", 65536, "default", "ring/ll/nc2", 0, [300] * 8),
                 block("all_reduce", 65536, "tree/simple/nc2", "tree/simple/nc2", 0, warm),
                 block("all_reduce", 65536, "tree/simple/nc2", "tree/simple/nc2", 1, warm),
                 block("all_reduce", 65536, "ring/ll/nc1", "ring/ll/nc1", 0, [200, 260, 200, 200, 200, 200, 200, 200])]
        with open(self.path, "w") as f:
            f.write("".join(lines))

    def tearDown(self):
        self.dir.cleanup()

    def test_ratios_and_positions(self):
        rc, out = run_main(landscape_warmup, [self.path, "--first", "3", "--last", "4", "--positions", "4"])
        self.assertEqual(rc, 0)
        self.assertIn("all_reduce           65536 tree/simple/nc2    warm-up 1.200 | 130 120 110 100", out)
        self.assertIn("all_reduce           65536 default            warm-up 1.000 | 300 300 300 300", out)
        # the median of the first three is robust to the outlier
        self.assertIn("ring/ll/nc1        warm-up 1.000 |", out)

    def test_min_ratio_filters(self):
        rc, out = run_main(landscape_warmup, [self.path, "--last", "4", "--min-ratio", "1.1"])
        self.assertEqual(rc, 0)
        self.assertIn("tree/simple/nc2", out)
        self.assertNotIn("default", out)
        self.assertNotIn("ring/ll/nc1", out)

    def test_blocks_too_short(self):
        rc, out, err = run_main_stderr(landscape_warmup, [self.path])  # 3 + 12 positions asked, 8 recorded
        self.assertEqual(rc, 1)
        self.assertIn("every row's blocks are too short for --first 3 --last 12", out)
        self.assertIn("all_reduce 65536 tree/simple/nc2 skipped: blocks of 8 timed calls are too short", err)

    def test_a_row_too_short_is_skipped(self):
        # A row recorded with blocks of 4 timed calls among rows of 8: it is left out, the rows after it still shown.
        with open(self.path, "a") as f:
            f.write(block("all_gather", 1024, "ring/ll/nc1", "ring/ll/nc1", 0, [50, 50, 50, 50]))
            f.write(block("reduce_scatter", 1024, "ring/ll/nc1", "ring/ll/nc1", 0, [90, 80] + [70] * 6))
        rc, out, err = run_main_stderr(landscape_warmup, [self.path, "--first", "2", "--last", "4"])
        self.assertEqual(rc, 0)
        self.assertIn("all_gather 1024 ring/ll/nc1 skipped: blocks of 4 timed calls are too short for --first 2 "
                      "--last 4", err)
        self.assertNotIn("all_gather", out)
        self.assertIn("reduce_scatter        1024 ring/ll/nc1        warm-up 1.214 |", out)
        self.assertIn("all_reduce           65536 tree/simple/nc2    warm-up 1.250 |", out)

    def test_no_samples(self):
        empty = os.path.join(self.dir.name, "empty.samples")
        with open(empty, "w") as f:
            f.write("# header only\n")
        rc, out = run_main(landscape_warmup, [empty])
        self.assertEqual(rc, 1)
        self.assertIn("no samples", out)


if __name__ == "__main__":
    unittest.main()
