#!/usr/bin/env bash
# One rank of the one-GPU testbed (scripts/gpu-testbed.sh): gives this rank a host id of its own, so
# NCCL sees one rank per "node" and connects the ranks through its socket transport, then runs the
# program. The rank comes from the launcher (Open MPI, PMIx, torchrun, Slurm). TESTBED_PRELOAD, when
# set, becomes LD_PRELOAD for the program alone (not for this shell).
set -euo pipefail
rank="${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${LOCAL_RANK:-${RANK:-${SLURM_PROCID:-}}}}}"
if [ -z "$rank" ]; then
  echo "testbed-rank.sh: no rank in the environment (OMPI_COMM_WORLD_RANK, PMIX_RANK, LOCAL_RANK, RANK, SLURM_PROCID)" >&2
  exit 2
fi
export NCCL_HOSTID="ccltune-testbed-host-${rank}"
if [ -n "${TESTBED_PRELOAD:-}" ]; then
  exec env LD_PRELOAD="$TESTBED_PRELOAD" "$@"
fi
exec "$@"
