#!/usr/bin/env bash
# Acceptance on the simulated 4-rank cluster: ccltune-bench (compare + oracle) with ccltune preloaded,
# then bench/check_results.py: per row tuned <= 1.05 x oracle, tuned <= 1.02 x default, converge
# calls <= 300, no mismatch. Usage: bench_acceptance.sh LIBCCLTUNE SIMNCCL_DIR BENCH OUT.json [bench args]
# (SIMNCCL_SEED and SIMNCCL_INTERFERENCE, if set, reach the ranks.)
set -euo pipefail
lib="$1" simdir="$2" bench="$3" out="$4"
shift 4
here="$(cd "$(dirname "$0")" && pwd)"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
mpirun -np 4 --oversubscribe "${root[@]}" -x LD_PRELOAD="$lib" -x LD_LIBRARY_PATH="$simdir:${LD_LIBRARY_PATH:-}" \
  -x SIMNCCL_TIMEOUT_S=120 -x SIMNCCL_SEED="${SIMNCCL_SEED:-1}" -x SIMNCCL_INTERFERENCE="${SIMNCCL_INTERFERENCE:-0}" \
  "$bench" --json "$out" "$@"
python3 "$here/../../bench/check_results.py" "$out"
