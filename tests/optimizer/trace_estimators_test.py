"""Unit tests of bench/trace_estimators.py: what a search's samples would pick under three estimators, judged by the
oracle. Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import (  # noqa: E402  (also puts bench/ on the path)
    TempDirCase, config, import_script, oracle_result, run_main, write_run_and_trace)

te = import_script("trace_estimators")

AR = "allreduce/float32/sum/65536"
AR1M = "allreduce/float32/sum/1048576"
AG = "allgather/float32/16384"  # 65536 bytes over 4 ranks: the trace keys all-gather by one rank's share
RS = "reducescatter/float32/sum/65536"  # 262144 bytes over 4 ranks
A, B, C, D = "tree/simple/nc2", "ring/ll/nc1", "ring/simple/nc1", "tree/simple/nc1"


def calls(workload, first, config, us, role, n):
    return [(workload, first + i, config, us, role) for i in range(n)]


def allreduce_trace():
    """NCCL's default reads 100 for calls 1-5 and 200 for calls 50-54; each config's samples, over the 5 defaults
    nearest to them:
      A: candidates 0.9 x3, incumbents 240/200 = 1.2 x5: pooled 1.2; asked 0.9; offset: the incumbents times
         0.9/1.2, so 0.9.
      B: candidates 190/200 = 0.95 x4 (over a global default median, 150, they would read 1.27): 0.95 each way.
      C: candidates 0.8 x2, incumbents 1.3 x3: pooled 1.3; asked 0.8; offset: 2 candidates are fewer than --min-each
         3, so pooled, 1.3. Ten monitoring calls at 0.1 are not its samples.
      D: candidates 0.5 x3: fewer than --min-samples 4.
    So pooled picks B, offset A, asked C."""
    return (calls(AR, 1, "default", 100, "default", 5) + calls(AR, 6, A, 90, "candidate", 3) +
            calls(AR, 9, C, 80, "candidate", 2) + calls(AR, 11, C, 130, "incumbent", 3) +
            calls(AR, 14, D, 50, "candidate", 3) + calls(AR, 20, C, 10, "monitor", 10) +
            calls(AR, 50, "default", 200, "default", 5) + calls(AR, 55, A, 240, "incumbent", 5) +
            calls(AR, 60, B, 190, "candidate", 4))


class Estimators(TempDirCase):
    def write_run(self, stem, results, trace_rows, nranks=4):
        return write_run_and_trace(self.dir.name, stem, results, trace_rows, nranks)

    def test_no_row_read(self):
        res = [oracle_result("allreduce", 65536, [(config("ring", "ll", 1), 90.0)], 100.0)]
        # One default sample: too few to read the others against.
        path = self.write_run("r-2", res, calls(AR, 1, "default", 100, "default", 1) +
                              calls(AR, 2, B, 90, "candidate", 4))
        rc, out = run_main(te, [path])
        self.assertEqual(rc, 1)
        self.assertIn("no row with the oracle's default time and 2 or more default samples", out)
        self.assertIn("no row", self.assert_skipped_without_trace(te, path, 1))

    def run_with_rows(self):
        res = [
            # The oracle: A 100 (best), B 110, C 130, the default 200; D untimed.
            oracle_result("allreduce", 65536, [(config("tree", "simple", 2), 100.0), (config("ring", "ll", 1), 110.0),
                                               (config("ring", "simple", 1), 130.0)], 200.0),
            # B reads 1.1 over the default: every estimator keeps the default, 100 against the oracle's best, B's 90.
            oracle_result("allgather", 65536, [(config("ring", "ll", 1), 90.0)], 100.0),
            # One default sample in the trace: skipped.
            oracle_result("reducescatter", 262144, [(config("ring", "simple", 1), 90.0)], 100.0),
            # No oracle default time: skipped.
            oracle_result("allreduce", 1 << 20, [(config("ring", "simple", 1), 90.0)], None),
        ]
        trace = (allreduce_trace() + calls(AG, 1, "default", 100, "default", 2) + calls(AG, 3, B, 110, "candidate", 4) +
                 calls(RS, 1, "default", 100, "default", 1) + calls(RS, 2, C, 50, "candidate", 4) +
                 calls(AR1M, 1, "default", 100, "default", 2) + calls(AR1M, 3, C, 50, "candidate", 4))
        return self.write_run("r-1", res, trace)

    def test_local_default_takes_the_nearest_five_earlier_first_on_a_tie(self):
        # Call 6 is as far from 5 as from 7, from 3 as from 9, from 1 as from 11: the earlier five, 100 200 100 200
        # 100, have median 100 (the later five's would be 200).
        cs, us = [1, 3, 5, 7, 9, 11], [100, 100, 100, 200, 200, 200]
        self.assertEqual(te.local_default(cs, us, 6), 100)
        self.assertEqual(te.local_default(cs, us, 12), 200)
        self.assertEqual(te.local_default([1, 3], [100, 300], 2), 200)  # fewer than 5: the median of those there are

    def test_a_config_level_with_the_default_leaves_the_default(self):
        level = {B: [("candidate", 1.0)] * 4, C: [("candidate", 1.0), ("incumbent", 1.0)] * 2}
        self.assertEqual(te.picks(level, 4, 3), {"pooled": "default", "offset": "default", "asked": "default"})

    def test_each_estimator_picks_and_is_judged_by_the_oracle(self):
        path = self.run_with_rows()
        rc, out = run_main(te, [path, "--detail"])
        self.assertEqual(rc, 0, out)
        self.assertIn("1 runs; per estimator", out)
        # pooled: B (110/100) and the default (100/90); offset: A (1.0) and the default; asked: C (1.3) and the default.
        default = 100 / 90
        for how, ratio, past in (("pooled", 1.1, 2), ("offset", 1.0, 1), ("asked", 1.3, 2)):
            line = "%-6s rows 2 known 2 geo %.4f >1.05: %d, t/d >1.02: 0\n" % (how, math.sqrt(ratio * default), past)
            self.assertIn(line, out)
        self.assertIn("offset rows 2 known 2 geo 1.0541 >1.05: 1, t/d >1.02: 0\n"
                      "  r-1.json allgather 65536: default 1.111\n", out)
        # The rows carry no final config: the search kept NCCL's default in both (200/100 and 100/90).
        self.assertIn("search rows 2 known 2 geo %.4f >1.05: 2, t/d >1.02: 0\n" % math.sqrt(2 * default), out)
        self.assertIn("  r-1.json allreduce 65536: ring/ll/nc1 1.100\n", out)
        self.assertIn("  r-1.json allreduce 65536: ring/simple/nc1 1.300\n", out)

    def test_the_search_line_and_picks_slower_than_the_default(self):
        # The oracle: B 90 (best), C 110, the default 100. B reads 1.1 of the default in the trace, so every estimator
        # keeps the default (100/90, 1.0 of the default); the search ended on C (110/90, 1.1 of the default).
        timed = [(config("ring", "ll", 1), 90.0), (config("ring", "simple", 1), 110.0)]
        res = [oracle_result("allgather", 65536, timed, 100.0)]
        res[0]["config"] = config("ring", "simple", 1)
        trace = calls(AG, 1, "default", 100, "default", 2) + calls(AG, 3, B, 110, "candidate", 4)
        path = self.write_run("r-3", res, trace)
        rc, out = run_main(te, [path, "--detail"])
        self.assertEqual(rc, 0, out)
        self.assertIn("pooled rows 1 known 1 geo 1.1111 >1.05: 1, t/d >1.02: 0\n", out)
        self.assertIn("search rows 1 known 1 geo 1.2222 >1.05: 1, t/d >1.02: 1\n"
                      "  r-3.json allgather 65536: ring/simple/nc1 1.222\n", out)
        # A looser bar on the default: C's 1.1 is within it.
        rc, out = run_main(te, [path, "--default-bar", "1.2"])
        self.assertIn("search rows 1 known 1 geo 1.2222 >1.05: 1, t/d >1.20: 0\n", out)

    def test_min_each_and_min_samples(self):
        path = self.run_with_rows()
        # With --min-each 2, C's offset scales its incumbents to 0.8: offset picks C as asked does.
        rc, out = run_main(te, [path, "--min-each", "2"])
        self.assertIn("offset rows 2 known 2 geo %.4f" % math.sqrt(1.3 * 100 / 90), out)
        # With --min-samples 3, D (0.5, no oracle time) wins the allreduce row for all three: unknown.
        rc, out = run_main(te, [path, "--min-samples", "3"])
        self.assertEqual(rc, 0)
        self.assertIn("pooled rows 2 known 1 geo 1.1111 >1.05: 1", out)


if __name__ == "__main__":
    unittest.main()
