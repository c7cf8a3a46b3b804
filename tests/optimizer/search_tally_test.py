"""Unit tests of bench/search_tally.py: the tally of several compare,oracle runs against issue 12's bars.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import REPO, import_script, run_main, write_results  # noqa: E402  (also puts bench/ on the path)

search_tally = import_script("search_tally")


def row(coll, nbytes, default, tuned, oracle, calls, config=None):
    return {"collective": coll, "bytes": nbytes, "oracle_default_us": default, "tuned_same_comm_us": tuned,
            "tuned_us": tuned * 2, "oracle_us": oracle, "converge_calls": calls,
            "config": config or {"algorithm": "default"}}


def run(argv):
    return run_main(search_tally, argv)


class Tally(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        a = [row("allgather", 1 << 20, 100.0, 80.0, 80.0, 40, {"algorithm": "ring", "protocol": "ll128", "channels": 24}),
             row("allgather", 4 << 20, 100.0, 100.0, 90.0, None),  # never converged: counts as the cap
             row("allreduce", 1 << 20, 100.0, 103.0, 100.0, 20)]   # slower than the default
        b = [row("allgather", 1 << 20, 100.0, 90.0, 81.0, 60),
             row("allgather", 4 << 20, 100.0, 95.0, 95.0, 30),
             row("allreduce", 1 << 20, 100.0, 100.0, 100.0, 10)]
        self.files = write_results(self.dir.name, (("a.json", a), ("b.json", b)))

    def tearDown(self):
        self.dir.cleanup()

    def test_bars_calls_and_rows_past_them(self):
        rc, out = run(self.files + ["--calls-cap", "300"])
        self.assertEqual(rc, 0)
        # Past tuned/oracle 1.05: a's allgather 4 MiB (1.111), b's allgather 1 MiB (1.111); past tuned/default
        # 1.02: a's allreduce (1.03), whose tuned/oracle is 1.03 as well.
        self.assertIn("rows tuned/oracle > 1.05: 2 | rows tuned/default > 1.02: 1", out)
        self.assertIn("worst tuned/oracle 1.111, tuned/default 1.030", out)
        calls = [40, 300, 20, 60, 30, 10]
        self.assertIn("converge calls: mean %.1f, p90 300, max 300" % (sum(calls) / len(calls)), out)
        self.assertIn("a.json allreduce 1048576: default t/o 1.030 t/d 1.030, 20 calls", out)
        self.assertNotIn("b.json allgather 4194304", out)

    def test_pooled_share_is_log_gain_over_log_headroom(self):
        _, out = run(self.files)
        gain = math.log(100 / 80) + math.log(100 / 100) + math.log(100 / 90) + math.log(100 / 95)
        room = math.log(100 / 80) + math.log(100 / 90) + math.log(100 / 81) + math.log(100 / 95)
        self.assertIn("allgather %.3f" % (gain / room), out.split("share of the headroom (pooled rows):")[1])

    def test_uses_the_one_communicator_figure(self):
        # tuned_us (two communicators) is twice tuned_same_comm_us here: only the latter may count.
        _, out = run(self.files)
        self.assertNotIn("t/d 2.", out)

    def test_per_row_counts_each_size_over_the_files(self):
        _, out = run(self.files + ["--per-row", "--calls-cap", "300"])
        rows = out.split("per row (over the files):")[1]
        self.assertIn("allgather 1048576: runs 2, t/o past 1, t/d past 0, calls 50.0", rows)
        self.assertIn("allgather 4194304: runs 2, t/o past 1, t/d past 0, calls 165.0", rows)
        self.assertIn("allreduce 1048576: runs 2, t/o past 0, t/d past 1, calls 15.0", rows)
        _, plain = run(self.files)
        self.assertNotIn("per row", plain)

    def test_model_reads_the_tuned_configs_on_the_tables_times(self):
        # The table's all_gather 1 MiB: ring/ll128/nc24 (a's tuned) is the best; 4 MiB: a's default is 1.10 of
        # ring/simple/nc1, b's tuned; all_reduce 1 MiB: the default is the best and a's default 1.0 of it.
        table = os.path.join(self.dir.name, "t.txt")
        with open(table, "w") as f:
            f.write("# collective config bytes us busbw\n"
                    "all_gather default 1048576 110.0 1\nall_gather a1.p1.nc24 1048576 100.0 1\n"
                    "all_gather default 4194304 110.0 1\nall_gather a1.p2.nc1 4194304 100.0 1\n"
                    "all_reduce default 1048576 100.0 1\nall_reduce a0.p2.nc2 1048576 103.0 1\n")
        b = [row("allgather", 1 << 20, 100.0, 90.0, 81.0, 60, {"algorithm": "tree", "protocol": "simple",
                                                                   "channels": 2}),  # not in the table
             row("allgather", 4 << 20, 100.0, 95.0, 95.0, 30, {"algorithm": "ring", "protocol": "simple",
                                                                   "channels": 1}),
             row("allreduce", 1 << 20, 100.0, 100.0, 100.0, 10, {"algorithm": "tree", "protocol": "simple",
                                                                     "channels": 2})]
        path, = write_results(self.dir.name, [("m.json", b)])
        _, out = run([self.files[0], path, "--model", table])
        self.assertIn("on the table's times (t.txt): rows 5 (1 not in it) | tuned/best > 1.05: 1 | "
                      "tuned/default > 1.02: 1", out)
        self.assertIn("a.json allgather 4194304: default table t/best 1.100 t/d 1.000", out)
        self.assertIn("m.json allreduce 1048576: tree/simple/nc2 table t/best 1.030 t/d 1.030", out)
        self.assertNotIn("table t/best 1.000", out)

    def test_a_file_without_oracle_rows_is_an_error(self):
        no_oracle = [{"collective": "allreduce", "bytes": 1, "tuned_us": 1.0}]
        path, = write_results(self.dir.name, [("empty.json", no_oracle)])
        rc, _ = run([path])
        self.assertEqual(rc, 1)

    def test_committed_gpu_runs(self):
        # Three 4xH100 sweeps of this session's main (docs/results/search-testbed.md quotes these figures).
        d = os.path.join(REPO, "docs", "results", "data", "nvlink4-search")
        files = [os.path.join(d, "h100x4-s6-sweep-main-%d.json" % i) for i in (1, 2, 3)]
        _, out = run(files)
        self.assertIn("files 3, rows 45", out)
        self.assertIn("rows tuned/oracle > 1.05: 6 | rows tuned/default > 1.02: 0", out)
        self.assertIn("converge calls: mean 101.5", out)


if __name__ == "__main__":
    unittest.main()
