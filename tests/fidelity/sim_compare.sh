#!/usr/bin/env bash
# ctest driver of the fidelity test: runs the programs on the simulated NCCL through scripts/gpu-fidelity.sh
# (the script used on GPU hosts) and compares the trace with the committed real one.
# Usage: sim_compare.sh OUT_DIR REAL_TRACE ALLOWANCES; PROGRAM, RECORDER, NCCL_LIB_DIR, COMPARE from the
# environment. Exit 77 (ctest: skipped) while REAL_TRACE does not exist.
set -euo pipefail
out="$1" real="$2" allow="$3"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$out" NP=4 bash "$repo/scripts/gpu-fidelity.sh"
exec "$COMPARE" --real "$real" --sim "$out/fidelity.trace" --allow "$allow" --skip-without-real --verbose
