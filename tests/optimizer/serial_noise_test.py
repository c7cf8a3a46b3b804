"""Unit tests of bench/serial_noise.py: the serial correlation of consecutive calls in a samples file.
Standard-library Python only; exit 77 (skipped under CTest) when the script cannot be imported."""
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_script_testing import import_script, run_main  # noqa: E402  (also puts bench/ on the path)

serial_noise = import_script("serial_noise")


class SerialNoise(unittest.TestCase):
    def test_a_ramp_and_an_alternation(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.samples")
            with open(path, "w") as f:
                f.write("# collective bytes config round pos seq min_us max_us ran\n")
                # A ramp: log(max) = 0.01 k, k = 0..11. Deviations k - 5.5 (x 0.01): lag-1 sum
                # (k-5.5)(k-4.5) = (k-5)^2 - 1/4 over k = 0..10 is 110 - 2.75 = 107.25, sum of squares 143: 0.75.
                # Halves 0..5 and 6..11 differ by 0.06, each half's variance 3.5e-4: 0.0036 / (3.5e-4 * 2/6) = 30.86.
                for k in range(12):
                    f.write(f"all_reduce 1024 default 0 0 {k} 1.0 {math.exp(0.01 * k)!r} ring/ll/nc1\n")
                # A block of another length is left out.
                for k in range(5):
                    f.write(f"all_reduce 1024 default 0 1 {k} 1.0 2.0 ring/ll/nc1\n")
            _, out = run_main(serial_noise, [path])
            self.assertIn("1 blocks of 12; lag-1 autocorrelation +0.75; two 6-call means differ 30.86x", out)
            self.assertIn("(standard error x5.55)", out)

            with open(path, "w") as f:
                # Alternating 1, e^0.1: deviations +-0.05, lag-1 sum -11 x 0.0025 over 12 x 0.0025 = -0.92;
                # both halves have mean 0.05: a difference of 0 against independent calls.
                for k in range(12):
                    f.write(f"all_gather 1024 default 0 0 {k} 1.0 {math.exp(0.1 * (k % 2))!r} ring/ll/nc1\n")
            _, out = run_main(serial_noise, [path])
            self.assertIn("lag-1 autocorrelation -0.92; two 6-call means differ 0.00x", out)


if __name__ == "__main__":
    unittest.main()
