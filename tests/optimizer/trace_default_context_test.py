"""Unit tests of bench/trace_default_context.py: NCCL's default's timings in a search trace by what ran before
them, and every config's by its phase in a loop of P calls. Standard-library Python only; exit 77 (skipped under
CTest) when the script cannot be imported."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import TempDirCase, import_script, run_main  # noqa: E402  (also puts bench/ on the path)

ctx = import_script("trace_default_context")

HEADER = "comm,workload,call,unit,config,us,role\n"


def line(unit, config, us, workload="allgather/float32/1048576", comm="0x1"):
    return f"{comm},{workload},{unit},{unit},{config},{us},role\n"


class DefaultContext(TempDirCase):
    def write(self, rows):
        path = os.path.join(self.dir.name, "trace.csv")
        with open(path, "w") as f:
            f.write(HEADER + "".join(rows))
        return path

    def test_groups_by_gap_and_previous_subspace(self):
        # Six defaults: four at 10 (gap 3+ after the default), one at 12 two units after ring/LL (one untimed
        # call between), one at 15 right after ring/LL128. Median 10.
        rows = [line(10 * k, "default", 10) for k in range(1, 5)]
        rows += [line(100, "ring/ll/nc8", 7), line(102, "default", 12)]
        rows += [line(200, "ring/ll128/nc24", 7), line(201, "default", 15)]
        g = ctx.groups([self.write(rows)], 5)
        self.assertEqual(g[("allgather", "3+", "default")], [1.0, 1.0, 1.0])
        self.assertEqual(g[("allgather", "2", "ring/ll")], [1.2])
        self.assertEqual(g[("allgather", "1", "ring/ll128")], [1.5])
        # The first default has no call before it; the workload needs --min-defaults defaults.
        self.assertEqual(sum(len(v) for v in g.values()), 5)
        self.assertEqual(ctx.groups([self.write(rows)], 7), {})

    def test_workloads_and_communicators_apart(self):
        rows = [line(u, "default", 10) for u in range(1, 6)]
        rows += [line(6, "ring/ll/nc8", 7, comm="0x2")] + [line(u, "default", 10, comm="0x2") for u in range(7, 12)]
        g = ctx.groups([self.write(rows)], 5)
        # On 0x2 the first default follows its own ring/LL call; 0x1's calls are not its predecessors.
        self.assertEqual(g[("allgather", "1", "ring/ll")], [1.0])
        self.assertEqual(len(g[("allgather", "1", "default")]), 8)

    def test_phase_of_a_loop(self):
        # Calls 1..32 of one config: every 8th (units 8, 16, 24, 32) reads 2x.
        rows = [line(u, "ring/ll/nc8", 20 if u % 8 == 0 else 10) for u in range(1, 33)]
        p = ctx.phases([self.write(rows)], 5, 8)
        self.assertEqual(p[("phase", "config")], [2.0] * 4)
        self.assertEqual(p[("other", "config")], [1.0] * 28)
        rc, out = run_main(ctx, [self.write(rows), "--period", "8"])
        self.assertEqual(rc, 0)
        self.assertIn("period 8, config on the slowest phase: n 4, geomean 2.000, p75 2.000", out)

    def test_quantile_is_trace_quantiles_nearest_rank(self):
        self.assertEqual(ctx.quantile([1, 2, 3, 4], 0.75), 3)
        self.assertEqual(ctx.quantile([1, 2, 3, 4], 0.5), 2)
        self.assertEqual(ctx.quantile([5], 0.75), 5)


if __name__ == "__main__":
    unittest.main()
