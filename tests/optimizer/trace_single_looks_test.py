"""Unit tests of bench/trace_single_looks.py: the configs a search timed once and how close they read to its end.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import (  # noqa: E402  (also puts bench/ on the path)
    TempDirCase, config, import_script, oracle_result, run_main, write_run_and_trace)

sl = import_script("trace_single_looks")

AR = "allreduce/float32/sum/65536"
AG = "allgather/float32/16384"  # 65536 bytes over 4 ranks: the trace keys all-gather by one rank's share
TREE2, RING = config("tree", "simple", 2), config("ring", "ll", 1)


def row(coll, size, oracle, tuned):
    r = oracle_result(coll, size, [(oracle, 100.0)], 200.0)
    r.update(oracle_config=oracle, config=tuned)
    return r


class SingleLooks(TempDirCase):
    def test_ratios_thresholds_and_the_oracle_picks(self):
        res = [
            # Ended on ring/ll/nc1 (samples 100, 120, 110: median 110). Timed once: tree/simple/nc2 (121, the oracle's
            # pick: 1.1), ring/simple/nc1 (220: 2.0). Twice: tree/simple/nc1 (not counted). The default's one sample and
            # a monitoring call are not configs timed once.
            row("allreduce", 65536, TREE2, RING),
            # Kept the default (samples 200, 180, 220: median 200); ring/ll/nc1 timed once at 250 (1.25), not the
            # oracle's pick (tree/simple/nc2, never sampled).
            row("allgather", 65536, TREE2, None),
        ]
        trace = [(AR, 1, "default", 200, "default"), (AR, 2, "ring/ll/nc1", 100, "candidate"),
                 (AR, 3, "tree/simple/nc2", 121, "candidate"), (AR, 4, "ring/simple/nc1", 220, "candidate"),
                 (AR, 5, "tree/simple/nc1", 130, "candidate"), (AR, 6, "tree/simple/nc1", 140, "candidate"),
                 (AR, 7, "ring/ll/nc1", 120, "incumbent"), (AR, 8, "ring/ll/nc1", 110, "candidate"),
                 (AR, 9, "pat/simple/nc1", 90, "monitor"),
                 (AG, 1, "default", 200, "default"), (AG, 2, "ring/ll/nc1", 250, "candidate"),
                 (AG, 3, "default", 180, "default"), (AG, 4, "default", 220, "default")]
        path = write_run_and_trace(self.dir.name, "r-1", res, trace, 4)
        rc, out = run_main(sl, [path, "--ratios", "1.2,1.5,2.5"])
        self.assertEqual(rc, 0, out)
        self.assertIn("1 runs, 2 workloads: 3 configs timed once (not the default, not the config the search ended "
                      "on), 1 of them the oracle's pick\n", out)
        self.assertIn("  read under 1.2 x the end's: 1 (0.50 per workload), the oracle's pick 1\n", out)
        self.assertIn("  read under 1.5 x the end's: 2 (1.00 per workload), the oracle's pick 1\n", out)
        self.assertIn("  read under 2.5 x the end's: 3 (1.50 per workload), the oracle's pick 1\n", out)
        self.assertIn("oracle picks' ratios: 1.10\n", out)

    def test_no_run_read(self):
        path = write_run_and_trace(self.dir.name, "r-2", [row("allreduce", 65536, TREE2, RING)],
                                   [(AR, 1, "ring/ll/nc1", 100, "candidate")], 4)
        self.assertIn("no run read", self.assert_skipped_without_trace(sl, path, 1))


if __name__ == "__main__":
    unittest.main()
