"""Unit tests of bench/trace_over_ranks.py: the search's timings by the slowest rank and by the rank that arrived
last, each against the oracle's rounds read the same way. Standard-library Python only; exit 77 (skipped under
CTest) when the script cannot be imported."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import TempDirCase, config, import_script, run_main, run_main_stderr  # noqa: E402

tor = import_script("trace_over_ranks")

W = "allreduce/float32/sum/65536"
HEADER9 = "comm,workload,call,unit,config,us,role,min_us,max_us\n"


def candidate(c, rounds, rounds_min):
    return {"config": c, "rounds_us": rounds, "rounds_min_us": rounds_min}


class OverRanks(TempDirCase):
    def write(self, stem, candidates, lines, header=HEADER9):
        path = os.path.join(self.dir.name, stem + ".json")
        with open(path, "w") as f:
            json.dump({"meta": {"nranks": 4}, "results": [
                {"collective": "allreduce", "bytes": 65536, "dtype": "float32", "op": "sum",
                 "oracle_candidates": candidates}]}, f)
        with open(os.path.join(self.dir.name, f"trace-{stem}-7.csv"), "w") as f:
            f.write(header + "".join(lines))
        return path

    def test_max_and_min_against_the_oracle_read_the_same_way(self):
        tree, ring = config("tree", "simple", 2), config("ring", "ll", 1)
        cands = [candidate(tree, [100.0, 110.0, 90.0], [95.0, 85.0, 90.0]),
                 candidate(ring, [120.0, 120.0, 120.0], [118.0, 118.0, 118.0]),
                 candidate(config("default"), [200.0], [190.0])]
        # tree: max 130 and 120 (median 125 over 100: 1.25), min 90 and 91.8 (median 90.9 over 90: 1.01), spread
        # 40 and 28.2 (34.1); ring reads its oracle both ways; a monitoring line and an unconfirmed config are left
        # out.
        lines = [f"0x1,{W},1,1,tree/simple/nc2,130,candidate,90,130\n",
                 f"0x1,{W},2,2,tree/simple/nc2,120,incumbent,91.8,120\n",
                 f"0x1,{W},3,3,tree/simple/nc2,900,monitor,1,900\n",
                 f"0x1,{W},4,4,ring/ll/nc1,120,candidate,118,120\n",
                 f"0x1,{W},5,5,ring/ll/nc1,120,candidate,118,120\n",
                 f"0x1,{W},6,6,tree/ll/nc1,10,candidate,10,10\n"]
        a = self.write("r-1", cands, lines)
        rc, out = run_main(tor, [a, "--winners"])
        self.assertEqual(rc, 0)
        self.assertIn("allreduce          65536 tree/simple/nc2        max/oracle 1.250  min/oracle-min 1.010  "
                      "spread   34.1 us  runs 1", out)
        self.assertIn("allreduce          65536 ring/ll/nc1            max/oracle 1.000  min/oracle-min 1.000", out)
        self.assertNotIn("tree/ll/nc1", out)
        self.assertNotIn("default", out.split("\n", 1)[1])
        # By max the search picks ring (120 < 125), by min tree (90.9 < 118); the oracle picks tree both ways.
        self.assertIn("r-1.json allreduce 65536: search by max ring/ll/nc1, by min tree/simple/nc2; "
                      "oracle by max tree/simple/nc2, by min tree/simple/nc2", out)

    def test_by_position_splits_the_first_call_of_a_run_from_the_rest(self):
        tree = config("tree", "simple", 2)
        cands = [candidate(tree, [100.0], [90.0])]
        # Calls 1 and 6 start runs (p0: after nothing timed, after the untimed call 5), 2-3 and 7 follow the same
        # config (p1+); call 4 is another config. p0: max 130 and 150 (1.4), min 80 and 70 (0.833); p1+: max 100, 104 and
        # 102 (1.02), min 90, 92, 91 (1.011).
        lines = [f"0x1,{W},1,1,tree/simple/nc2,130,candidate,80,130\n",
                 f"0x1,{W},2,2,tree/simple/nc2,100,incumbent,90,100\n",
                 f"0x1,{W},3,3,tree/simple/nc2,104,incumbent,92,104\n",
                 f"0x1,{W},4,4,ring/ll/nc1,120,candidate,118,120\n",
                 f"0x1,{W},6,6,tree/simple/nc2,150,candidate,70,150\n",
                 f"0x1,{W},7,7,tree/simple/nc2,102,incumbent,91,102\n"]
        a = self.write("r-1", cands, lines)
        rc, out = run_main(tor, [a, "--by-position", "--winners"])
        self.assertEqual(rc, 0)
        self.assertIn("allreduce          65536 tree/simple/nc2 p0     max/oracle 1.400  min/oracle-min 0.833", out)
        self.assertIn("allreduce          65536 tree/simple/nc2 p1+    max/oracle 1.020  min/oracle-min 1.011", out)
        self.assertNotIn("search by max", out)

    def test_runs_without_the_columns_are_skipped(self):
        cands = [candidate(config("tree", "simple", 2), [100.0], [90.0])]
        old = self.write("old-1", cands, [f"0x1,{W},1,1,tree/simple/nc2,130,candidate\n"],
                         header="comm,workload,call,unit,config,us,role\n")
        rc, out, err = run_main_stderr(tor, [old])
        self.assertEqual(rc, 0)
        self.assertIn("no min_us/max_us columns", err)
        self.assertNotIn("tree/simple/nc2", out)
        no_min = self.write("nomin-1", [{"config": config("tree", "simple", 2), "rounds_us": [100.0]}],
                            [f"0x1,{W},1,1,tree/simple/nc2,130,candidate,90,130\n"])
        rc, out, err = run_main_stderr(tor, [no_min])
        self.assertEqual(rc, 0)
        self.assertIn("no rounds_min_us", err)


if __name__ == "__main__":
    unittest.main()
