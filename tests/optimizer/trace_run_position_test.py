"""Unit tests of bench/trace_run_position.py: a config's search timings over the oracle's, by position in its run of
calls. Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import (  # noqa: E402  (also puts bench/ on the path)
    TempDirCase, config, import_script, oracle_result, run_main, run_main_stderr, write_run_and_trace)

trp = import_script("trace_run_position")

W = "allreduce/float32/sum/65536"


class RunPosition(TempDirCase):
    def write_run(self, stem, results, trace_rows, nranks=4):
        return write_run_and_trace(self.dir.name, stem, results, trace_rows, nranks)

    def test_positions_break_on_another_config_and_on_an_untimed_call(self):
        rows = [(1, "a", 1.0, "c"), (2, "a", 2.0, "i"), (3, "b", 3.0, "c"), (4, "a", 4.0, "c"), (6, "a", 5.0, "c"),
                (7, "a", 6.0, "i")]
        self.assertEqual(trp.positions(rows), [("a", 0, 1.0, "c"), ("a", 1, 2.0, "i"), ("b", 0, 3.0, "c"),
                                               ("a", 0, 4.0, "c"), ("a", 0, 5.0, "c"), ("a", 1, 6.0, "i")])

    def test_previous_names_what_ran_in_the_call_before(self):
        rows = [(1, "default", 1.0, "d"), (2, "tree/simple/nc2", 2.0, "c"), (3, "tree/simple/nc2", 3.0, "i"),
                (4, "tree/simple/nc1", 4.0, "c"), (5, "ring/ll/nc1", 5.0, "c"), (7, "ring/ll/nc1", 6.0, "c"),
                (8, "default", 7.0, "d")]
        self.assertEqual(trp.previous(rows), [
            ("default", "untimed", 1.0, "d"), ("tree/simple/nc2", "default", 2.0, "c"),
            ("tree/simple/nc2", "itself", 3.0, "i"), ("tree/simple/nc1", "same subspace", 4.0, "c"),
            ("ring/ll/nc1", "other subspace", 5.0, "c"), ("ring/ll/nc1", "untimed", 6.0, "c"),
            ("default", "other subspace", 7.0, "d")])

    def test_ratios_by_position_pooled_over_runs(self):
        tree = config("tree", "simple", 2)
        res = [oracle_result("allreduce", 65536, [(tree, 100.0)], 200.0)]
        # Run 1: tree after the default (position 0) reads 130, then 120 and 110 in a row; a monitoring call and a
        # config the oracle did not confirm are left out; the default reads its oracle time.
        a = self.write_run("r-1", res, [(W, 1, "default", 200, "default"), (W, 2, "tree/simple/nc2", 130, "candidate"),
                                        (W, 3, "tree/simple/nc2", 120, "incumbent"),
                                        (W, 4, "tree/simple/nc2", 110, "incumbent"),
                                        (W, 5, "tree/simple/nc2", 500, "monitor"),
                                        (W, 6, "ring/ll/nc1", 90, "candidate")])
        # Run 2 (oracle 100 again): tree at position 0 reads 150, and 105 at position 1.
        b = self.write_run("r-2", res, [(W, 1, "tree/simple/nc2", 150, "candidate"),
                                        (W, 2, "tree/simple/nc2", 105, "candidate")])
        rc, out = run_main(trp, [a, b, "--max-position", "2"])
        self.assertEqual(rc, 0)
        self.assertIn("2 runs;", out)
        # position 0: 1.3 and 1.5 -> 1.4; position 1: 1.2 and 1.05 -> 1.125; position 2 (2+ pooled): 1.1.
        self.assertIn("allreduce          65536 tree/simple/nc2    p0 1.400/2 p1 1.125/2 p2 1.100/1", out)
        self.assertIn("allreduce          65536 default            p0 1.000/1", out)
        self.assertNotIn("ring/ll/nc1", out)
        rc, out = run_main(trp, [a, b, "--config", "tree"])
        self.assertNotIn("default ", out)
        # By role: candidates 1.3, 1.5, 1.05 -> 1.3; the incumbent's 1.2 and 1.1 -> 1.15.
        rc, out = run_main(trp, [a, b, "--by-role", "--config", "tree"])
        self.assertEqual(rc, 0)
        self.assertIn("2 runs; per role", out)
        self.assertIn("tree/simple/nc2    candidate 1.300/3 incumbent 1.150/2", out)
        # Over 1.25 x the oracle's: at position 0, 1.3 and 1.5 (2 of 2); at 1+, none of 1.2, 1.05, 1.1. The default
        # (1.0 at position 0) is not counted; by role: 2 of the 3 candidates, none of the incumbent's 2.
        rc, out = run_main(trp, [a, b, "--max-position", "1", "--tail", "1.25"])
        self.assertIn("share over 1.25 x the oracle's time, every config shown but NCCL's default: p0 1.000/2 "
                      "p1 0.000/3\n", out)
        # By what ran before: run 1's 1.3 after the default, 1.2 and 1.1 after itself; run 2's 1.5 after nothing timed,
        # 1.05 after itself.
        rc, out = run_main(trp, [a, b, "--by-previous", "--config", "tree", "--tail", "1.25"])
        self.assertIn("2 runs; per what ran in the call before", out)
        self.assertIn("tree/simple/nc2    default 1.300/1 itself 1.100/3 untimed 1.500/1", out)
        self.assertIn("share over 1.25 x the oracle's time, every config shown but NCCL's default: default 1.000/1 "
                      "itself 0.000/3 untimed 1.000/1\n", out)
        rc, out = run_main(trp, [a, b, "--by-role", "--tail", "1.25"])
        self.assertIn("share over 1.25 x the oracle's time, every config shown but NCCL's default: candidate 0.667/3 "
                      "incumbent 0.000/2\n", out)

    def test_a_candidate_without_round_time_reads_its_screening_time(self):
        # The oracle screened ring/ll/nc1 (80 us) without timing it in rounds: its samples read against the screen.
        res = [oracle_result("allreduce", 65536, [(config("tree", "simple", 2), 100.0)], 200.0)]
        res[0]["oracle_candidates"].append({"config": config("ring", "ll", 1), "screen_us": 80.0})
        a = self.write_run("r-1", res, [(W, 1, "ring/ll/nc1", 100, "candidate"),
                                        (W, 2, "ring/ll/nc1", 96, "incumbent")])
        rc, out = run_main(trp, [a])
        self.assertEqual(rc, 0)
        self.assertIn("allreduce          65536 ring/ll/nc1        p0 1.250/1 p1 1.200/1", out)
        self.assertEqual(trp.oracle_times(res[0]), {"tree/simple/nc2": 100.0, "ring/ll/nc1": 80.0, "default": 200.0})

    def test_a_run_without_exactly_one_trace_is_skipped(self):
        res = [oracle_result("allreduce", 65536, [(config("tree", "simple", 2), 100.0)], 200.0)]
        lone = self.write_run("lone", [], [])
        os.remove(os.path.join(self.dir.name, "trace-lone-123.csv"))
        rc, out, err = run_main_stderr(trp, [lone])
        self.assertEqual(rc, 1)
        self.assertIn("lone.json: 0 traces match, skipped", err)
        self.assertIn("no samples of a config the oracle confirmed", out)
        # Two traces beside one run: which one is its own cannot be told, so neither is read.
        twice = write_run_and_trace(self.dir.name, "twice", res, [(W, 1, "tree/simple/nc2", 110, "candidate")], 4,
                                    pid=1)
        write_run_and_trace(self.dir.name, "twice", res, [(W, 1, "tree/simple/nc2", 150, "candidate")], 4, pid=2)
        rc, out, err = run_main_stderr(trp, [twice])
        self.assertEqual(rc, 1)
        self.assertIn("twice.json: 2 traces match, skipped", err)
        self.assertNotIn("tree/simple/nc2", out)

if __name__ == "__main__":
    unittest.main()
