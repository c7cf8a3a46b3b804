#!/usr/bin/env bash
# ctest driver of the fidelity test: runs the programs on the simulated NCCL through scripts/gpu-fidelity.sh
# (the script used on GPU hosts) and compares the trace with the committed real one.
# Usage: sim_compare.sh OUT_DIR REAL_TRACE ALLOWANCES; NP (ranks, as many as the real trace's),
# PROGRAM, RECORDER, NCCL_LIB_DIR, COMPARE from the environment, and the SIMNCCL_* settings of the simulated
# machine (the one-GPU testbed: SIMNCCL_RANKS_PER_NODE=1, its landscape as SIMNCCL_MODEL_FILE), which
# gpu-fidelity.sh passes to every rank. Exit 77 (ctest: skipped) while REAL_TRACE does not exist.
set -euo pipefail
out="$1" real="$2" allow="$3"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
[ -f "$real" ] || { echo "sim_compare: no recorded trace $real yet: skipped"; exit 77; }
OUT="$out" NP="${NP:-4}" bash "$repo/scripts/gpu-fidelity.sh"
exec "$COMPARE" --real "$real" --sim "$out/fidelity.trace" --allow "$allow" --skip-without-real --verbose
