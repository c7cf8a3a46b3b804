#!/usr/bin/env bash
# The main job. With a GPU: ccltune-bench on the real NCCL, one process per GPU, NCCL default vs
# ccltune vs the exhaustive oracle (scripts/gpu-run.sh). Without a GPU: the same bench on the
# simulated 4-rank cluster (bench/sim.sh). Extra arguments go to ccltune-bench.
set -euo pipefail
cd "$(dirname "$0")"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  exec bash scripts/gpu-run.sh "$@"
fi
bash scripts/install-deps.sh
if [ $# -gt 0 ]; then
  exec bash bench/sim.sh "$@"
fi
# The default sweep, then the acceptance checks on its JSON (docs/results/sim.md).
bash bench/sim.sh --json sim-results.json -c allreduce,allgather,reducescatter -b 256K -e 256M -f 4 --mode compare,oracle
exec python3 bench/check_results.py sim-results.json
