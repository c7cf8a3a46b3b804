"""Unit tests of bench/trace_vs_oracle.py: a search's timings of a config against the oracle's block timing of it.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import (  # noqa: E402  (also puts bench/ on the path)
    TempDirCase, config, import_script, oracle_result, run_main, run_main_stderr, write_run_and_trace)

tvo = import_script("trace_vs_oracle")


def result(coll, size, candidates, default_us):
    return oracle_result(coll, size, candidates, default_us, screen_ratio=0.9)


class TraceVsOracle(TempDirCase):
    def write_run(self, stem, results, trace_rows, nranks=2):
        return write_run_and_trace(self.dir.name, stem, results, trace_rows, nranks)

    def test_workload_names_follow_the_trace(self):
        self.assertEqual(tvo.workload_name(result("allreduce", 65536, [], 1), 4), "allreduce/float32/sum/65536")
        self.assertEqual(tvo.workload_name(result("allgather", 65536, [], 1), 4), "allgather/float32/16384")
        self.assertEqual(tvo.workload_name(result("reducescatter", 65536, [], 1), 2),
                         "reducescatter/float32/sum/32768")
        self.assertEqual(tvo.config_name(config("ring", "ll", 8)), "ring/ll/nc8")
        self.assertEqual(tvo.config_name(config("default")), "default")

    def test_ratios_pooled_per_group_kind_and_size(self):
        w = "reducescatter/float32/sum/131072"
        ring8 = config("ring", "ll", 8)
        rows = [(w, 1, "default", 10, "default"), (w, 2, "default", 11, "default"), (w, 3, "default", 30, "default")]
        rows += [(w, 4, "ring/ll/nc8", 15, "candidate"), (w, 5, "ring/ll/nc8", 16, "incumbent"),
                 (w, 6, "ring/ll/nc8", 100, "monitor")]  # a monitor's timing is not the search's
        rows += [(w, 7, "ring/ll/nc3", 14, "candidate")]  # not among the oracle's: no ratio
        res = [result("reducescatter", 262144, [(ring8, 10.0)], 11.0)]
        a = self.write_run("keep-1", res, rows)
        # The second run of the group: ring/ll/nc8 at the oracle's figure; the oracle has no candidates sampled
        # by the search for the other row.
        b = self.write_run("keep-2", res + [result("allreduce", 65536, [(ring8, 5.0)], 6.0)],
                           [(w, 1, "ring/ll/nc8", 10, "candidate"), (w, 2, "default", 11, "default")])
        rc, out = run_main(tvo, [a, b])
        self.assertEqual(rc, 0)
        # keep-1: default median of 10, 11, 30 = 11 -> 1.0; ring/ll/nc8 median of 15, 16 = 15.5 -> 1.55.
        # keep-2: default 1.0, ring/ll/nc8 1.0. Pooled medians: default 1.0, config of [1.0, 1.55] 1.275.
        self.assertIn("keep default 262144: n 2, median search/oracle 1.000", out)
        self.assertIn("keep config 262144: n 2, median search/oracle 1.275", out)
        self.assertNotIn("65536", out)
        self.assertEqual(tvo.ratios(a, os.path.join(self.dir.name, "trace-keep-1-123.csv")),
                         [("default", 262144, "default", 1.0), ("config", 262144, "ring/ll/nc8", 1.55)])

    def test_a_run_without_its_trace_is_skipped(self):
        path = os.path.join(self.dir.name, "drop-1.json")
        with open(path, "w") as f:
            json.dump({"meta": {"nranks": 2}, "results": []}, f)
        rc, out, err = run_main_stderr(tvo, [path])
        self.assertEqual(rc, 0)
        self.assertIn("drop-1.json: 0 traces match, skipped", err)
        self.assertNotIn("skipped", out)


if __name__ == "__main__":
    unittest.main()
