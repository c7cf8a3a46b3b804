"""Unit tests of bench/trace_duels.py: blocks of back-to-back calls of two configs compared on their settled calls,
against the oracle's rounds. Standard-library Python only; exit 77 (skipped under CTest) when it cannot be imported."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import (  # noqa: E402  (also puts bench/ on the path)
    TempDirCase, config, import_script, oracle_result, run_main, write_run_and_trace)

td = import_script("trace_duels")

AR = "allreduce/float32/sum/65536"
TREE2, RING = config("tree", "simple", 2), config("ring", "ll", 1)


def block(start, cfg, values, role="candidate"):
    """Trace rows of one block: consecutive calls from `start`."""
    return [(AR, start + i, cfg, us, role) for i, us in enumerate(values)]


class Duels(TempDirCase):
    def test_blocks_need_length_consecutive_calls_and_an_asked_call(self):
        Row = import_script("trace_vs_oracle").TraceRow
        samples = [Row(AR, c, "x", 1.0, "candidate") for c in range(1, 9)]  # 8 calls: a block
        samples += [Row(AR, c, "y", 2.0, "incumbent") for c in range(9, 20)]  # none asked for: not a block
        samples += [Row(AR, c, "z", 3.0, "candidate") for c in (20, 22, 23, 24, 25, 26, 27, 28)]  # one call missing
        samples += [Row(AR, c, "w", 4.0, "candidate") for c in (30, 33, 34, 35, 36, 37, 38, 39)]  # two missing: 7
        got = td.blocks_of(samples, 8)
        self.assertEqual([c for c, _ in got], ["x", "z"])
        self.assertEqual(len(got[1][1]), 8)

    def test_duels_read_settled_calls_and_are_judged_by_the_oracle(self):
        # The leader ring/ll/nc1 first; tree/simple/nc2 reads slow on its first five calls of each block (150) and
        # at 90 after, ring/ll/nc1 at 100 throughout: settled, tree is 0.9 of ring. The oracle times tree 80, ring 100.
        tree = [150] * 5 + [90] * 5
        ring = [100] * 10
        trace = (block(1, "ring/ll/nc1", ring) + block(11, "tree/simple/nc2", tree) + block(21, "ring/ll/nc1", ring) +
                 block(31, "tree/simple/nc2", tree))
        res = [oracle_result("allreduce", 65536, [(TREE2, 80.0), (RING, 100.0)], 200.0)]
        path = write_run_and_trace(self.dir.name, "r-1", res, trace, 4)
        rc, out = run_main(td, [path])
        self.assertEqual(rc, 0, out)
        self.assertIn("r-1.json allreduce 65536: ring/ll/nc1 then tree/simple/nc2: duel 0.900, oracle 0.800, agree", out)
        self.assertIn("duels the oracle timed both sides of: 1, agreeing with it: 1; the second config read faster "
                      "(the leader replaced): 1, the oracle agreeing: 1", out)
        # Read on every call (--settled 0), tree's median is 120: slower than ring, against the oracle.
        rc, out = run_main(td, [path, "--settled", "0"])
        self.assertIn("duel 1.200, oracle 0.800, disagree", out)
        self.assertIn("agreeing with it: 0; the second config read faster (the leader replaced): 0", out)

    def test_a_trace_without_blocks_gives_no_duel(self):
        trace = [(AR, c, "ring/ll/nc1" if c % 2 else "tree/simple/nc2", 100, "candidate") for c in range(1, 40)]
        res = [oracle_result("allreduce", 65536, [(TREE2, 80.0), (RING, 100.0)], 200.0)]
        path = write_run_and_trace(self.dir.name, "r-2", res, trace, 4)
        rc, out = run_main(td, [path])
        self.assertEqual(rc, 0)
        self.assertEqual(out, "duels the oracle timed both sides of: 0, agreeing with it: 0; the second config read "
                              "faster (the leader replaced): 0, the oracle agreeing: 0\n")


if __name__ == "__main__":
    unittest.main()
