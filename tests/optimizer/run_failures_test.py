"""Unit tests of bench/run_failures.py: which compare,oracle runs miss issue 12's done-when, and which single rows
would lift a failing share at their oracle time. Standard-library Python only; exit 77 (skipped under CTest) when
the script cannot be imported."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import (  # noqa: E402  (also puts bench/ on the path)
    TempDirCase, config, import_script, run_main, write_results)

rf = import_script("run_failures")

RING = config("ring", "ll", 1)


def row(coll, nbytes, default, tuned, oracle, cfg=None):
    """A result row: the one-communicator tuned time (tuned_us twice it, as two communicators would read it)."""
    return {"collective": coll, "bytes": nbytes, "oracle_default_us": default, "tuned_same_comm_us": tuned,
            "tuned_us": 2 * tuned, "oracle_us": oracle, "converge_calls": 10, "config": cfg}


# allreduce 65536 kept NCCL's default at twice the oracle's time, 1 MiB at the oracle's: share log 1 / log 4 = 0.5.
AR_MISS = [row("allreduce", 65536, 100.0, 100.0, 50.0, RING), row("allreduce", 1 << 20, 100.0, 50.0, 50.0)]
RUNS = (
    # Every share 1, no row past the default bar: meets, no line.
    ("meet.json", [row("allreduce", 65536, 100.0, 80.0, 80.0), row("allgather", 65536, 100.0, 80.0, 80.0)]),
    # allreduce 0.500, lifted to 1 by 65536 at its oracle time: the run would then meet (alone).
    ("alone.json", AR_MISS + [row("allgather", 65536, 100.0, 80.0, 80.0)]),
    # The same, and allgather 1 MiB at t/d 1.03 (allgather's share (log 2 - log 1.03) / log 2 = 0.957 is above the
    # bar): 65536 lifts allreduce but the run would still miss.
    ("td.json", AR_MISS + [row("allgather", 65536, 100.0, 50.0, 50.0), row("allgather", 1 << 20, 100.0, 103.0, 100.0)]),
    # Three rows at twice their oracle time: share 0; one at its oracle time gives 1/3.
    ("none.json", [row("allreduce", n, 100.0, 100.0, 50.0) for n in (65536, 1 << 20, 4 << 20)]),
    # reducescatter: two rows of small headroom missed, one big gain: share log 2 / (log 2 + 2 log 1/0.9) = 0.767;
    # either missed row at its oracle time lifts it to 0.883.
    ("sort.json", [row("reducescatter", 1 << 20, 100.0, 100.0, 90.0), row("reducescatter", 65536, 100.0, 100.0, 90.0),
                   row("reducescatter", 4 << 20, 100.0, 50.0, 50.0)]),
)


class Failures(TempDirCase):
    def setUp(self):
        super().setUp()
        self.files = write_results(self.dir.name, RUNS)

    def test_failing_runs_and_the_rows_that_lift_them(self):
        rc, out = run_main(rf, self.files)
        self.assertEqual(rc, 0, out)
        self.assertNotIn("meet.json", out)
        self.assertIn("alone.json: share < 0.85: allreduce 0.500 | t/d > 1.02: none\n"
                      "  allreduce lifted by one row: allreduce 65536 ring/ll/nc1 t/o 2.000 alone\n", out)
        self.assertIn("td.json: share < 0.85: allreduce 0.500 | t/d > 1.02: allgather 1048576 1.030\n"
                      "  allreduce lifted by one row: allreduce 65536 ring/ll/nc1 t/o 2.000\n", out)
        self.assertIn("none.json: share < 0.85: allreduce 0.000 | t/d > 1.02: none\n"
                      "  allreduce lifted by one row: none\n", out)
        self.assertIn("sort.json: share < 0.85: reducescatter 0.767 | t/d > 1.02: none\n"
                      "  reducescatter lifted by one row: reducescatter 1048576 default t/o 1.111 alone; "
                      "reducescatter 65536 default t/o 1.111 alone\n", out)
        self.assertIn("runs read 5, meeting 1, failing 4\n", out)
        # By count, then collective and bytes (65536 before 1 MiB, though the file lists 1 MiB first).
        table = out.split("(the run would then meet)\n")[1]
        self.assertEqual(table, "  allreduce 65536: 2 | alone 1 (alone* td)\n"
                                "  reducescatter 65536: 1 | alone 1 (sort*)\n"
                                "  reducescatter 1048576: 1 | alone 1 (sort*)\n")

    def test_a_row_past_the_default_bar_that_the_fix_itself_brings_back(self):
        # allreduce 65536 at t/d 1.1 is the only row past the default bar; at its oracle time it lifts the share to 1
        # and leaves no row past the bar: alone.
        path, = write_results(self.dir.name, [("self.json", [row("allreduce", 65536, 100.0, 110.0, 50.0),
                                                              row("allreduce", 1 << 20, 100.0, 50.0, 50.0)])])
        _, out = run_main(rf, [path])
        self.assertIn("self.json: share < 0.85: allreduce 0.431 | t/d > 1.02: allreduce 65536 1.100\n"
                      "  allreduce lifted by one row: allreduce 65536 default t/o 2.200 alone\n", out)

    def test_bars(self):
        # A share bar of 0.5 lets alone.json meet; td.json still misses on its t/d row alone, with no share line.
        _, out = run_main(rf, self.files + ["--share-bar", "0.5"])
        self.assertNotIn("alone.json", out)
        self.assertIn("td.json: share < 0.50: none | t/d > 1.02: allgather 1048576 1.030\nnone.json", out)
        # A default bar of 1.05 takes td.json's t/d row off: its allreduce fix is alone now.
        _, out = run_main(rf, self.files + ["--default-bar", "1.05"])
        self.assertIn("  allreduce 65536: 2 | alone 2 (alone* td*)\n", out)

    def test_a_file_without_oracle_rows_is_an_error(self):
        no_oracle = [{"collective": "allreduce", "bytes": 1, "tuned_us": 1.0}]
        path, = write_results(self.dir.name, [("empty.json", no_oracle)])
        rc, _ = run_main(rf, [path])
        self.assertEqual(rc, 1)


if __name__ == "__main__":
    unittest.main()
