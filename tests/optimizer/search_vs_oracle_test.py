"""Unit tests of bench/search_vs_oracle.py: the search's reading of a config relative to NCCL's default against
the oracle's. Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# noqa: E402 below: bench_script_testing also puts bench/ on the path.
from bench_script_testing import TempDirCase, config, import_script, oracle_result, run_main, write_results  # noqa: E402

svo = import_script("search_vs_oracle")


def result(coll, size, candidates, default_us):
    return oracle_result(coll, size, candidates, default_us)


def done(workload, arms):
    """A leader's "done" line as the bench's text holds it."""
    listed = " ".join(f"{c}={r:.3f}/{n}" for c, r, n in arms)
    return (f"vm:1:1 [0] ccltune INFO search of {workload} [1..2 B] done: done, 2 arms, 9 samples (9 asked of 33, "
            f"0 lost, 0 pending), relative to default: {listed}; noise 0.040; incumbent default 10.00 us (converged)\n")


class SearchVsOracle(TempDirCase):
    def write_run(self, stem, results, text, nranks=4):
        path = os.path.join(self.dir.name, stem + ".json")
        with open(path, "w") as f:
            json.dump({"meta": {"nranks": nranks}, "results": results}, f)
        with open(os.path.join(self.dir.name, stem + ".txt"), "w") as f:
            f.write(text)
        return path

    def test_readings_take_each_workloads_last_search(self):
        text = done("allreduce/float32/sum/65536", [("ring/ll/nc1", 0.9, 4), ("*default", 1.0, 8)])
        text += done("allreduce/float32/sum/65536", [("ring/ll/nc1", 0.8, 5)])
        text += done("allgather/float32/16384", [("pat/simple/nc1", 0.5, 7), ("ring/ll/nc2", float("inf"), 1)])
        r = svo.readings(text)
        self.assertEqual(r["allreduce/float32/sum/65536"], {"ring/ll/nc1": (0.8, 5)})
        self.assertEqual(r["allgather/float32/16384"]["pat/simple/nc1"], (0.5, 7))
        self.assertEqual(r["allgather/float32/16384"]["ring/ll/nc2"], (float("inf"), 1))

    def test_pairs_pooled_per_config_and_size(self):
        nc1, nc2 = config("ring", "simple", 1), config("ring", "simple", 2)
        # All-gather 4 MiB on 4 ranks is the leader's allgather/float32/1048576.
        a = self.write_run("r-1", [result("allgather", 4 << 20, [(nc1, 90.0), (nc2, 120.0)], 100.0)],
                           done("allgather/float32/1048576", [("ring/simple/nc1", 0.99, 3), ("*default", 1.0, 9),
                                                              ("ring/simple/nc2", 1.3, 1)]))
        b = self.write_run("r-2", [result("allgather", 4 << 20, [(nc1, 95.0)], 100.0),
                                   result("allreduce", 65536, [(nc1, 5.0)], 10.0)],
                           done("allgather/float32/1048576", [("ring/simple/nc1", 1.045, 4)]))
        self.assertEqual(svo.pairs(a, a[:-5] + ".txt"), [("ring/simple/nc1", 4 << 20, 0.99, 0.9)])
        # nc2 has one sample: below --min-samples unless it is lowered.
        self.assertEqual(len(svo.pairs(a, a[:-5] + ".txt", min_samples=1)), 2)
        rc, out = run_main(svo, [a, b])
        self.assertEqual(rc, 0)
        # Search 0.99 and 1.045 (median 1.0175), oracle 0.9 and 0.95 (0.925), ratios 1.1 and 1.1.
        self.assertIn("4194304 ring/simple/nc1: n 2, search 1.018, oracle 0.925, search/oracle 1.100", out)
        self.assertNotIn("65536", out)  # the all-reduce row's workload was never searched
        rc, out = run_main(svo, [a, b, "--config", "ring/simple/nc2", "--min-samples", "1"])
        self.assertIn("4194304 ring/simple/nc2: n 1, search 1.300, oracle 1.200, search/oracle 1.083", out)
        self.assertNotIn("nc1", out)
        rc, out = run_main(svo, [a, "--min-bytes", str(8 << 20)])
        self.assertEqual(out, "")

    def test_one_collective_of_a_size(self):
        nc1 = config("ring", "simple", 1)
        # All-reduce and all-gather of 1 MiB pool under one size unless --collective keeps one.
        a = self.write_run("r-1", [result("allreduce", 1 << 20, [(nc1, 80.0)], 100.0),
                                   result("allgather", 1 << 20, [(nc1, 90.0)], 100.0)],
                           done("allreduce/float32/sum/1048576", [("ring/simple/nc1", 0.82, 5)]) +
                           done("allgather/float32/262144", [("ring/simple/nc1", 0.95, 5)]))
        self.assertEqual(len(svo.pairs(a, a[:-5] + ".txt")), 2)
        self.assertEqual(svo.pairs(a, a[:-5] + ".txt", collective="allgather"),
                         [("ring/simple/nc1", 1 << 20, 0.95, 0.9)])
        _, out = run_main(svo, [a, "--collective", "allreduce"])
        self.assertIn("1048576 ring/simple/nc1: n 1, search 0.820, oracle 0.800, search/oracle 1.025", out)

    def test_a_run_without_its_text_is_skipped(self):
        rc, out = run_main(svo, write_results(self.dir.name, [("lone.json", [])]))
        self.assertEqual(rc, 0)
        self.assertIn("lone.json: no ", out)


if __name__ == "__main__":
    unittest.main()
