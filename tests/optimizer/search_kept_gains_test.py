"""Unit tests of bench/search_kept_gains.py: the searches that kept NCCL's default while an arm read faster.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import TempDirCase, import_script, run_main, run_main_stderr  # noqa: E402

kg = import_script("search_kept_gains")


def closing(workload, arms, incumbent, asked, budget, extra=""):
    """A leader's closing line of one search, as ccltune logs it at CCLTUNE_DEBUG=INFO (OPT)."""
    rel = " ".join(arms)
    return (f"vm:1:1 [0] ccltune INFO search of {workload} [1..2 B] done: done, {len(arms)} arms, 20 samples "
            f"({asked} asked of {budget}, 2 lost, 0 pending), relative to default: {rel}; noise 0.040; {extra}"
            f"incumbent {incumbent} 100.00 us (converged) (calls timed from an idle stream, not sampled: 3)\n")


class KeptGains(TempDirCase):
    def write(self, name, lines):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write("== cost: 2026-12-03T00:00:00Z\nsome other line\n")
            f.writelines(lines)
        return path

    def test_counts_kept_defaults_with_a_faster_arm(self):
        a = self.write("run-a.txt", [
            # Kept with ring/simple/nc1 at 0.888 on 7 samples, 15 of 33 entries asked: listed, before the budget.
            closing("reducescatter/float32/sum/262144", ["ring/simple/nc1=0.888/7", "*default=1.000/8",
                                                          "tree/simple/nc2=1.300/1"], "default", 15, 33),
            # Kept with the best arm at 0.960: not under the bar.
            closing("allgather/float32/262144", ["ring/simple/nc1=0.960/5", "*default=1.000/9"], "default", 20, 33),
            # Converged on a config: not a kept default.
            closing("allreduce/float32/sum/65536", ["tree/simple/nc2=0.765/8", "*default=1.000/3"],
                    "tree/simple/nc2", 17, 39),
        ])
        b = self.write("run-b.txt", [
            # An older line with a field between noise and incumbent; kept at the budget (35 of 33).
            closing("allgather/float32/1048576", ["*default=1.000/12", "ring/simple/nc1=0.941/19"], "default",
                    35, 33, extra="switch 1.000; "),
            # The faster arm has one sample only.
            closing("allreduce/float32/sum/4194304", ["ring/ll/nc1=0.700/1", "*default=1.000/10",
                                                       "ring/simple/nc1=0.990/6"], "default", 12, 39),
        ])
        rc, out = run_main(kg, [a, b])
        self.assertEqual(rc, 0, out)
        self.assertIn("run-a.txt reducescatter/float32/sum/262144: ring/simple/nc1=0.888/7 asked 15 of 33\n", out)
        self.assertIn("run-b.txt allgather/float32/1048576: ring/simple/nc1=0.941/19 asked 35 of 33\n", out)
        self.assertIn("run-b.txt allreduce/float32/sum/4194304: ring/ll/nc1=0.700/1 asked 12 of 39\n", out)
        self.assertNotIn("allgather/float32/262144", out)
        self.assertIn("5 searches, 4 kept the default; 3 of those with an arm under 0.95 (at least 1 samples), "
                      "2 before the budget was spent", out)
        # At least two samples: the one-sample arm no longer counts; ring/simple/nc1 at 0.990 is the best left.
        rc, out = run_main(kg, [a, b, "--min-samples", "2"])
        self.assertEqual(rc, 0, out)
        self.assertNotIn("allreduce/float32/sum/4194304", out)
        self.assertIn("2 of those with an arm under 0.95 (at least 2 samples), 1 before the budget", out)
        # A looser bar takes in the 0.960 arm.
        rc, out = run_main(kg, [a, "--bar", "0.97"])
        self.assertIn("run-a.txt allgather/float32/262144: ring/simple/nc1=0.960/5 asked 20 of 33\n", out)

    def test_parse_line_reads_the_fields(self):
        s = kg.parse_line(closing("allreduce/float32/sum/65536", ["tree/simple/nc2=0.765/8", "*default=1.000/3"],
                                  "tree/simple/nc2", 17, 39))
        self.assertEqual(s["workload"], "allreduce/float32/sum/65536")
        self.assertEqual((s["asked"], s["budget"], s["incumbent"]), (17, 39, "tree/simple/nc2"))
        self.assertEqual(s["arms"], [("tree/simple/nc2", 0.765, 8), ("default", 1.0, 3)])
        self.assertIsNone(kg.parse_line("ccltune INFO search of x started\n"))

    def test_no_closing_line_exits_1(self):
        path = self.write("empty.txt", [])
        rc, out, err = run_main_stderr(kg, [path])
        self.assertEqual(rc, 1)
        self.assertIn("no closing search line read", err)

    def test_a_closing_line_in_another_form_is_said_not_passed_over(self):
        odd = "vm:1:1 [0] ccltune INFO search of allgather/float32/262144 [1..2 B] done: done, in a new form\n"
        path = self.write("odd.txt", [odd, closing("allgather/float32/65536", ["ring/ll/nc1=0.900/4",
                                                                            "*default=1.000/5"], "default", 9, 33)])
        rc, out, err = run_main_stderr(kg, [path])
        self.assertEqual(rc, 0)
        self.assertIn("1 searches, 1 kept the default; 1 of those", out)
        self.assertIn("1 closing search lines not in the expected form, not counted; the first: odd.txt: "
                      + odd.strip(), err)


if __name__ == "__main__":
    unittest.main()
