"""Unit tests of bench/search_misses.py: the rows a search missed and its samples of the oracle's pick there.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import (  # noqa: E402  (also puts bench/ on the path)
    TempDirCase, config, import_script, oracle_result, run_main, write_run_and_trace)

sm = import_script("search_misses")

AR = "allreduce/float32/sum/65536"
AG = "allgather/float32/16384"  # 65536 bytes over 4 ranks: the trace keys all-gather by one rank's share
RS = "reducescatter/float32/sum/65536"  # 262144 bytes over 4 ranks
TREE2, TREE1, RING = config("tree", "simple", 2), config("tree", "simple", 1), config("ring", "ll", 1)
PAT, RSIMPLE = config("pat", "simple", 1), config("ring", "simple", 1)


def row(coll, size, oracle, tuned, oracle_us, tuned_us, candidates, default_us=200.0):
    """A result row: the oracle's pick and its time, the tuned config (None: NCCL's default) and its one-communicator
    time (tuned_us twice that, as two communicators would read it), the oracle's candidates."""
    r = oracle_result(coll, size, candidates, default_us)
    r.update(oracle_config=oracle, oracle_us=oracle_us, config=tuned, tuned_same_comm_us=tuned_us,
             tuned_us=2 * tuned_us)
    return r


class Misses(TempDirCase):
    def write_run(self, stem, results, trace_rows, nranks=4):
        return write_run_and_trace(self.dir.name, stem, results, trace_rows, nranks)

    def test_rows_kinds_and_samples_of_the_oracle_pick(self):
        res = [
            # tree/simple/nc2 best (100); the search ended on ring/ll/nc1 (120: t/o 1.2, t/d 0.6): another subspace,
            # a tree pick lost to a ring config. Its samples of tree/simple/nc2: 130, 110, 150 (a monitoring call and
            # another config's are not its samples).
            row("allreduce", 65536, TREE2, RING, 100.0, 120.0, [(TREE2, 100.0), (RING, 118.0)]),
            # tree/simple/nc2 best (50); the search ended on tree/simple/nc1 (55: t/o 1.1): the same subspace, other
            # channels. One sample of the oracle's pick.
            row("allgather", 65536, TREE2, TREE1, 50.0, 55.0, [(TREE2, 50.0), (TREE1, 54.0)]),
            # NCCL's default kept: t/o 200 / 160 = 1.25; the oracle's pick ring/simple/nc1 sampled twice.
            row("reducescatter", 262144, RSIMPLE, None, 160.0, 200.0, [(RSIMPLE, 160.0)]),
            # Within the bar (1.04): not listed.
            row("allreduce", 1 << 20, TREE2, RING, 100.0, 104.0, [(TREE2, 100.0)]),
        ]
        trace = [(AR, 1, "default", 200, "default"), (AR, 2, "tree/simple/nc2", 130, "candidate"),
                 (AR, 3, "ring/ll/nc1", 120, "candidate"), (AR, 4, "tree/simple/nc2", 110, "incumbent"),
                 (AR, 5, "tree/simple/nc2", 400, "monitor"), (AR, 6, "tree/simple/nc2", 150, "candidate"),
                 (AG, 1, "tree/simple/nc2", 60, "candidate"), (AG, 2, "tree/simple/nc1", 55, "candidate"),
                 (RS, 3, "ring/simple/nc1", 200, "candidate"), (RS, 1, "ring/simple/nc1", 176, "candidate")]
        path = self.write_run("r-1", res, trace)
        rc, out = run_main(sm, [path, "--first", "2"])
        self.assertEqual(rc, 0, out)
        self.assertIn("1 runs; rows tuned/oracle > 1.05", out)
        self.assertIn("r-1.json allreduce 65536: oracle tree/simple/nc2 tuned ring/ll/nc1 t/o 1.200 t/d 0.600 | "
                      "3 samples: 1.300 1.100\n", out)
        self.assertIn("r-1.json allgather 65536: oracle tree/simple/nc2 tuned tree/simple/nc1 t/o 1.100 t/d 0.275 | "
                      "1 samples: 1.200\n", out)
        # Samples in call order, over the oracle's 160 us.
        self.assertIn("r-1.json reducescatter 262144: oracle ring/simple/nc1 tuned default t/o 1.250 t/d 1.000 | "
                      "2 samples: 1.100 1.250\n", out)
        self.assertNotIn("1048576", out)
        self.assertIn("missed rows 3: default kept 1; other subspace 1 (tree or PAT oracle pick lost to a ring config "
                      "1); same subspace, other channels 1\n", out)
        self.assertIn("oracle's pick with at most 1 search sample: 1, at most 2: 2", out)
        # A lower bar takes the 1 MiB row in, whose oracle pick the search never sampled.
        rc, out = run_main(sm, [path, "--bar", "1.03"])
        self.assertIn("r-1.json allreduce 1048576: oracle tree/simple/nc2 tuned ring/ll/nc1 t/o 1.040 t/d 0.520 | "
                      "0 samples\n", out)
        self.assertIn("oracle's pick with at most 1 search sample: 2, at most 2: 3", out)

    def test_kinds(self):
        self.assertEqual(sm.kind_of("pat/simple/nc1", "default"), "default kept")
        self.assertEqual(sm.kind_of("pat/simple/nc1", "ring/simple/nc1"), "other subspace")
        self.assertEqual(sm.kind_of("ring/ll/nc1", "ring/simple/nc1"), "other subspace")
        self.assertEqual(sm.kind_of("pat/simple/nc1", "pat/simple/nc2"), "same subspace, other channels")
        self.assertEqual(sm.kind_of("default", "ring/simple/nc1"), "oracle's pick is NCCL's default")

    def test_a_ring_loss_is_counted_only_for_a_tree_or_pat_pick(self):
        # pat/simple/nc1 lost to ring/simple/nc1, ring/ll/nc1 lost to ring/simple/nc1: both another subspace, one a
        # PAT pick lost to a ring config.
        res = [row("allgather", 65536, PAT, RSIMPLE, 100.0, 120.0, [(PAT, 100.0)]),
               row("allreduce", 65536, RING, RSIMPLE, 100.0, 120.0, [(RING, 100.0)])]
        path = self.write_run("r-2", res, [(AG, 1, "pat/simple/nc1", 100, "candidate")])
        rc, out = run_main(sm, [path])
        self.assertEqual(rc, 0)
        self.assertIn("missed rows 2: default kept 0; other subspace 2 (tree or PAT oracle pick lost to a ring config "
                      "1); same subspace, other channels 0\n", out)
        self.assertIn("oracle's pick with at most 1 search sample: 2, at most 2: 2", out)

    def test_nothing_past_the_bar_or_no_run_read(self):
        res = [row("allreduce", 65536, TREE2, TREE2, 100.0, 101.0, [(TREE2, 100.0)])]
        path = self.write_run("r-3", res, [(AR, 1, "tree/simple/nc2", 100, "candidate")])
        rc, out = run_main(sm, [path])
        self.assertEqual(rc, 1)
        self.assertIn("1 runs: no row tuned/oracle > 1.05", out)
        self.assertIn("no run read", self.assert_skipped_without_trace(sm, path, 1))


if __name__ == "__main__":
    unittest.main()
