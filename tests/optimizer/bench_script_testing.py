"""Shared by the unit tests of the bench/ scripts: run a script's main() with arguments and capture what it
prints; write `ccltune-bench --json`-shaped result files. Standard-library Python only."""
import importlib
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "bench"))


def import_script(name):
    """bench/NAME.py as a module; exit 77 (skipped under CTest) when it cannot be imported."""
    try:
        return importlib.import_module(name)
    except ImportError as e:  # pragma: no cover
        print(f"{name}_test: skipped: {e}")
        sys.exit(77)


def run_main(module, argv):
    """module.main() with sys.argv = [script] + argv: (its return value, what it printed)."""
    out = io.StringIO()
    old = sys.argv
    sys.argv = [module.__name__ + ".py"] + argv
    try:
        with redirect_stdout(out):
            rc = module.main()
    finally:
        sys.argv = old
    return rc, out.getvalue()


def run_main_stderr(module, argv):
    """As run_main, and what it printed on stderr: (its return value, stdout, stderr)."""
    err = io.StringIO()
    with redirect_stderr(err):
        rc, out = run_main(module, argv)
    return rc, out, err.getvalue()


def write_results(directory, runs):
    """One file per (name, rows) of `runs`, {"results": rows} as the bench writes it: the paths, in order."""
    paths = []
    for name, rows in runs:
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            json.dump({"results": rows}, f)
        paths.append(path)
    return paths


def config(algo, proto="", nc=0):
    """A config as the bench's JSON writes it (NCCL's default: algo "default", no protocol or channels)."""
    return {"algorithm": algo, "protocol": proto or "default", "channels": nc, "chunk_bytes": 0}


def oracle_result(coll, size, candidates, default_us, screen_ratio=None):
    """A bench JSON row with the oracle's block times: candidates are (config, us) pairs; with screen_ratio each
    also has the oracle's screening time, us * screen_ratio."""
    rows = []
    for c, us in candidates:
        row = {"config": c}
        if screen_ratio is not None:
            row["screen_us"] = us * screen_ratio
        row["us"] = us
        rows.append(row)
    return {"collective": coll, "bytes": size, "dtype": "float32", "op": "sum" if coll != "allgather" else "none",
            "oracle_default_us": default_us, "oracle_candidates": rows}


TRACE_HEADER = "comm,workload,call,unit,config,us,role\n"


def write_run_and_trace(directory, stem, results, trace_rows, nranks, pid=123):
    """A `--mode compare,oracle` JSON file STEM.json ({"meta": {"nranks"}, "results"}) and the search trace beside it,
    trace-STEM-PID.csv, from (workload, call, config, us, role) rows (the call is also the unit): the JSON's path."""
    path = os.path.join(directory, stem + ".json")
    with open(path, "w") as f:
        json.dump({"meta": {"nranks": nranks}, "results": results}, f)
    with open(os.path.join(directory, f"trace-{stem}-{pid}.csv"), "w") as f:
        f.write(TRACE_HEADER + "".join(f"0x1,{w},{c},{c},{cfg},{us},{role}\n" for w, c, cfg, us, role in trace_rows))
    return path


class TempDirCase(unittest.TestCase):
    """A test case with a temporary directory, self.dir (a tempfile.TemporaryDirectory), removed after each test."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def assert_skipped_without_trace(self, module, json_path, rc):
        """With the traces beside json_path (write_run_and_trace's trace-STEM-*.csv) removed, module.main() on it alone
        exits rc and says on stderr that no trace matches it: its stdout."""
        stem = os.path.basename(json_path)[: -len(".json")]
        for name in os.listdir(os.path.dirname(json_path)):
            if name.startswith("trace-%s-" % stem) and name.endswith(".csv"):
                os.remove(os.path.join(os.path.dirname(json_path), name))
        got, out, err = run_main_stderr(module, [json_path])
        self.assertEqual(got, rc)
        self.assertIn("%s.json: 0 traces match, skipped" % stem, err)
        return out
