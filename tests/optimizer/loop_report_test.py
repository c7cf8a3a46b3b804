"""Unit tests of bench/loop_report.py: ccltune-bench --mode loop reports, per file and pooled by name.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main, run_main_stderr  # noqa: E402

loop_report = import_script("loop_report")


def workload(coll, nbytes, settled_at):
    return {"collective": coll, "bytes": nbytes, "settled_at": settled_at}


def loop(settled, workloads, tuning, default_us, tuned_us, repeat=1):
    return {"loop": {"repeat": repeat, "all_settled_at": settled, "workloads": workloads, "tuning_iter_us": tuning,
                     "default_iter_us": default_us, "tuned_iter_us": tuned_us}}


class LoopReport(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        docs = {
            # Settled after 3, all-reduce 64 KiB last; 1.25x faster converged; searching cost 3 x 120 over 3 x 100.
            "new-1.json": loop(3, [workload("allreduce", 65536, 3), workload("allgather", 65536, 2)],
                               [120.0, 120.0, 120.0], 100.0, 80.0),
            # Not all settled (one at 0): the last is the unsettled one; a tuning iteration not timed (-1).
            "new-2.json": loop(0, [workload("allreduce", 65536, 0), workload("allgather", 65536, 5)],
                               [110.0, -1.0], 100.0, 125.0),
            "old-1.json": loop(9, [workload("reducescatter", 1 << 20, 9)], [100.0] * 9, 90.0, 90.0, repeat=4),
            "compare.json": {"results": []},  # no loop section
        }
        self.paths = self.write(docs)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, docs):
        """Each document as a JSON file of its name in the test's directory; the paths by name."""
        paths = {}
        for name, doc in docs.items():
            paths[name] = os.path.join(self.dir.name, name)
            with open(paths[name], "w") as f:
                json.dump(doc, f)
        return paths

    def test_per_file(self):
        rc, out = run_main(loop_report, [self.paths["new-1.json"], self.paths["new-2.json"], self.paths["old-1.json"]])
        self.assertEqual(rc, 0)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3)
        self.assertIn("new-1.json: 1 per iteration, all settled after 3 (last: allreduce 65536 B at 3)", lines[0])
        self.assertIn("default/tuned 1.250; while searching 1.200 x the default's", lines[0])
        self.assertIn("all settled after not all (last: allreduce 65536 B at 0)", lines[1])
        self.assertIn("default/tuned 0.800; while searching 1.100 x", lines[1])
        self.assertIn("old-1.json: 4 per iteration, all settled after 9", lines[2])
        # The window: as many iterations as the shortest loop ran (new-2: 2, one of them untimed).
        self.assertTrue(lines[0].endswith("first 2 iterations 1.200 x"), lines[0])
        self.assertTrue(lines[1].endswith("first 2 iterations 1.100 x"), lines[1])
        self.assertTrue(lines[2].endswith("first 2 iterations 1.111 x"), lines[2])

    def test_window_compares_loops_on_their_first_iterations(self):
        # A loop that settles later averages in cheaper converged iterations: over its own 9 it reads 1.000 of the
        # default, over the first 3 (the other loop's whole search) 1.500, against the other's 1.400.
        written = self.write({"late.json": loop(9, [], [150.0] * 3 + [75.0] * 6, 100.0, 100.0),
                              "early.json": loop(3, [], [140.0] * 3, 100.0, 100.0)})
        paths = [written["late.json"], written["early.json"]]
        rc, out = run_main(loop_report, paths)
        self.assertEqual(rc, 0)
        late, early = out.splitlines()
        self.assertIn("while searching 1.000 x the default's; first 3 iterations 1.500 x", late)
        self.assertIn("while searching 1.400 x the default's; first 3 iterations 1.400 x", early)
        # A window longer than a loop ran reads n/a for it.
        rc, out = run_main(loop_report, ["--window", "5"] + paths)
        late, early = out.splitlines()
        self.assertTrue(late.endswith("first 5 iterations 1.200 x"), late)
        self.assertTrue(early.endswith("first 5 iterations n/a x"), early)

    def test_group_pools_runs_named_alike(self):
        files = [self.paths[n] for n in ("new-1.json", "new-2.json", "old-1.json")]
        rc, out = run_main(loop_report, ["--group"] + files)
        self.assertEqual(rc, 0)
        pooled = [l for l in out.splitlines() if not l.split(":")[0].endswith(".json")]
        # new: 2 runs, 1 settled (3), geomean(1.25, 0.8) = 1, costs geomean(1.2, 1.1).
        self.assertEqual(pooled[0], "new: 2 runs, 1 settled, mean iteration 3.0, geomean default/tuned 1.000, "
                                    "while searching %.3f, first 2 iterations %.3f" % ((1.2 * 1.1) ** 0.5,
                                                                                       (1.2 * 1.1) ** 0.5))
        self.assertEqual(pooled[1], "old: 1 runs, 1 settled, mean iteration 9.0, geomean default/tuned 1.000, "
                                    "while searching 1.111, first 2 iterations 1.111")

    def test_model_prices_the_picks_on_a_table(self):
        table = os.path.join(self.dir.name, "table.txt")
        with open(table, "w") as f:
            f.write("# collective config bytes us busbw\n"
                    "all_reduce default 65536 300 0\nall_reduce a0.p2.nc2 65536 200 0\n"
                    "all_gather default 65536 100 0\nall_gather a6.p2.nc1 65536 50 0\n")
        picked = [dict(workload("allreduce", 65536, 3), config="tree/simple/nc2"),
                  dict(workload("allgather", 65536, 2), config="default"),
                  dict(workload("allgather", 65536, 2), config="ring/simple/nc1"),  # not in the table
                  dict(workload("reducescatter", 65536, 2), config="default")]  # no such row
        other = [dict(workload("allreduce", 65536, 3), config="default"),
                 dict(workload("allgather", 65536, 2), config="pat/simple/nc1")]
        written = self.write({"p-1.json": loop(3, picked, [120.0], 100.0, 80.0),
                              "p-2.json": loop(3, other, [120.0], 100.0, 80.0)})
        rc, out = run_main(loop_report, ["--group", "--model", table, written["p-1.json"], written["p-2.json"]])
        self.assertEqual(rc, 0)
        lines = out.splitlines()
        # (300 + 100) / (200 + 100), two workloads unpriced; (300 + 100) / (300 + 50).
        self.assertEqual(lines[1], "  picks on table.txt: default/tuned 1.333 (2 workloads not in it)")
        self.assertEqual(lines[3], "  picks on table.txt: default/tuned 1.143 (0 workloads not in it)")
        self.assertEqual(lines[5], "  picks on table.txt: geomean default/tuned %.3f" % ((4 / 3 * 8 / 7) ** 0.5))

    def test_a_file_without_a_loop_is_said_and_fails(self):
        rc, out, err = run_main_stderr(loop_report, [self.paths["compare.json"], self.paths["new-1.json"]])
        self.assertEqual(rc, 1)
        self.assertIn("compare.json: no loop section", err)
        self.assertIn("new-1.json:", out)


if __name__ == "__main__":
    unittest.main()
